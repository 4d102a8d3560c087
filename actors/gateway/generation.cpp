#include "actors/gateway/generation.hpp"

#include <boost/asio/post.hpp>

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

Generation::Generation(boost::asio::any_io_executor executor, Engine& engine,
                       const Tokenizer& tokenizer, std::vector<ProcessedRequest> requests, int n,
                       Metrics& metrics, Callbacks callbacks)
    : executor_(std::move(executor)),
      engine_(engine),
      requests_(std::move(requests)),
      n_(n),
      metrics_(metrics),
      callbacks_(std::move(callbacks)) {
  for (size_t r = 0; r < requests_.size(); ++r) {
    usage_.prompt_tokens += static_cast<int64_t>(requests_[r].request.prompt_token_ids.size());
    for (int k = 0; k < n_; ++k)
      choices_.push_back(
          {r, k, SampleText(tokenizer, requests_[r].request.prompt_token_ids, requests_[r].text),
           {}, {}, std::nullopt, false});
  }
  results_.resize(choices_.size());
}

void Generation::start() {
  start_ = Clock::now();
  for (const ProcessedRequest& r : requests_) {
    // The engine's thread only copies the event over to the I/O executor.
    engine_.submit(r.request, [self = shared_from_this()](const TokenEvent& event) {
      boost::asio::post(self->executor_, [self, event] { self->handle(event); });
    });
  }
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

void Generation::handle(const TokenEvent& event) noexcept {
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
  num_done_ = choices_.size();
  if (callbacks_.on_failed) callbacks_.on_failed(cause);
}

size_t Generation::request_index(const std::string& request_id) const {
  for (size_t r = 0; r < requests_.size(); ++r)
    if (requests_[r].request.id == request_id) return r;
  fail("gateway: an event for unknown request ", request_id);
}

void Generation::on_event(const TokenEvent& event) {
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
  choice.token_ids.insert(choice.token_ids.end(), event.token_ids.begin(), event.token_ids.end());
  choice.logprobs.insert(choice.logprobs.end(), event.logprobs.begin(), event.logprobs.end());
  const bool was_stopped = choice.text.stopped_by_string();
  for (const int32_t id : event.token_ids) delta.text += choice.text.add(id);
  if (!was_stopped && choice.text.stopped_by_string())
    engine_.stop_sample(event.request_id, event.sample_index);
  if (callbacks_.on_delta) callbacks_.on_delta(delta);
}

void Generation::finish_choice(size_t index, const TokenEvent& event) {
  Choice& choice = choices_[index];
  choice.done = true;
  ++num_done_;
  ChoiceResult& result = results_[index];
  result.index = static_cast<int>(index);
  const std::string rest = choice.text.finish();
  result.text = choice.text.text();
  result.num_tokens = event.sample_index < 0 ? 0 : static_cast<int64_t>(event.token_ids.size());
  result.error = event.error;
  result.token_ids = std::move(choice.token_ids);
  result.logprobs = std::move(choice.logprobs);
  result.finish_reason = choice.text.stopped_by_string() ? "stop" : api_finish_reason(event.reason());
  usage_.completion_tokens += result.num_tokens;
  metrics_.generation_tokens += result.num_tokens;
  if (!rest.empty() && callbacks_.on_delta)
    callbacks_.on_delta({static_cast<int>(index), rest, {}, {}});
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
