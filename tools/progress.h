// Progress: a one-line status on stderr for long commands, redrawn in place
// at most five times a second, and only when stderr is a terminal (so logs
// and pipes stay clean). Not thread-safe.
#ifndef SLUICE_TOOLS_PROGRESS_H_
#define SLUICE_TOOLS_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <string>

namespace sluice::tools {

class Progress {
 public:
  explicit Progress(std::string label);
  ~Progress();
  // Call often; redraws only when due.
  void Update(uint64_t records, uint64_t bytes);
  // Erases the line.
  void Done();

 private:
  std::string label_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_PROGRESS_H_
