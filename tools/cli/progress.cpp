#include "tools/cli/progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <utility>

namespace hive::cli {

Progress::Progress(std::FILE* out, bool is_terminal, std::string label, int64_t total,
                   std::string unit)
    : out_(out),
      active_(is_terminal),
      label_(std::move(label)),
      total_(std::max<int64_t>(total, 0)),
      unit_(std::move(unit)) {
  draw(0);
}

Progress Progress::on_stderr(std::string label, int64_t total, std::string unit) {
  return Progress(stderr, ::isatty(STDERR_FILENO) == 1, std::move(label), total, std::move(unit));
}

Progress::Progress(Progress&& other) noexcept
    : out_(other.out_),
      active_(std::exchange(other.active_, false)),
      label_(std::move(other.label_)),
      total_(other.total_),
      unit_(std::move(other.unit_)),
      percent_(other.percent_) {}

void Progress::update(int64_t count) {
  if (active_ && total_ > 0) draw(std::clamp<int64_t>(count, 0, total_));
}

void Progress::clear() {
  if (!active_) return;
  std::fputs("\r\x1b[K", out_);
  std::fflush(out_);
  percent_ = -1;
}

void Progress::done() {
  if (!active_) return;
  active_ = false;
  std::fputs("\r\x1b[K", out_);  // back to the line's start, erase it
  std::fflush(out_);
}

void Progress::draw(int64_t count) {
  if (!active_) return;
  if (total_ == 0) {
    std::fprintf(out_, "\r%s...", label_.c_str());
  } else {
    const int percent = static_cast<int>(count * 100 / total_);
    if (percent == percent_) return;
    percent_ = percent;
    std::fprintf(out_, "\r%s: %lld/%lld%s%s (%d%%)", label_.c_str(), static_cast<long long>(count),
                 static_cast<long long>(total_), unit_.empty() ? "" : " ", unit_.c_str(), percent);
  }
  std::fflush(out_);
}

}  // namespace hive::cli
