#pragma once
// A progress line for long work (model loading, eval-ppl, agree, bench
// serve), on a terminal only: "eval-ppl: 12/40 windows (30%)" rewritten in
// place with a carriage return, erased when the work is done. When the
// stream is not a terminal (piped, redirected to a log) it writes nothing
// at all, so scripts, logs and tests see only the command's output.
//
// Redrawn when the whole percentage changes, not on a clock: at most 101
// writes, however fast the work, and the same writes on every run.
#include <cstdint>
#include <cstdio>
#include <string>

namespace hive::cli {

class Progress {
 public:
  // total 0: work of unknown size, shown as "label..." until done.
  Progress(std::FILE* out, bool is_terminal, std::string label, int64_t total,
           std::string unit = "");
  // On stderr, when stderr is a terminal.
  static Progress on_stderr(std::string label, int64_t total = 0, std::string unit = "");
  ~Progress() { done(); }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  Progress(Progress&& other) noexcept;
  Progress& operator=(Progress&&) = delete;

  // `count` of the total is done (clamped to it).
  void update(int64_t count);
  // Erases the line for other output; the next update draws it again.
  void clear();
  // Erases the line; later calls do nothing.
  void done();

 private:
  void draw(int64_t count);

  std::FILE* out_;
  bool active_;  // a terminal, and not done yet
  std::string label_;
  int64_t total_;
  std::string unit_;
  int percent_ = -1;  // last drawn
};

}  // namespace hive::cli
