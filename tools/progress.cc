#include "progress.h"

#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

namespace sluice::tools {

Progress::Progress(std::string label)
    : label_(std::move(label)),
      enabled_(::isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

Progress::~Progress() { Done(); }

void Progress::Update(uint64_t records, uint64_t bytes) {
  if (!enabled_ || (records & 1023) != 0) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_ < std::chrono::milliseconds(200)) return;
  last_ = now;
  const double secs = std::chrono::duration<double>(now - start_).count();
  fmt::print(stderr, "\r\033[K{}: {} records, {:.1f} MB, {:.0f} MB/s", label_, records, bytes / 1e6,
             secs > 0 ? bytes / 1e6 / secs : 0.0);
  std::fflush(stderr);
  drawn_ = true;
}

void Progress::Done() {
  if (drawn_) fmt::print(stderr, "\r\033[K");
  drawn_ = false;
}

}  // namespace sluice::tools
