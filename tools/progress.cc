#include "progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>

#include <fmt/format.h>

namespace sluice::tools {

Progress::Progress(std::string label, std::string unit, uint64_t total_items, bool enabled)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      total_(total_items),
      enabled_(enabled),
      tty_(::isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

Progress::~Progress() { Done(); }

std::string Progress::FormatDuration(double seconds) {
  const int64_t s = std::isfinite(seconds) && seconds > 0 ? std::llround(seconds) : 0;
  if (s >= 3600) return fmt::format("{}:{:02d}:{:02d}", s / 3600, s / 60 % 60, s % 60);
  return fmt::format("{}:{:02d}", s / 60, s % 60);
}

void Progress::Update(uint64_t items, uint64_t bytes) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_ < (tty_ ? std::chrono::milliseconds(200) : std::chrono::seconds(5))) return;
  last_ = now;
  const double secs = std::chrono::duration<double>(now - start_).count();
  const double rate = secs > 0 ? items / secs : 0.0;
  std::string line = fmt::format("{}: {}", label_, items);
  if (total_ > 0)
    line += fmt::format("/{} {} ({:.1f}%)", total_, unit_, 100.0 * items / total_);
  else
    line += " " + unit_;
  line += fmt::format(", {:.1f} MB, {:.0f} {}/s, {:.1f} MB/s", bytes / 1e6, rate, unit_,
                      secs > 0 ? bytes / 1e6 / secs : 0.0);
  if (total_ > 0 && rate > 0 && items <= total_) {
    line += ", ETA " + FormatDuration((total_ - items) / rate);
  }
  if (tty_) {
    fmt::print(stderr, "\r\033[K{}", line);
    drawn_ = true;
  } else {
    fmt::print(stderr, "{}\n", line);
  }
  std::fflush(stderr);
}

void Progress::Done() {
  if (drawn_) fmt::print(stderr, "\r\033[K");
  drawn_ = false;
}

}  // namespace sluice::tools
