#include "actors/engine.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/sec.hpp>
#include <caf/stateful_actor.hpp>

#include "actors/error_text.hpp"
#ifdef HIVE_HAVE_MPI
#include <caf/io/middleman.hpp>

#include "actors/worker_ranks.hpp"
#include "parallel/mpi_communicator.hpp"
#endif
#include "base/error.hpp"
#include "kernels/backend_select.hpp"
#include "moe/expert_placement.hpp"
#include "runtime/engine/draft_model_drafter.hpp"
#include "runtime/engine/step_cost_probe.hpp"
#include "runtime/model/model_stats.hpp"
#include "runtime/model/tensor_parallel.hpp"

namespace hive {

namespace detail {

struct EngineRuntime {
  // Destroyed bottom up: the actor system (waiting for its actors) before the
  // model and the backend its workers use.
  std::unique_ptr<Backend> backend;
  std::shared_ptr<Model> model;
  std::unique_ptr<caf::actor_system_config> config;
  std::unique_ptr<caf::actor_system> system;
};

struct LiveCallbacks {
  std::mutex mutex;
  std::condition_variable ended;
  int count = 0;

  void add() {
    const std::lock_guard lock(mutex);
    ++count;
  }
  void remove() {
    {
      const std::lock_guard lock(mutex);
      --count;
    }
    ended.notify_all();
  }

  // Held by a callback sink's state: counts the sink until the sink ends.
  class Token {
   public:
    explicit Token(std::shared_ptr<LiveCallbacks> live) : live_(std::move(live)) { live_->add(); }
    Token(Token&&) noexcept = default;
    Token& operator=(Token&&) noexcept = default;
    ~Token() {
      if (live_) live_->remove();
    }

   private:
    std::shared_ptr<LiveCallbacks> live_;
  };

  void wait_until_none() {
    std::unique_lock lock(mutex);
    ended.wait(lock, [&] { return count == 0; });
  }
};

}  // namespace detail

namespace {

// The event that ends a request whose scheduler stopped before it finished.
TokenEvent scheduler_stopped(const std::string& request_id, const caf::error& reason) {
  return TokenEvent::finish(request_id, -1, {}, FinishReason::aborted,
                            str_cat("the engine's scheduler stopped: ", error_text(reason)));
}

struct CallbackState {
  // Declared first, destroyed last: shutdown() returns only after the
  // callback (and what it captured) is gone.
  std::optional<detail::LiveCallbacks::Token> live;
  std::function<void(const TokenEvent&)> on_event;
  int samples_left = 1;
  static inline const char* name = "hive.callback_sink";
};

token_sink::behavior_type callback_sink(token_sink::stateful_pointer<CallbackState> self,
                                        std::function<void(const TokenEvent&)> on_event,
                                        scheduler_actor scheduler, std::string request_id,
                                        int samples, detail::LiveCallbacks::Token live) {
  self->state.on_event = std::move(on_event);
  self->state.samples_left = samples;
  self->state.live.emplace(std::move(live));
  self->monitor(scheduler);
  // Ends the sink. The monitor must go: the scheduler keeps every monitor
  // until it ends, and a sink per request would pile up.
  const auto end = [self, scheduler] {
    self->demonitor(scheduler.address());
    self->quit();
  };
  // Runs the callback; one that throws cancels its request and hears no more.
  const auto deliver = [self, scheduler, request_id, end](const TokenEvent& event) {
    try {
      self->state.on_event(event);
      return true;
    } catch (const std::exception& e) {
      std::fprintf(stderr,
                   "hive: the callback of request '%s' threw (%s); the request is cancelled\n",
                   request_id.c_str(), e.what());
    } catch (...) {
      std::fprintf(stderr, "hive: the callback of request '%s' threw; the request is cancelled\n",
                   request_id.c_str());
    }
    self->send(scheduler, cancel_atom_v, request_id, token_sink{self});
    end();
    return false;
  };
  self->set_down_handler([request_id, deliver, end](caf::down_msg& down) {
    if (deliver(scheduler_stopped(request_id, down.reason))) end();
  });
  return {[self, deliver, end](const OutputBatch& batch) {
    for (const TokenEvent& event : batch.events) {
      if (!deliver(event)) return;
      if (event.finished && (event.sample_index < 0 || --self->state.samples_left == 0))
        return end();
    }
  }};
}

struct ClientState {
  std::function<void(OutputBatch&)> on_batch;
  std::shared_ptr<detail::LiveCallbacks> live;
  std::map<std::string, int> samples_left;  // the client's requests in flight
  // Why the scheduler stopped, once it did: requests submitted after that
  // end at once with it (a message to the dead scheduler would be dropped).
  std::optional<caf::error> stopped;
  ClientState() = default;
  ClientState(const ClientState&) = delete;
  ClientState& operator=(const ClientState&) = delete;
  // What the client still waited for will never reach it: shutdown() must
  // not wait for it either.
  ~ClientState() {
    if (live)
      for (size_t i = 0; i < samples_left.size(); ++i) live->remove();
  }
  static inline const char* name = "hive.engine_client";
};

// One consumer for many requests: a step's outputs of all of them arrive
// in one OutputBatch and go to on_batch in one call.
client_actor::behavior_type engine_client(client_actor::stateful_pointer<ClientState> self,
                                          std::function<void(OutputBatch&)> on_batch,
                                          scheduler_actor scheduler,
                                          std::shared_ptr<detail::LiveCallbacks> live) {
  self->state.on_batch = std::move(on_batch);
  self->state.live = std::move(live);
  self->monitor(scheduler);
  // Runs the callback, then lets shutdown() return for the requests it ended.
  const auto deliver = [self, scheduler](OutputBatch& batch) {
    std::vector<std::string> ended;
    for (const TokenEvent& event : batch.events) {
      const auto it = self->state.samples_left.find(event.request_id);
      if (it == self->state.samples_left.end() || !event.finished) continue;
      if (event.sample_index < 0 || --it->second == 0) {
        ended.push_back(it->first);
        self->state.samples_left.erase(it);
      }
    }
    try {
      self->state.on_batch(batch);
    } catch (const std::exception& e) {
      // Its requests can no longer be told apart from those it handled:
      // every one in flight ends, as a throwing per-request callback's does.
      std::fprintf(stderr,
                   "hive: an engine client's callback threw (%s); its requests are cancelled\n",
                   e.what());
      for (const auto& [id, samples] : self->state.samples_left)
        self->send(scheduler, cancel_atom_v, id, caf::actor_cast<token_sink>(self));
    }
    for (size_t i = 0; i < ended.size(); ++i) self->state.live->remove();
  };
  self->set_down_handler([self, deliver](caf::down_msg& down) {
    OutputBatch batch;
    for (const auto& [id, samples] : self->state.samples_left)
      batch.events.push_back(scheduler_stopped(id, down.reason));
    deliver(batch);
    self->state.stopped = down.reason;
  });
  // The client's owner went away: nobody reads the rest.
  self->set_exit_handler([self, scheduler](caf::exit_msg& msg) {
    for (const auto& [id, samples] : self->state.samples_left)
      self->send(scheduler, cancel_atom_v, id, caf::actor_cast<token_sink>(self));
    self->demonitor(scheduler.address());
    self->quit(msg.reason);
  });
  return {
      [self, scheduler, deliver](Submission& submission) {
        const std::string& id = submission.request.id;
        if (self->state.stopped) {
          self->state.samples_left[id] = std::max(submission.request.n, 1);
          OutputBatch ended{{scheduler_stopped(id, *self->state.stopped)}};
          deliver(ended);
          return;
        }
        if (self->state.samples_left.count(id) > 0) {
          // Refused here: the scheduler's refusal would also end the request
          // in flight in this client's count.
          OutputBatch refused{
              {TokenEvent::finish(id, -1, {}, FinishReason::aborted,
                                  str_cat("request id '", id, "' is already in use"))}};
          try {
            self->state.on_batch(refused);
          } catch (...) {
            // As for any refusal: the request did not start.
          }
          self->state.live->remove();
          return;
        }
        self->state.samples_left[id] = std::max(submission.request.n, 1);
        submission.sink = caf::actor_cast<token_sink>(self);
        self->send(scheduler, submit_atom_v, std::move(submission));
      },
      [deliver](OutputBatch& batch) { deliver(batch); },
  };
}

}  // namespace

SchedulerSetup make_scheduler_setup(std::shared_ptr<Model> model, const EngineConfig& config,
                                    int world_size, int tensor_parallel_size) {
  std::shared_ptr<Model> draft_model;
  if (config.speculative.method == SpeculativeMethod::draft_model)
    draft_model = std::make_shared<Model>(config.speculative.draft_model, model->backend(),
                                          model->load_options());
  const EngineCoreConfig core =
      engine_core_config(*model, config, world_size, tensor_parallel_size, draft_model.get());
  const ModelConfig& c = model->config();
  SchedulerSetup setup;
  setup.core = core;
  const KVCacheConfig& kv = setup.core.kv_cache;
  if (draft_model) {
    setup.draft_model = draft_model;
    for (int rank = 0; rank < core.num_ranks; ++rank)
      setup.drafters.push_back(std::make_shared<DraftModelDrafter>(
          *setup.draft_model,
          DraftModelConfig{core.kv_cache.block_size, core.kv_cache.num_device_blocks,
                           config.kv_cache_dtype},
          c.vocab_size));
  }
  if (core.speculative.enabled() && core.speculative.adaptive)
    setup.core.spec_cost =
        measure_spec_cost(*model, setup.draft_model.get(), config.kv_cache_dtype);
  setup.num_experts = static_cast<int>(c.num_experts);
  setup.num_layers = static_cast<int>(c.num_layers);
  setup.detached_workers = world_size > 1;
  setup.tensor_parallel_size = tensor_parallel_size;
  for (int rank = 0; rank < world_size; ++rank)
    setup.workers.push_back({model, kv.num_device_blocks, kv.block_size, kv.num_host_blocks, rank,
                             nullptr, PlacementKind::contiguous,  // group, placement, scheduler:
                             tensor_parallel_size, caf::actor_addr{},  // set at spawn
                             config.kv_cache_dtype});
  // Checked here, in the caller's thread: the scheduler actor builds its
  // KV manager and Scheduler from these, and an error there would only kill
  // the actor.
  validate(setup.core.kv_cache);
  validate(setup.core.scheduler);
  return setup;
}

TokenStream::TokenStream(caf::actor_system& system, const scheduler_actor& scheduler,
                         std::string request_id, int num_samples,
                         std::shared_ptr<const void> keep_alive)
    : keep_alive_(std::move(keep_alive)),
      self_(std::make_unique<caf::scoped_actor>(system)),
      scheduler_(scheduler),
      request_id_(std::move(request_id)),
      samples_left_(std::max(num_samples, 1)) {  // n < 1 still gets its error event
  (*self_)->monitor(scheduler);
}

TokenStream::TokenStream(TokenStream&&) noexcept = default;

TokenStream::~TokenStream() {
  if (!self_) return;  // moved from
  // Nobody will read the rest: stop computing it.
  if (samples_left_ > 0) caf::anon_send(scheduler_, cancel_atom_v, request_id_, sink());
  // The scheduler keeps every monitor until it ends (one per request).
  (*self_)->demonitor(scheduler_.address());
}

token_sink TokenStream::sink() const {
  return caf::actor_cast<token_sink>(*self_);
}

std::optional<TokenEvent> TokenStream::next() {
  if (samples_left_ <= 0) return std::nullopt;
  while (pending_.empty())
    (*self_)->receive(
        [&](OutputBatch& batch) {
          for (TokenEvent& e : batch.events) pending_.push_back(std::move(e));
        },
        [&](caf::down_msg& down) {
          pending_.push_back(scheduler_stopped(request_id_, down.reason));
        });
  std::optional<TokenEvent> event = std::move(pending_.front());
  pending_.pop_front();
  if (event->finished && (event->sample_index < 0 || --samples_left_ == 0)) samples_left_ = 0;
  return event;
}

Engine::Engine(const HiveConfig& given)
    : runtime_(std::make_shared<detail::EngineRuntime>()),
      callbacks_(std::make_shared<detail::LiveCallbacks>()) {
  // Resolved from config.json before the weights load: a mistake in the tree
  // fails in a moment, not after minutes of loading.
  HiveConfig config = given;
  resolve(config, load_model_config(config.model));
  const int world_size = config.parallel.world_size;
  const int tensor_parallel_size = config.parallel.tensor_parallel_size;
  detail::EngineRuntime& rt = *runtime_;
  BackendChoice choice = select_backend(config.device, Model::required_ops());
  rt.backend = std::move(choice.backend);
  device_note_ = std::move(choice.note);
  rt.model = std::make_shared<Model>(config.model, *rt.backend, LoadOptions{config.dequantize});
  SchedulerSetup setup =
      make_scheduler_setup(rt.model, config.engine, world_size, tensor_parallel_size);
  max_sequence_tokens_ =
      int64_t{setup.core.kv_cache.num_device_blocks - 1} * setup.core.kv_cache.block_size;
  if (setup.core.scheduler.max_model_len > 0)
    max_sequence_tokens_ = std::min(max_sequence_tokens_, setup.core.scheduler.max_model_len);
  setup.placement = config.parallel.expert_placement;
  rt.config = std::make_unique<caf::actor_system_config>();
  // One scheduler thread, work sharing: the scheduler actor, the expert
  // actor and callback sinks take turns on it. CAF's default work stealing
  // keeps idle threads polling, and a polling thread next to the compute
  // slowed the worker by 30-40 % (docs/benchmarks.md). With async
  // scheduling every worker is detached, on its own thread, and finds its
  // next plan queued when it finishes a step, so it never waits for this
  // thread. Without it, a single-rank engine's worker shares this thread:
  // waking a sleeping thread costs about 8 us to the waker and 30 us to the
  // wakee on the development VM, twice per step when the steps alternate.
  if (setup.core.scheduler.async_scheduling) setup.detached_workers = true;
  rt.config->set("scheduler.policy", caf::atom("sharing"));
  rt.config->set("scheduler.max-threads", size_t{1});
  register_message_types(*rt.config);
  if (config.parallel.transport != RankTransport::in_process) {
#ifdef HIVE_HAVE_MPI
    // Every rank of the job is one process; a fault in one ends the job, so
    // there is one generation and one group, made first so that a process
    // without its GPU (nccl) fails before anything starts.
    const std::shared_ptr<RankGroup> group = make_process_rank_group(config);
    rt.config->load<caf::io::middleman>();
    // The scheduler starts the other ranks' workers through the middleman
    // and waits for each answer, which the middleman's own actors deliver on
    // a scheduler thread: a second thread, so that they are not waiting for
    // the first.
    rt.config->set("scheduler.max-threads", size_t{2});
    rt.system = std::make_unique<caf::actor_system>(*rt.config);
    setup.make_group = [group](int) { return group; };
    setup.spawn_worker = connect_worker_ranks(*rt.system, world_size);
    setup.end_job = [](const std::string& cause) { mpi_abort(cause.c_str()); };
#else
    fail("parallel.transport ", config.parallel.transport == RankTransport::mpi ? "mpi" : "nccl",
         ": this Hive was built without MPI (-DHIVE_MPI=OFF)");
#endif
  } else {
    rt.system = std::make_unique<caf::actor_system>(*rt.config);
  }
  const ModelConfig& c = rt.model->config();
  ExpertSetup expert_setup;
  expert_setup.num_layers = static_cast<int>(c.num_layers);
  expert_setup.num_experts = static_cast<int>(c.num_experts);
  expert_setup.replicate_hot_experts = config.parallel.replicate_hot_experts;
  expert_setup.world_size = world_size;
  expert_setup.placement = setup.placement;
  if (tensor_parallel_size == 1 && world_size > 1)
    expert_setup.rebalance = config.parallel.rebalance_experts;
  expert_ = rt.system->spawn(expert, expert_setup);
  setup.expert = expert_;
  scheduler_ = rt.system->spawn(scheduler, std::move(setup));
}

Engine::~Engine() {
  try {
    shutdown(ShutdownMode::fail_in_flight);
  } catch (const std::exception& e) {
    // The scheduler stopped on its own; its requests already ended with an
    // error. A destructor must not throw.
    std::fprintf(stderr, "hive: engine shutdown: %s\n", e.what());
  }
}

caf::actor_system& Engine::system() const {
  return *runtime_->system;
}

const ModelConfig& Engine::model_config() const {
  return runtime_->model->config();
}

TokenStream Engine::submit(Request request) {
  check(!shut_down_, "submit: the engine is shut down");
  TokenStream stream(system(), scheduler_, request.id, request.n, runtime_);
  caf::anon_send(scheduler_, submit_atom_v, Submission{std::move(request), stream.sink()});
  return stream;
}

void Engine::submit(Request request, std::function<void(const TokenEvent&)> on_event) {
  check(!shut_down_, "submit: the engine is shut down");
  token_sink sink =
      system().spawn(callback_sink, std::move(on_event), scheduler_, request.id,
                     std::max(request.n, 1), detail::LiveCallbacks::Token(callbacks_));
  caf::anon_send(scheduler_, submit_atom_v, Submission{std::move(request), std::move(sink)});
}

EngineClient::EngineClient(client_actor actor, std::shared_ptr<const void> keep_alive)
    : keep_alive_(std::move(keep_alive)), actor_(std::move(actor)) {}

EngineClient::EngineClient(EngineClient&&) noexcept = default;

EngineClient::~EngineClient() {
  if (actor_) caf::anon_send_exit(actor_, caf::exit_reason::user_shutdown);
}

EngineClient Engine::connect(std::function<void(OutputBatch&)> on_batch) {
  check(!shut_down_, "connect: the engine is shut down");
  return EngineClient(system().spawn(engine_client, std::move(on_batch), scheduler_, callbacks_),
                      runtime_);
}

void Engine::submit(Request request, const EngineClient& client) {
  check(!shut_down_, "submit: the engine is shut down");
  check(client.keep_alive_ == runtime_, "submit: the client was connected to another engine");
  callbacks_->add();  // the client ends it with the request's last event
  caf::anon_send(client.actor_, Submission{std::move(request), {}});
}

void Engine::cancel(const std::string& request_id) {
  if (!shut_down_) caf::anon_send(scheduler_, cancel_atom_v, request_id);
}

void Engine::stop_sample(const std::string& request_id, int sample_index) {
  if (!shut_down_) caf::anon_send(scheduler_, cancel_atom_v, request_id, int32_t{sample_index});
}

void Engine::inject_worker_fault(int rank) {
  if (!shut_down_) caf::anon_send(scheduler_, fault_atom_v, rank);
}

void Engine::inject_scheduler_stop() {
  if (!shut_down_) caf::anon_send_exit(scheduler_, caf::exit_reason::kill);
}

namespace {

// A request to an actor of a stopped engine fails with "request receiver
// down": say what that means.
[[noreturn]] void fail_request(const char* what, const caf::error& err) {
  if (err == caf::sec::request_receiver_down) fail(what, ": the engine is shut down");
  fail(what, ": ", error_text(err));
}

}  // namespace

EngineMetrics Engine::metrics() {
  check(!shut_down_, "metrics: the engine is shut down");
  caf::scoped_actor self(system());
  EngineMetrics metrics;
  self->request(scheduler_, caf::infinite, metrics_atom_v)
      .receive([&](EngineMetrics& m) { metrics = std::move(m); },
               [&](caf::error& err) { fail_request("metrics", err); });
  self->request(expert_, caf::infinite, metrics_atom_v)
      .receive(
          [&](ExpertStats& stats) {
            metrics.expert_load = std::move(stats.load);
            metrics.expert_remote = std::move(stats.remote);
            metrics.expert_imbalance = std::move(stats.imbalance);
            // The expert actor's decision; workers adopt it from the next step.
            metrics.replicated_experts = std::move(stats.replicated);
            metrics.expert_replans = stats.replans;
          },
          [&](caf::error& err) { fail_request("metrics", err); });
  return metrics;
}

int64_t Engine::shutdown(ShutdownMode mode) {
  const std::lock_guard lock(shutdown_mutex_);  // a concurrent caller waits for this one
  if (shut_down_) return 0;
  shut_down_ = true;
  int64_t failed = 0;
  {
    caf::scoped_actor self(system());
    self->request(scheduler_, caf::infinite, shutdown_atom_v, mode == ShutdownMode::drain)
        .receive([&](int64_t n) { failed = n; },
                 [&](caf::error& err) {
                   // A scheduler that stopped ended every request already,
                   // each with its cause; what is left is to wait for them.
                   if (err != caf::sec::request_receiver_down) fail_request("shutdown", err);
                 });
    self->send_exit(expert_, caf::exit_reason::user_shutdown);
  }
  // The scheduler sent every request's last event before it answered; the
  // callbacks run them on the engine's thread after that.
  callbacks_->wait_until_none();
  return failed;
}

}  // namespace hive
