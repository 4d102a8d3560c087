#pragma once
// A deterministic actor system (caf/test/dsl.hpp) with the scheduler actor
// over one worker rank on the Qwen3-MoE fixture, a collector actor that
// records the TokenEvents of its OutputBatches, and the offline LLMEngine as
// the reference.
// dsl.hpp's fetch helper reports errors through a FAIL macro it does not define.
#include <caf/test/unit_test.hpp>
#ifndef FAIL
#define FAIL(msg) CAF_FAIL(msg)
#endif
#include <caf/test/dsl.hpp>

#include <caf/event_based_actor.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "actors/scheduler_actor.hpp"
#include "actors/type_ids.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "runtime/engine/llm_engine.hpp"

namespace hive::test {

struct ActorConfig : caf::actor_system_config {
  ActorConfig() { register_message_types(*this); }
};

struct CollectorState {
  std::vector<TokenEvent> events;
  std::vector<int64_t> batch_steps;  // each OutputBatch's step
  static inline const char* name = "collector";
};

// A class-based actor, not a function: CAF 0.17.6 spawns a function given no
// arguments besides `self` through a null std::shared_ptr<std::tuple<>> that
// it still dereferences (`*args_` in caf/detail/init_fun_factory.hpp), binding
// a reference to null, which UBSan's null check reports (later CAF releases
// skip the dereference). Hive's function actors all take an argument.
struct Collector : token_sink::stateful_base<CollectorState> {
  using token_sink::stateful_base<CollectorState>::stateful_base;
  behavior_type make_behavior() override {
    return {[this](OutputBatch& batch) {
      state.batch_steps.push_back(batch.step_id);
      for (TokenEvent& event : batch.events) state.events.push_back(std::move(event));
    }};
  }
};

inline Request make_request(const std::string& id, std::vector<int32_t> prompt,
                            int64_t max_tokens) {
  Request r;
  r.id = id;
  r.prompt_token_ids = std::move(prompt);
  r.stop.max_tokens = max_tokens;
  r.stop.ignore_eos = true;
  return r;
}

inline EngineConfig small_engine_config() {
  EngineConfig config;
  config.block_size = 4;
  config.kv_budget = KVBudget{int64_t{1} << 20, 0.0};
  config.scheduler.max_num_batched_tokens = 16;  // a long prompt runs in chunks
  return config;
}

struct ActorFixture : test_coordinator_fixture<ActorConfig> {
  EngineConfig config;
  CpuBackend cpu;
  std::shared_ptr<Model> model =
      std::make_shared<Model>(std::string(HIVE_TEST_DATA) + "/models/qwen3_moe", cpu);
  scheduler_actor scheduler_hdl;
  token_sink sink = sys.spawn<Collector>();

  explicit ActorFixture(EngineConfig engine_config = small_engine_config())
      : config(engine_config) {
    scheduler_hdl = sys.spawn(scheduler, make_scheduler_setup(model, config, 1));
    run();
  }

  SchedulerState& scheduler_state() {
    return deref<scheduler_actor::stateful_base<SchedulerState>>(scheduler_hdl).state;
  }
  worker_actor worker_hdl() { return scheduler_state().workers.at(0); }
  EngineMetrics metrics() { return request<EngineMetrics>(scheduler_hdl, metrics_atom_v); }
  bool is_prefix(const std::vector<int32_t>& part, const std::vector<int32_t>& whole) {
    return part.size() <= whole.size() && std::equal(part.begin(), part.end(), whole.begin());
  }
  std::vector<TokenEvent>& events() {
    return deref<token_sink::stateful_base<CollectorState>>(sink).state.events;
  }
  // The streamed (unfinished) tokens of one request, in order.
  std::vector<int32_t> streamed(const std::string& id) {
    std::vector<int32_t> tokens;
    for (const TokenEvent& e : events())
      if (e.request_id == id && !e.finished)
        tokens.insert(tokens.end(), e.token_ids.begin(), e.token_ids.end());
    return tokens;
  }
  const TokenEvent* finished_event(const std::string& id) {
    for (const TokenEvent& e : events())
      if (e.request_id == id && e.finished) return &e;
    return nullptr;
  }
  void submit(Request request) {
    self->send(scheduler_hdl, submit_atom_v, Submission{std::move(request), sink});
  }
  // The offline engine's greedy tokens for the same requests.
  std::vector<int32_t> reference(const Request& request) {
    LLMEngine engine(*model, config);
    return engine.generate({request}).at(0).samples.at(0).token_ids;
  }
};

}  // namespace hive::test
