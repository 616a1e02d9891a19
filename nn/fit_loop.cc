// The one fit loop: epochs, feeds, progress, callbacks, TensorBoard,
// validation and History, for one device and for a strategy's replicas.
#include "sluice/nn/internal/fit_loop.h"

#include "sluice/nn/metrics.h"
#include "sluice/records/summary_writer.h"

namespace sluice::nn {

namespace {

// Per-stage pipeline figures for TensorBoard.
Status LogPipelineStats(SummaryWriter* w, const IteratorStats& stats, int64_t step) {
  for (const StageStats& s : stats.stages) {
    double elapsed = static_cast<double>(stats.elapsed_ns);
    if (elapsed > 0) {
      SLUICE_RETURN_IF_ERROR(w->Scalar("pipeline/" + s.name + "/busy_fraction",
                                       static_cast<float>(s.busy_ns / elapsed), step));
    }
    SLUICE_RETURN_IF_ERROR(
        w->Scalar("pipeline/" + s.name + "/parallelism", static_cast<float>(s.parallelism), step));
  }
  return Status::OK();
}

}  // namespace

std::string Sequential::FitLoop::Where(int epoch, int64_t step) {
  return "fit: epoch " + std::to_string(epoch + 1) + " step " + std::to_string(step + 1);
}

Sequential::FitLoop::FitLoop(const FitOptions& options, std::vector<Replica> replicas, bool chief)
    : o_(options),
      replicas_(std::move(replicas)),
      writer_(chief ? options.summary_writer : nullptr),
      progress_(options.out, chief ? options.verbose : 0),
      feeds_(replicas_.size()),
      log_start_(Clock::now()) {
  known_steps_ = o_.steps_per_epoch > 0 ? o_.steps_per_epoch : replicas_[0].data->cardinality();
  if (known_steps_ < 0) known_steps_ = 0;
}

// The only place Fit makes its feeds: a new one per epoch, or one kept
// across epochs with steps_per_epoch (its iterator goes on).
Status Sequential::FitLoop::MakeFeeds() {
  for (size_t r = 0; r < replicas_.size(); ++r) {
    if (o_.steps_per_epoch > 0 && feeds_[r]) continue;
    feeds_[r].reset();  // the last epoch's first
    SLUICE_ASSIGN_OR_RETURN(feeds_[r], replicas_[r].model->FeedXY(*replicas_[r].data, o_));
  }
  return Status::OK();
}

Result<History> Sequential::FitLoop::Run(const RunSteps& run_steps) {
  History h;
  bool out_of_data = false;
  for (int epoch = 0; epoch < o_.epochs && !out_of_data; ++epoch) {
    for (const Replica& r : replicas_) {
      for (const auto& m : r.model->compiled_.metrics) m->Reset();
    }
    SLUICE_RETURN_IF_ERROR(MakeFeeds());
    values_.clear();
    steps_ = examples_ = 0;
    wait_ = 0;
    ran_dry_ = false;
    progress_.StartEpoch(epoch, o_.epochs, known_steps_);
    const Clock::time_point epoch_start = Clock::now();
    SLUICE_RETURN_IF_ERROR(run_steps(*this, epoch));
    if (ran_dry_ && o_.steps_per_epoch > 0) out_of_data = true;  // as Keras: training stops
    SLUICE_RETURN_IF_ERROR(EndEpoch(epoch, Since(epoch_start), h));
  }
  h.examples_per_second = fit_time_ > 0 ? fit_examples_ / fit_time_ : 0;
  h.input_wait_fraction = fit_time_ > 0 ? fit_wait_ / fit_time_ : 0;
  return h;
}

Status Sequential::FitLoop::AfterStep(int epoch, const Step& s) {
  steps_ = s.step + 1;
  log_examples_ += s.examples - examples_;
  examples_ = s.examples;
  progress_.Step(steps_, values_, examples_);
  const Sequential& model = *replicas_[0].model;
  if (o_.on_batch_end) {
    StepInfo info{epoch,  s.step,       model.compiled_.optimizer->iterations(),
                  s.loss, s.batch_size, feeds_[0]->iterator()};
    SLUICE_RETURN_IF_ERROR(o_.on_batch_end(info));
  }
  const int64_t global = model.compiled_.optimizer->iterations();
  if (writer_ != nullptr && o_.log_every_steps > 0 && global % o_.log_every_steps == 0) {
    return LogStep(global, s.step_loss);
  }
  return Status::OK();
}

Status Sequential::FitLoop::LogStep(int64_t global, double step_loss) {
  const double elapsed = Since(log_start_);
  SLUICE_RETURN_IF_ERROR(writer_->Scalar("batch_loss", static_cast<float>(step_loss), global));
  for (size_t i = 1; i < values_.size(); ++i) {  // the metrics, after "loss"
    SLUICE_RETURN_IF_ERROR(writer_->Scalar("batch_" + values_[i].first,
                                           static_cast<float>(values_[i].second), global));
  }
  if (elapsed > 0) {
    SLUICE_RETURN_IF_ERROR(writer_->Scalar("examples_per_second",
                                           static_cast<float>(log_examples_ / elapsed), global));
    SLUICE_RETURN_IF_ERROR(
        writer_->Scalar("input_wait_fraction", static_cast<float>(log_wait_ / elapsed), global));
  }
  SLUICE_RETURN_IF_ERROR(LogPipelineStats(writer_, feeds_[0]->input_stats(), global));
  log_examples_ = 0;
  log_wait_ = 0;
  log_start_ = Clock::now();
  return Status::OK();
}

Status Sequential::FitLoop::EndEpoch(int epoch, double epoch_time, History& h) {
  Sequential& model = *replicas_[0].model;
  fit_time_ += epoch_time;
  fit_wait_ += wait_;
  fit_examples_ += examples_;
  if (known_steps_ == 0) known_steps_ = steps_;
  std::map<std::string, double> results;
  if (values_.empty()) {  // no step: the reset state
    results["loss"] = 0;
    for (const auto& m : model.compiled_.metrics) results[m->name()] = m->result();
  }
  for (const auto& [k, v] : values_) results[k] = v;
  // Under a strategy, distributed validation runs on every replica's share;
  // validation_data on local replica 0 alone (Evaluate).
  if (o_.distributed_validation_data || o_.validation_data) {
    FitOptions quiet = o_;
    quiet.verbose = 0;
    Result<std::map<std::string, double>> val =
        o_.distributed_validation_data ? model.Evaluate(*o_.distributed_validation_data, quiet)
                                       : model.Evaluate(*o_.validation_data, quiet);
    if (!val.ok())
      return val.status().WithContext("fit: validation after epoch " + std::to_string(epoch + 1));
    for (const auto& [k, v] : *val) results["val_" + k] = v;
  }
  std::vector<std::pair<std::string, double>> shown = {{"loss", results["loss"]}};
  for (const auto& m : model.compiled_.metrics) shown.push_back({m->name(), results[m->name()]});
  for (const auto& [k, v] : results) {
    if (k.rfind("val_", 0) == 0) shown.push_back({k, v});
  }
  progress_.EndEpoch(steps_, shown, examples_, epoch_time > 0 ? wait_ / epoch_time : 0);
  for (const auto& [k, v] : results) h.history[k].push_back(v);
  if (writer_ != nullptr) {
    for (const auto& [k, v] : results) {
      SLUICE_RETURN_IF_ERROR(writer_->Scalar("epoch_" + k, static_cast<float>(v), epoch));
    }
    SLUICE_RETURN_IF_ERROR(writer_->Flush());
  }
  if (o_.on_epoch_end) {
    Status s = o_.on_epoch_end(epoch, results);
    if (!s.ok()) return s.WithContext("fit: after epoch " + std::to_string(epoch + 1));
  }
  h.steps += steps_;
  return Status::OK();
}

}  // namespace sluice::nn
