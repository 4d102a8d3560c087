#pragma once
// One API request in flight: its engine requests (one per prompt, n samples
// each) and the results of its choices (choice index = prompt index * n +
// sample index).
//
// Engine events reach it on the gateway's I/O thread through EngineOutputs
// (engine_outputs.hpp), whose OutputProcessor holds each sample's text; the
// ids and logprobs of a finished choice come with its finished event, so
// they are held once, by the engine, until then. A sample whose text meets a
// stop string is ended in the engine (Engine::stop_sample); a client that
// goes away cancels the rest (cancel()).
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/engine.hpp"
#include "actors/gateway/engine_outputs.hpp"
#include "actors/gateway/metrics.hpp"
#include "runtime/engine/input_processor.hpp"
#include "runtime/engine/output_processor.hpp"

namespace hive::gateway {

struct ChoiceDelta {
  int index = 0;
  std::string text;
  std::vector<int32_t> token_ids;
  std::vector<TokenLogprobs> logprobs;  // one per id, when the request asked
};

struct ChoiceResult {
  int index = 0;
  std::string text;           // the whole text
  std::string finish_reason;  // stop | length | abort
  std::string error;          // non-empty: the sample failed in the engine
  int64_t num_tokens = 0;
  std::vector<int32_t> token_ids;
  std::vector<TokenLogprobs> logprobs;  // one per id, when the request asked
};

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
};

class Generation : public std::enable_shared_from_this<Generation> {
 public:
  struct Callbacks {
    std::function<void(const ChoiceDelta&)> on_delta;  // new text (possibly empty) of a choice
    std::function<void(const ChoiceResult&)> on_choice_done;
    std::function<void()> on_done;  // every choice is done
    // Instead of on_done when handling an event threw (Hive's bug, or a
    // callback's): the request is cancelled in the engine and ends here.
    // Must not throw.
    std::function<void(const std::string& cause)> on_failed;
  };

  Generation(Engine& engine, EngineOutputs& outputs, std::vector<ProcessedRequest> requests, int n,
             Metrics& metrics, Callbacks callbacks);

  // Submits the engine requests; throws hive::Error if the engine refuses.
  void start();
  // The client went away: cancel every engine request not yet finished.
  void cancel();

  bool done() const { return num_done_ == choices_.size(); }
  // The boundary of the engine's events: on_event, and whatever it throws
  // ends this generation through on_failed.
  void handle(TokenEvent& event) noexcept;
  const Usage& usage() const { return usage_; }
  // By choice index.
  const std::vector<ChoiceResult>& results() const { return results_; }

 private:
  using Clock = std::chrono::steady_clock;
  struct Choice {
    std::optional<Clock::time_point> last_token;
    bool done = false;
  };

  void on_event(TokenEvent& event);
  void finish_choice(size_t index, TokenEvent& event);
  size_t request_index(const std::string& request_id) const;

  Engine& engine_;
  EngineOutputs& outputs_;
  std::vector<ProcessedRequest> requests_;
  int n_;
  Metrics& metrics_;
  Callbacks callbacks_;
  std::vector<Choice> choices_;
  std::vector<ChoiceResult> results_;
  size_t num_done_ = 0;
  Usage usage_;
  Clock::time_point start_;
  bool first_token_seen_ = false;
  bool cancelled_ = false;
  bool failed_ = false;
};

}  // namespace hive::gateway
