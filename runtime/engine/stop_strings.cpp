#include "runtime/engine/stop_strings.hpp"

#include <algorithm>
#include <utility>

#include "base/error.hpp"

namespace hive {

StopStringMatcher::StopStringMatcher(std::vector<std::string> stop_strings)
    : stop_strings_(std::move(stop_strings)) {
  for (const std::string& stop : stop_strings_) check(!stop.empty(), "stop strings must not be empty");
}

std::string StopStringMatcher::add(std::string_view chunk) {
  if (stopped_ || chunk.empty()) return {};
  const std::size_t old_size = held_.size();
  held_.append(chunk);
  // A new match ends inside the chunk: it starts at most stop.size() - 1
  // bytes before it (held_ is never longer than the longest stop string).
  std::size_t first = std::string::npos;
  for (const std::string& stop : stop_strings_) {
    const std::size_t from = old_size + 1 > stop.size() ? old_size + 1 - stop.size() : 0;
    const std::size_t at = held_.find(stop, from);
    if (at < first) first = at, matched_ = stop;
  }
  if (first != std::string::npos) {
    stopped_ = true;
    std::string released = held_.substr(0, first);
    held_.clear();
    return released;
  }
  // Hold the longest tail that is a proper prefix of some stop string.
  std::size_t hold = 0;
  for (const std::string& stop : stop_strings_) {
    for (std::size_t len = std::min(stop.size() - 1, held_.size()); len > hold; --len) {
      if (std::string_view(held_).substr(held_.size() - len) ==
          std::string_view(stop).substr(0, len)) {
        hold = len;
        break;
      }
    }
  }
  std::string released = held_.substr(0, held_.size() - hold);
  held_.erase(0, held_.size() - hold);
  return released;
}

std::string StopStringMatcher::finish() {
  if (stopped_) return {};
  return std::exchange(held_, {});
}

}  // namespace hive
