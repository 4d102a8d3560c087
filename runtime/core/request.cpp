#include "runtime/core/request.hpp"

#include <algorithm>

namespace hive {

std::string_view finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::none:
      return "none";
    case FinishReason::length:
      return "length";
    case FinishReason::eos:
      return "eos";
    case FinishReason::stop_token:
      return "stop_token";
    case FinishReason::stop_string:
      return "stop_string";
    case FinishReason::aborted:
      return "aborted";
  }
  return "?";
}

namespace {

bool contains(std::span<const int32_t> ids, int32_t id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

// The earliest position where any stop string starts, or npos.
size_t find_stop_string(std::string_view text, std::span<const std::string> stop_strings) {
  size_t first = std::string_view::npos;
  for (const std::string& stop : stop_strings)
    if (!stop.empty()) first = std::min(first, text.find(stop));
  return first;
}

}  // namespace

FinishReason check_stop(const StopConditions& stop, std::span<const int32_t> eos_token_ids,
                        std::span<const int32_t> output, const Detokenize& detokenize,
                        std::string& text) {
  const int32_t last = output.back();
  FinishReason reason = FinishReason::none;
  if (!stop.ignore_eos && contains(eos_token_ids, last))
    reason = FinishReason::eos;
  else if (contains(stop.stop_token_ids, last))
    reason = FinishReason::stop_token;
  if (reason != FinishReason::none) return reason;  // its text is made when it finishes
  if (detokenize && !stop.stop_strings.empty()) {
    text = detokenize(output);
    const size_t cut = find_stop_string(text, stop.stop_strings);
    if (cut != std::string_view::npos) {
      text.resize(cut);
      return FinishReason::stop_string;
    }
  }
  if (static_cast<int64_t>(output.size()) >= stop.max_tokens) return FinishReason::length;
  return FinishReason::none;
}

size_t stop_safe_length(std::string_view text, std::span<const std::string> stop_strings) {
  size_t safe = text.size();
  for (const std::string& stop : stop_strings) {
    // The longest proper prefix of `stop` that ends the text.
    for (size_t len = std::min(stop.size() - (stop.empty() ? 0 : 1), text.size()); len > 0; --len) {
      if (text.substr(text.size() - len) == std::string_view(stop).substr(0, len)) {
        safe = std::min(safe, text.size() - len);
        break;
      }
    }
  }
  return safe;
}

}  // namespace hive
