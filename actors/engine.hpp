#pragma once
// hive::Engine: the actor runtime behind one C++ object, for embedding.
//
//   hive::Engine engine(hive::load_hive_config("configs/cpu.yaml"));
//   hive::TokenStream stream = engine.submit(request);      // blocking iterator
//   for (const hive::TokenEvent& event : stream) ...
//   engine.submit(request, [](const hive::TokenEvent& e) { ... });  // callback
//   auto client = engine.connect([](hive::OutputBatch& b) { ... });  // many requests
//   engine.submit(request, client);
//   engine.cancel("id");  engine.metrics();  engine.shutdown();
//
// Inside: a CAF actor system with the scheduler actor, one worker actor per
// rank and the expert actor (scheduler_actor.hpp, worker_actor.hpp,
// expert_actor.hpp). Streams and callbacks receive TokenEvents: new token ids
// of one sample as they are sampled, then one finished event per sample (all
// its ids, the finish reason and, when asked for, the logits; or an error).
// They arrive in one OutputBatch per step and consumer: a stream or callback
// is the consumer of one request, an EngineClient (connect()) of many, so a
// server with one client costs one message per step, not one per token.
// Every request ends: a worker fault fails the requests that ran on its rank
// (the others continue), and a stopped engine ends the rest with an error.
#include <atomic>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "actors/hive_config.hpp"
#include "actors/scheduler_actor.hpp"
#include "runtime/engine/llm_engine.hpp"
#include "runtime/loader/weight_store.hpp"

namespace caf {
class actor_system;
class actor_system_config;
class scoped_actor;
}  // namespace caf

namespace hive {

namespace detail {
struct EngineRuntime;
struct LiveCallbacks;
}  // namespace detail

// The events of one request, in order; next() blocks until one arrives and
// returns nullopt after every sample finished. Destroying a stream whose
// request has not finished cancels the request. A stream may outlive its
// Engine: it keeps the engine's actor system alive, and its request ends with
// the engine's error.
class TokenStream {
 public:
  // Ends with an error event should the scheduler actor stop first.
  // keep_alive: what must outlive the stream's actor (its actor system).
  TokenStream(caf::actor_system& system, const scheduler_actor& scheduler, std::string request_id,
              int num_samples, std::shared_ptr<const void> keep_alive = {});
  TokenStream(TokenStream&&) noexcept;
  ~TokenStream();

  std::optional<TokenEvent> next();
  token_sink sink() const;

  class iterator {
   public:
    using value_type = TokenEvent;
    using difference_type = std::ptrdiff_t;
    iterator() = default;
    explicit iterator(TokenStream* stream) : stream_(stream) { ++*this; }
    const TokenEvent& operator*() const { return *event_; }
    const TokenEvent* operator->() const { return &*event_; }
    iterator& operator++() {
      event_ = stream_->next();
      return *this;
    }
    bool operator==(const iterator& other) const { return !event_ && !other.event_; }

   private:
    TokenStream* stream_ = nullptr;
    std::optional<TokenEvent> event_;
  };
  iterator begin() { return iterator(this); }
  iterator end() { return iterator(); }

 private:
  std::shared_ptr<const void> keep_alive_;  // declared first: destroyed after self_
  std::unique_ptr<caf::scoped_actor> self_;
  scheduler_actor scheduler_;
  std::string request_id_;
  int samples_left_;
  std::deque<TokenEvent> pending_;  // received in one batch, not yet read
};

// A client's consumer: it takes submissions and receives the step's outputs
// of all of them.
using client_actor = token_sink::extend<caf::reacts_to<Submission>>;

// A consumer of many requests (vLLM's output queue per client): each step's
// events of every request submitted through it (Engine::submit(request,
// client)) arrive in one OutputBatch, in one call of its callback on the
// engine's thread, however many requests and tokens the step had. Its
// request ids must differ from each other. Destroying it cancels its
// requests still in flight; it may outlive its Engine.
class EngineClient {
 public:
  EngineClient(EngineClient&&) noexcept;
  EngineClient& operator=(EngineClient&&) = delete;
  ~EngineClient();

 private:
  friend class Engine;
  EngineClient(client_actor actor, std::shared_ptr<const void> keep_alive);

  std::shared_ptr<const void> keep_alive_;  // declared first: destroyed after actor_
  client_actor actor_;
};

enum class ShutdownMode { drain, fail_in_flight };

class Engine {
 public:
  // Resolves its copy of the tree against the model's config.json (see
  // resolve()), then loads the model and starts the actors.
  explicit Engine(const HiveConfig& config);
  ~Engine();  // shutdown(fail_in_flight) unless already shut down

  TokenStream submit(Request request);
  // `on_event` runs on the engine's thread, one event at a time, while the
  // worker computes the next step (between steps without async scheduling):
  // keep it short (copy the event out), or the planning of steps waits, and
  // never call metrics() or shutdown() from it (they wait for that thread);
  // cancel() is fine. If it throws, the request is cancelled and it hears
  // nothing more. A TokenStream instead wakes the reading thread for every
  // event.
  void submit(Request request, std::function<void(const TokenEvent&)> on_event);
  // A client for many requests: `on_batch` gets one OutputBatch per step
  // for all of them, on the engine's thread, under the same rules as a
  // callback's (keep it short; a throw cancels the client's requests).
  EngineClient connect(std::function<void(OutputBatch&)> on_batch);
  // Its events reach the client's callback.
  void submit(Request request, const EngineClient& client);
  void cancel(const std::string& request_id);
  // Ends one sample of a request whose text met a stop string (the output
  // processor found it): it finishes with FinishReason::stop_string, and its
  // KV blocks are freed; the request's other samples go on.
  void stop_sample(const std::string& request_id, int sample_index);
  // Includes the expert actor's load statistics (MoE models).
  EngineMetrics metrics();
  // drain: finish what was submitted; fail_in_flight: fail it with an error.
  // Returns when every callback has run its last event (streams have their
  // last event queued), with the number of requests failed. Later
  // submissions fail at once; a second call waits for the first and returns 0.
  // After the scheduler stopped (each request ended with its cause) it
  // waits for the callbacks and returns 0.
  int64_t shutdown(ShutdownMode mode = ShutdownMode::drain);
  // Testing: the next step of worker `rank` throws.
  void inject_worker_fault(int rank);
  // Testing: the scheduler actor stops, as an exception escaping it would.
  void inject_scheduler_stop();

  const ModelConfig& model_config() const;
  // Why the model runs on another device than the one asked for or found
  // (select_backend's note: "no CUDA device found; using the CPU backend");
  // empty when it runs where it was asked to.
  const std::string& device_note() const { return device_note_; }
  // The most tokens, prompt and output, one request can hold: the context
  // length, or a rank's KV pool when that is smaller.
  int64_t max_sequence_tokens() const { return max_sequence_tokens_; }

 private:
  caf::actor_system& system() const;

  // The backend, the model and the actor system, shared with every
  // TokenStream so that a stream may outlive the Engine.
  std::shared_ptr<detail::EngineRuntime> runtime_;
  std::shared_ptr<detail::LiveCallbacks> callbacks_;  // shutdown() waits for them to end
  expert_actor expert_;
  scheduler_actor scheduler_;
  std::mutex shutdown_mutex_;            // one shutdown at a time; later ones wait
  std::atomic<bool> shut_down_ = false;  // cancel() may run on the engine's thread
  int64_t max_sequence_tokens_ = 0;
  std::string device_note_;
};

}  // namespace hive
