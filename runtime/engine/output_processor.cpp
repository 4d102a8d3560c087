#include "runtime/engine/output_processor.hpp"

#include <algorithm>

#include "base/error.hpp"

namespace hive {

SampleText::SampleText(const Tokenizer& tokenizer, std::span<const int32_t> prompt,
                       TextParams params)
    : detokenizer_(tokenizer, params.skip_special_tokens),
      matcher_(std::move(params.stop)),
      stop_token_ids_(std::move(params.stop_token_ids)) {
  detokenizer_.prime(prompt);
}

std::string SampleText::add(int32_t id) {
  if (stopped() || finished_) return {};
  if (std::find(stop_token_ids_.begin(), stop_token_ids_.end(), id) != stop_token_ids_.end()) {
    stopped_by_id_ = true;
    return {};
  }
  return release(matcher_.add(detokenizer_.step(id)));
}

std::string SampleText::finish() {
  if (finished_) return {};
  finished_ = true;
  if (matcher_.stopped()) return {};
  // An unfinished character still held by the detokenizer may complete a
  // stop string; the matcher sees it before its own tail is released.
  std::string released = matcher_.add(detokenizer_.finish());
  released += matcher_.finish();
  return release(std::move(released));
}

std::string SampleText::release(std::string piece) {
  text_ += piece;
  return piece;
}

void OutputProcessor::add_request(const std::string& request_id, int num_samples,
                                  std::span<const int32_t> prompt, const TextParams& params) {
  check(num_samples >= 1, "request ", request_id, ": n must be >= 1 (got ", num_samples, ")");
  check(!has_request(request_id), "request id '", request_id, "' is already in use");
  for (int k = 0; k < num_samples; ++k)
    samples_.emplace(std::pair(request_id, k), SampleText(tokenizer_, prompt, params));
}

OutputProcessor::Delta OutputProcessor::add_token(const std::string& request_id, int sample_index,
                                                  int32_t id) {
  SampleText& text = sample(request_id, sample_index);
  const bool was_stopped = text.stopped_by_string();
  Delta delta;
  delta.text = text.add(id);
  delta.stopped_by_string = !was_stopped && text.stopped_by_string();
  return delta;
}

OutputProcessor::Final OutputProcessor::finish(const std::string& request_id, int sample_index) {
  const auto it = samples_.find(std::pair(request_id, sample_index));
  check(it != samples_.end(), "output processor: no sample ", sample_index, " of request '",
        request_id, "'");
  Final final;
  final.text = it->second.finish();
  final.full_text = it->second.text();
  final.stopped_by_string = it->second.stopped_by_string();
  samples_.erase(it);
  return final;
}

bool OutputProcessor::has_request(const std::string& request_id) const {
  const auto it = samples_.lower_bound(std::pair(request_id, 0));
  return it != samples_.end() && it->first.first == request_id;
}

void OutputProcessor::abort_request(const std::string& request_id) {
  auto it = samples_.lower_bound(std::pair(request_id, 0));
  while (it != samples_.end() && it->first.first == request_id) it = samples_.erase(it);
}

SampleText& OutputProcessor::sample(const std::string& request_id, int sample_index) {
  const auto it = samples_.find(std::pair(request_id, sample_index));
  check(it != samples_.end(), "output processor: no sample ", sample_index, " of request '",
        request_id, "'");
  return it->second;
}

}  // namespace hive
