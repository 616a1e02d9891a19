// Sequential::FitLoop: the one fit loop (fit_loop.cc), for Fit on one
// device and Fit under a strategy alike, as Keras runs one fit loop under a
// default one-replica strategy. Internal to nn.
//
// The loop owns what an epoch is: the metrics' reset, the feeds (made here
// and nowhere else: MakeFeeds), the progress output, on_batch_end and the
// TensorBoard step logs after each step (AfterStep), then the epoch's
// results, validation, the epoch logs, on_epoch_end and History. How the
// steps of an epoch run is the caller's RunSteps:
//   - one device (fit.cc): a plain loop on this thread, Sequential::Step on
//     each batch, with no collective, thread or copy between steps;
//   - a strategy (fit_distributed.cc): a thread per local replica in
//     lockstep with every replica of the job, gradients all-reduced.
// Either way the reporting replica (local replica 0, this thread) tells the
// loop what it waited for input (Waited), fills values() and calls
// AfterStep after each step; the loop's results are over every replica.
//
// Thread-safety: none. Only the reporting replica calls it during RunSteps.
#ifndef SLUICE_NN_INTERNAL_FIT_LOOP_H_
#define SLUICE_NN_INTERNAL_FIT_LOOP_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sluice/nn/batch_feed.h"
#include "sluice/nn/internal/fit_progress.h"
#include "sluice/nn/sequential.h"

namespace sluice::nn {

struct Sequential::FitLoop {
  using Clock = std::chrono::steady_clock;
  static double Since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  }
  // "fit: epoch 2 step 5" (both from 0 here, from 1 in the text).
  static std::string Where(int epoch, int64_t step);

  // A local replica: its model (replica 0: the one Fit was called on) and
  // the dataset it trains on.
  struct Replica {
    Sequential* model = nullptr;
    const Dataset* data = nullptr;
  };
  // A step, as the reporting replica took it.
  struct Step {
    int64_t step = 0;        // in the epoch, from 0
    double loss = 0;         // its own batch's loss (StepInfo::loss)
    int64_t batch_size = 0;  // its own batch's rows (StepInfo::batch_size)
    double step_loss = 0;    // the step's loss over every replica (batch_loss)
    int64_t examples = 0;    // the epoch's rows so far, over every replica
  };
  // Runs the steps of `epoch` (from 0) on loop.feed(r); returns the first
  // error, which ends Fit.
  using RunSteps = std::function<Status(FitLoop& loop, int epoch)>;

  // `chief`: this process reports (progress, TensorBoard). REQUIRES:
  // replicas is not empty; options outlives the loop.
  FitLoop(const FitOptions& options, std::vector<Replica> replicas, bool chief);
  FitLoop(const FitLoop&) = delete;
  FitLoop& operator=(const FitLoop&) = delete;

  Result<History> Run(const RunSteps& run_steps);

  // For RunSteps: local replica r's feed of this epoch.
  BatchFeed& feed(size_t r) { return *feeds_[r]; }
  // The reporting replica waited `seconds` for a batch.
  void Waited(double seconds) {
    wait_ += seconds;
    log_wait_ += seconds;
  }
  // The input ran out in this epoch (with steps_per_epoch, training stops).
  void RanDry() { ran_dry_ = true; }
  // The epoch's running loss ("loss" first) and metrics over every replica,
  // which the reporting replica sets before each AfterStep (kept between
  // steps, so that it allocates once).
  std::vector<std::pair<std::string, double>>& values() { return values_; }
  // After each step of the reporting replica: the progress output,
  // on_batch_end and, every log_every_steps, the step logs. The status of
  // the callback or of the writer.
  Status AfterStep(int epoch, const Step& s);

 private:
  Status MakeFeeds();
  Status LogStep(int64_t global_step, double step_loss);
  Status EndEpoch(int epoch, double epoch_time, History& h);

  const FitOptions& o_;
  std::vector<Replica> replicas_;
  SummaryWriter* writer_;  // only the chief writes
  nn_internal::FitProgress progress_;
  // Per epoch, or kept across epochs with steps_per_epoch.
  std::vector<std::unique_ptr<BatchFeed>> feeds_;
  int64_t known_steps_ = 0;
  // This epoch's, from the reporting replica.
  std::vector<std::pair<std::string, double>> values_;
  int64_t steps_ = 0, examples_ = 0;
  double wait_ = 0;
  bool ran_dry_ = false;
  // The whole fit's.
  double fit_wait_ = 0, fit_time_ = 0;
  int64_t fit_examples_ = 0;
  // Since the last TensorBoard step log: examples, input wait, start time.
  int64_t log_examples_ = 0;
  double log_wait_ = 0;
  Clock::time_point log_start_;
};

}  // namespace sluice::nn

#endif  // SLUICE_NN_INTERNAL_FIT_LOOP_H_
