// Keras-like progress output for fit/evaluate. Internal.
//
// On a terminal: "Epoch 1/5" then a bar redrawn in place (at most 10 times
// a second) with steps, elapsed time, time per step, the running loss and
// metrics and examples/s. Otherwise, one line per epoch.
#ifndef SLUICE_NN_INTERNAL_FIT_PROGRESS_H_
#define SLUICE_NN_INTERNAL_FIT_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace sluice::nn_internal {

class FitProgress {
 public:
  // verbose: 0 silent, 1 bar, 2 lines, -1 bar if `out` is a terminal.
  FitProgress(FILE* out, int verbose);
  void StartEpoch(int epoch, int epochs, int64_t total_steps);  // total 0: unknown
  // After each step: running values ("loss", 0.51), examples so far.
  void Step(int64_t steps_done, const std::vector<std::pair<std::string, double>>& values,
            int64_t examples);
  // The epoch's final values (with val_*) and the input-wait fraction.
  void EndEpoch(int64_t steps_done, const std::vector<std::pair<std::string, double>>& values,
                int64_t examples, double input_wait_fraction);

 private:
  std::string Values(const std::vector<std::pair<std::string, double>>& values) const;
  std::string Bar(int64_t done) const;
  double Seconds() const;

  FILE* out_;
  bool bar_ = false;
  bool silent_ = false;
  int epoch_ = 0, epochs_ = 0;
  int64_t total_ = 0;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace sluice::nn_internal

#endif  // SLUICE_NN_INTERNAL_FIT_PROGRESS_H_
