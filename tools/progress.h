// Progress: the progress of a long command on stderr. On a terminal, one
// line redrawn in place at most five times a second (items, MB, items/s,
// MB/s, and the percentage and ETA when the total is known); otherwise (a
// log file, a pipe) a plain line every five seconds, so batch logs show the
// run is alive without filling up.
//
// Not thread-safe: call from one thread.
#ifndef SLUICE_TOOLS_PROGRESS_H_
#define SLUICE_TOOLS_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <string>

namespace sluice::tools {

class Progress {
 public:
  // `unit` names the items ("images"); `total_items` may be 0 (no ETA).
  explicit Progress(std::string label, std::string unit = "records", uint64_t total_items = 0,
                    bool enabled = true);
  ~Progress();
  // Call often; draws only when due.
  void Update(uint64_t items, uint64_t bytes);
  // Erases the terminal line.
  void Done();

  // "1:02:03" or "2:03".
  static std::string FormatDuration(double seconds);

 private:
  std::string label_, unit_;
  uint64_t total_;
  bool enabled_, tty_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_PROGRESS_H_
