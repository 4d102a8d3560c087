#include "actors/worker_actor.hpp"

#include <chrono>
#include <exception>

#include <caf/sec.hpp>

#include "kernels/error.hpp"

namespace hive {

namespace {

WorkerResult run_step(WorkerState& state, const WorkerStep& step) {
  check(!state.fail_next_step, "injected fault at step ", step.step_id);
  const StepPlan plan = state.decoder.decode(step);
  const auto start = std::chrono::steady_clock::now();
  WorkerResult result;
  result.step_id = step.step_id;
  result.rank = state.rank;
  result.sampled = state.runner->run(plan);
  result.compute_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (state.rank != 0) result.sampled.clear();
  return result;
}

}  // namespace

worker_actor::behavior_type worker(worker_actor::stateful_pointer<WorkerState> self,
                                   WorkerSpec spec) {
  WorkerState& state = self->state;
  state.rank = spec.rank;
  state.cache =
      std::make_unique<PagedKVCache>(spec.model->backend(), spec.model->config(), spec.num_blocks,
                                     spec.block_size, spec.num_host_blocks);
  state.runner = std::make_unique<ModelRunner>(*spec.model, *state.cache);
  // The model outlives the worker: the spec's shared_ptr lives in the behavior.
  return {
      [self, spec](step_atom, const WorkerStep& step) -> caf::result<WorkerResult> {
        try {
          return run_step(self->state, step);
        } catch (const std::exception& e) {
          caf::error err = caf::make_error(
              caf::sec::runtime_error,
              str_cat("worker rank ", spec.rank, " failed in step ", step.step_id, ": ", e.what()));
          self->quit(err);
          return err;
        }
      },
      [self](fault_atom) { self->state.fail_next_step = true; },
  };
}

}  // namespace hive
