#pragma once
// Stop strings on streamed text, in time linear in the output.
//
// Text arrives in chunks. Everything but a tail that could still grow into a
// stop string is released at once; the tail is held back. A stop string can
// only be completed by the newest chunk (an older one would have stopped the
// stream already), so each chunk is searched together with the held tail
// alone, and the tail is shorter than the longest stop string:
//
//   stop "\n\n"   chunks "ab\n" | "\ncd"
//   "ab\n"   -> release "ab", hold "\n"          (a prefix of "\n\n")
//   "\ncd"   -> search "\n\ncd": match at 0 -> stopped, release ""
//
// The stream stops at the chunk that completes a stop string; the stop
// string and what follows are never released (as in vLLM and the OpenAI
// API). When one chunk completes several, the one that starts first wins.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace hive {

class StopStringMatcher {
 public:
  // Empty stop strings are an error (they would match before any text).
  explicit StopStringMatcher(std::vector<std::string> stop_strings);

  // The text that `chunk` makes safe to release. Once a stop string has
  // matched, stopped() is true and later chunks release nothing.
  std::string add(std::string_view chunk);
  // The stream ended without a stop string: the held tail.
  std::string finish();

  bool stopped() const { return stopped_; }
  // The stop string that matched (empty while none has).
  const std::string& matched() const { return matched_; }

 private:
  std::vector<std::string> stop_strings_;
  std::string held_;
  bool stopped_ = false;
  std::string matched_;
};

}  // namespace hive
