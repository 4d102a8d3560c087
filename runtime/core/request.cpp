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

}  // namespace

FinishReason check_stop(const StopConditions& stop, std::span<const int32_t> eos_token_ids,
                        std::span<const int32_t> output) {
  const int32_t last = output.back();
  FinishReason reason = FinishReason::none;
  if (!stop.ignore_eos && contains(eos_token_ids, last))
    reason = FinishReason::eos;
  else if (contains(stop.stop_token_ids, last))
    reason = FinishReason::stop_token;
  if (reason != FinishReason::none) return reason;
  if (static_cast<int64_t>(output.size()) >= stop.max_tokens) return FinishReason::length;
  return FinishReason::none;
}

}  // namespace hive
