#include "actors/worker_actor.hpp"

#include <algorithm>
#include <chrono>
#include <exception>

#include <caf/sec.hpp>
#include <caf/send.hpp>

#include "base/error.hpp"

namespace hive {

namespace {

void setup_expert_parallel(WorkerState& state, const WorkerSpec& spec) {
  const ModelConfig& c = spec.model->config();
  if (c.num_experts == 0 || !spec.group) return;  // dense: ranks never talk
  state.group = spec.group;
  state.comm = spec.group->communicator(spec.rank);
  state.placement = std::make_unique<ExpertPlacement>(static_cast<int>(c.num_experts),
                                                      spec.group->world_size(), spec.placement);
  state.load.resize(static_cast<size_t>(c.num_layers));
  state.remote.resize(static_cast<size_t>(c.num_layers));
  state.ep = {state.comm.get(), state.placement.get(), &state.load, &state.remote};
  state.runner->set_expert_parallel(&state.ep);
}

// A step's counts, flattened to [layer * num_experts + expert], then zeroed.
std::vector<int64_t> take_counts(const WorkerState& state,
                                 std::vector<std::vector<int64_t>>& per_layer) {
  std::vector<int64_t> flat;
  for (std::vector<int64_t>& layer : per_layer) {
    if (layer.empty()) layer.resize(static_cast<size_t>(state.placement->num_experts()), 0);
    flat.insert(flat.end(), layer.begin(), layer.end());
    std::fill(layer.begin(), layer.end(), 0);
  }
  return flat;
}

WorkerResult run_step(WorkerState& state, const WorkerStep& step) {
  check(!state.fail_next_step, "injected fault at step ", step.step_id);
  // In-process ranks share one read-only Model, so every rank can already
  // read every expert's weights: a new replica needs no copy here (ranks
  // holding only their own experts copy with ReplicaWeights).
  if (state.placement && !step.replicas.empty()) state.placement->set_replicas(step.replicas);
  const auto start = std::chrono::steady_clock::now();
  WorkerResult result;
  result.step_id = step.step_id;
  result.rank = state.rank;
  result.sampled = state.runner->run(step.plan);
  result.compute_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (state.placement) {
    result.expert_load = take_counts(state, state.load);
    result.expert_remote = take_counts(state, state.remote);
  }
  return result;
}

}  // namespace

worker_actor::behavior_type worker(worker_actor::stateful_pointer<WorkerState> self,
                                   WorkerSpec spec) {
  WorkerState& state = self->state;
  state.rank = spec.rank;
  if (spec.scheduler) {
    self->monitor(spec.scheduler);
    self->set_down_handler([self](caf::down_msg& down) { self->quit(down.reason); });
  }
  try {
    Model* model = spec.model.get();
    if (spec.tensor_parallel_size > 1) {
      state.group = spec.group;
      state.comm = spec.group->communicator(spec.rank);
      state.shard = std::make_unique<Model>(spec.model->directory(), spec.model->backend(),
                                            *state.comm, spec.model->load_options());
      model = state.shard.get();
    }
    state.cache =
        std::make_unique<PagedKVCache>(model->backend(), model->config(), spec.num_blocks,
                                       spec.block_size, spec.num_host_blocks, spec.kv_cache_dtype);
    state.runner = std::make_unique<ModelRunner>(*model, *state.cache);
    if (spec.tensor_parallel_size == 1) setup_expert_parallel(state, spec);
  } catch (const std::exception& e) {
    // Its exit reason carries the cause to the scheduler's down handler
    // (CAF's default handler would keep only "runtime_error").
    self->quit(caf::make_error(caf::sec::runtime_error,
                               str_cat("worker rank ", spec.rank, " could not start: ", e.what())));
    return worker_actor::behavior_type::make_empty_behavior();
  }
  // Anonymous (a typed actor sends only to typed handles, and the scheduler's
  // type is not known here), so the worker names itself.
  if (spec.scheduler)
    caf::anon_send(caf::actor_cast<caf::actor>(spec.scheduler), ready_atom_v, self->address());
  // The model outlives the worker: the spec's shared_ptr lives in the behavior.
  return {
      [self, spec](step_atom, const WorkerStep& step) -> caf::result<WorkerResult> {
        try {
          return run_step(self->state, step);
        } catch (const std::exception& e) {
          caf::error err = caf::make_error(
              caf::sec::runtime_error,
              str_cat("worker rank ", spec.rank, " failed in step ", step.step_id, ": ", e.what()));
          // Answer before aborting the group: the scheduler then hears this
          // rank's cause before its released peers' "group aborted" errors.
          auto promise = self->make_response_promise<WorkerResult>();
          promise.deliver(err);
          if (self->state.group) self->state.group->abort();
          self->quit(err);
          return promise;
        }
      },
      [self](fault_atom) { self->state.fail_next_step = true; },
  };
}

}  // namespace hive
