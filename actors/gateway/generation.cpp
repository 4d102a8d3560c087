#include "actors/gateway/generation.hpp"

namespace hive::gateway {

namespace {

// OpenAI's finish reasons: a stop string, a stop id and the end of sequence
// are all "stop".
std::string api_finish_reason(FinishReason reason) {
  switch (reason) {
    case FinishReason::length:
      return "length";
    case FinishReason::eos:
    case FinishReason::stop_token:
    case FinishReason::stop_string:
      return "stop";
    default:
      return "abort";
  }
}

}  // namespace

Generation::Generation(Engine& engine, EngineOutputs& outputs,
                       std::vector<ProcessedRequest> requests, int n, Metrics& metrics,
                       Callbacks callbacks)
    : engine_(engine),
      outputs_(outputs),
      requests_(std::move(requests)),
      n_(n),
      metrics_(metrics),
      callbacks_(std::move(callbacks)) {
  for (const ProcessedRequest& r : requests_)
    usage_.prompt_tokens += static_cast<int64_t>(r.request.prompt_token_ids.size());
  choices_.resize(requests_.size() * static_cast<size_t>(n_));
  results_.resize(choices_.size());
}

void Generation::start() {
  start_ = Clock::now();
  for (const ProcessedRequest& r : requests_) outputs_.submit(r, shared_from_this());
}

void Generation::cancel() {
  if (cancelled_ || done()) return;
  cancelled_ = true;
  for (size_t r = 0; r < requests_.size(); ++r) {
    bool open = false;
    for (int k = 0; k < n_; ++k) open = open || !choices_[r * static_cast<size_t>(n_) + k].done;
    if (open) engine_.cancel(requests_[r].request.id);
  }
}

void Generation::handle(TokenEvent& event) noexcept {
  if (failed_) return;
  std::string cause;
  try {
    on_event(event);
    return;
  } catch (const std::exception& e) {
    cause = e.what();
  } catch (...) {
    cause = "an exception of unknown type";
  }
  failed_ = true;
  try {
    cancel();
  } catch (...) {
    // The engine is stopping; its requests end there.
  }
  for (const ProcessedRequest& r : requests_) outputs_.forget(r.request.id);
  num_done_ = choices_.size();
  if (callbacks_.on_failed) callbacks_.on_failed(cause);
}

size_t Generation::request_index(const std::string& request_id) const {
  for (size_t r = 0; r < requests_.size(); ++r)
    if (requests_[r].request.id == request_id) return r;
  fail("gateway: an event for unknown request ", request_id);
}

void Generation::on_event(TokenEvent& event) {
  const size_t r = request_index(event.request_id);
  const auto first = r * static_cast<size_t>(n_);
  if (event.sample_index < 0) {  // the whole request failed
    for (int k = 0; k < n_; ++k)
      if (!choices_[first + k].done) finish_choice(first + k, event);
    return;
  }
  const size_t index = first + static_cast<size_t>(event.sample_index);
  Choice& choice = choices_[index];
  if (choice.done) return;
  if (event.finished) return finish_choice(index, event);
  const Clock::time_point now = Clock::now();
  if (!first_token_seen_) {
    first_token_seen_ = true;
    metrics_.time_to_first_token.observe(std::chrono::duration<double>(now - start_).count());
  }
  if (choice.last_token)
    metrics_.inter_token_latency.observe(
        std::chrono::duration<double>(now - *choice.last_token).count());
  choice.last_token = now;
  ChoiceDelta delta{static_cast<int>(index), "", event.token_ids, event.logprobs};
  bool stopped = false;
  for (const int32_t id : event.token_ids) {
    OutputProcessor::Delta text =
        outputs_.text().add_token(event.request_id, event.sample_index, id);
    delta.text += text.text;
    stopped = stopped || text.stopped_by_string;
  }
  if (stopped) engine_.stop_sample(event.request_id, event.sample_index);
  if (callbacks_.on_delta) callbacks_.on_delta(delta);
}

void Generation::finish_choice(size_t index, TokenEvent& event) {
  Choice& choice = choices_[index];
  choice.done = true;
  ++num_done_;
  ChoiceResult& result = results_[index];
  result.index = static_cast<int>(index);
  const size_t request = index / static_cast<size_t>(n_);
  const OutputProcessor::Final text = outputs_.text().finish(
      requests_[request].request.id, static_cast<int>(index % static_cast<size_t>(n_)));
  result.text = text.full_text;
  result.error = event.error;
  if (event.sample_index >= 0) {
    // The engine hands a sample's ids and logprobs over once, as it ends.
    result.num_tokens = static_cast<int64_t>(event.token_ids.size());
    result.token_ids = std::move(event.token_ids);
    result.logprobs = std::move(event.logprobs);
  }
  result.finish_reason = text.stopped_by_string ? "stop" : api_finish_reason(event.reason());
  usage_.completion_tokens += result.num_tokens;
  metrics_.generation_tokens += result.num_tokens;
  if (!text.text.empty() && callbacks_.on_delta)
    callbacks_.on_delta({static_cast<int>(index), text.text, {}, {}});
  if (callbacks_.on_choice_done) callbacks_.on_choice_done(result);
  if (!done()) return;
  metrics_.prompt_tokens += usage_.prompt_tokens;
  metrics_.e2e_request_latency.observe(
      std::chrono::duration<double>(Clock::now() - start_).count());
  for (const ChoiceResult& choice_result : results_)
    ++metrics_.finished_requests[choice_result.finish_reason];
  if (callbacks_.on_done) callbacks_.on_done();
}

}  // namespace hive::gateway
