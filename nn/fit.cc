// Sequential's dataset loops: Fit, Evaluate, Predict.
#include <chrono>
#include <cstring>

#include "sluice/nn/internal/fit_progress.h"
#include "sluice/nn/sequential.h"
#include "sluice/records/summary_writer.h"

namespace sluice::nn {

namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

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

Result<std::pair<Tensor, Tensor>> Sequential::SplitBatch(const Element& e,
                                                         const FitOptions& o) const {
  if (!o.x_name.empty() || !o.y_name.empty()) {
    SLUICE_ASSIGN_OR_RETURN(Tensor x, e.get(o.x_name));
    SLUICE_ASSIGN_OR_RETURN(Tensor y, e.get(o.y_name));
    return std::make_pair(x, y);
  }
  if (e.size() < 2) {
    return Status::InvalidArgument("model " + name() +
                                   " needs (x, y) elements (or FitOptions x_name/y_name), got " +
                                   e.DebugString(2));
  }
  return std::make_pair(e[0], e[1]);
}

Result<std::unique_ptr<BatchFeed>> Sequential::FeedXY(Iterator data, const FitOptions& o,
                                                      bool weights) {
  if (o.prefetch_to_device < 0) {
    return Status::InvalidArgument("FitOptions::prefetch_to_device must be >= 0, got " +
                                   std::to_string(o.prefetch_to_device));
  }
  SLUICE_ASSIGN_OR_RETURN(Backend * b, GetBackend(device()));
  FitOptions names;
  names.x_name = o.x_name;
  names.y_name = o.y_name;
  // Runs on the feed's thread when it reads ahead: SplitBatch only reads.
  FeedSelect select = [this, names, weights](const Element& e) -> Result<std::vector<Tensor>> {
    SLUICE_ASSIGN_OR_RETURN(auto xy, SplitBatch(e, names));
    std::vector<Tensor> out{std::move(xy.first), std::move(xy.second)};
    if (weights) {
      const Tensor* w = e.find("sample_weight");
      out.push_back(w != nullptr ? *w : Tensor::Scalar<float>(1.0f));
    }
    return out;
  };
  return MakeBatchFeed(*b, std::move(data), std::move(select), o.prefetch_to_device);
}

Result<double> Sequential::Step(const DeviceTensor& x, const DeviceTensor& y, bool capture,
                                std::unique_ptr<CapturedTrainStep>* captured) {
  if (!capture) return TrainStep(x, y);
  if (*captured == nullptr) {
    SLUICE_ASSIGN_OR_RETURN(*captured, CaptureTrainStep(x, y));
    return (*captured)->first_loss();
  }
  if ((*captured)->Accepts(x, y)) return (*captured)->Run(x, y);
  return TrainStep(x, y);
}

Result<History> Sequential::Fit(const Dataset& train, FitOptions o) {
  if (!compiled_.optimizer) return Status::FailedPrecondition("Fit: compile the model first");
  if (compiled_.strategy) {
    return Status::InvalidArgument(
        "Fit: model " + name() + " is compiled with " + compiled_.strategy->Describe() +
        ": give Fit the strategy's DistributeDatasets(...), one dataset per replica");
  }
  if (o.epochs < 0) return Status::InvalidArgument("Fit: epochs must be >= 0");
  History h;
  nn_internal::FitProgress progress(o.out, o.verbose);
  Mean loss_mean("loss");
  std::unique_ptr<BatchFeed> persistent;
  int64_t known_steps = o.steps_per_epoch > 0 ? o.steps_per_epoch : train.cardinality();
  if (known_steps < 0) known_steps = 0;
  double fit_wait = 0, fit_time = 0;
  int64_t fit_examples = 0;
  // Since the last TensorBoard step log: examples, input wait, start time.
  int64_t log_examples = 0;
  double log_wait = 0;
  Clock::time_point log_start = Clock::now();
  std::unique_ptr<CapturedTrainStep> captured;  // with o.capture, from the first batch
  bool out_of_data = false;
  for (int epoch = 0; epoch < o.epochs && !out_of_data; ++epoch) {
    loss_mean.Reset();
    for (const auto& m : compiled_.metrics) m->Reset();
    std::unique_ptr<BatchFeed> epoch_feed;
    BatchFeed* feed;
    if (o.steps_per_epoch > 0) {
      if (!persistent) {
        SLUICE_ASSIGN_OR_RETURN(Iterator made, train.iterator());
        SLUICE_ASSIGN_OR_RETURN(persistent, FeedXY(std::move(made), o));
      }
      feed = persistent.get();
    } else {
      SLUICE_ASSIGN_OR_RETURN(Iterator made, train.iterator());
      SLUICE_ASSIGN_OR_RETURN(epoch_feed, FeedXY(std::move(made), o));
      feed = epoch_feed.get();
    }
    progress.StartEpoch(epoch, o.epochs, known_steps);
    Clock::time_point epoch_start = Clock::now();
    double wait = 0;
    int64_t step = 0, examples = 0;
    std::vector<std::pair<std::string, double>> values;
    while (o.steps_per_epoch == 0 || step < o.steps_per_epoch) {
      Clock::time_point t0 = Clock::now();
      Result<std::optional<std::vector<DeviceTensor>>> next = feed->Next();
      double waited = Since(t0);
      wait += waited;
      log_wait += waited;
      std::string where =
          "fit: epoch " + std::to_string(epoch + 1) + " step " + std::to_string(step + 1);
      if (!next.ok()) return next.status().WithContext(where);
      if (!next->has_value()) {
        if (o.steps_per_epoch > 0) out_of_data = true;  // Keras stops training too
        break;
      }
      const DeviceTensor& x = (**next)[0];
      Result<double> loss = Step(x, (**next)[1], o.capture, &captured);
      if (!loss.ok()) return loss.status().WithContext(where);
      int64_t batch = x.rank() > 0 ? x.dim(0) : 1;
      loss_mean.Update(*loss, static_cast<double>(batch));
      examples += batch;
      log_examples += batch;
      ++step;
      values = {{"loss", loss_mean.result()}};
      for (const auto& m : compiled_.metrics) values.push_back({m->name(), m->result()});
      progress.Step(step, values, examples);
      if (o.on_batch_end) {
        StepInfo info{epoch, step - 1, compiled_.optimizer->iterations(),
                      *loss, batch,    feed->iterator()};
        Status s = o.on_batch_end(info);
        if (!s.ok()) return s.WithContext(where);
      }
      int64_t global = compiled_.optimizer->iterations();
      if (o.summary_writer != nullptr && o.log_every_steps > 0 && global % o.log_every_steps == 0) {
        double elapsed = Since(log_start);
        SummaryWriter* w = o.summary_writer;
        SLUICE_RETURN_IF_ERROR(w->Scalar("batch_loss", static_cast<float>(*loss), global));
        for (const auto& m : compiled_.metrics) {
          SLUICE_RETURN_IF_ERROR(
              w->Scalar("batch_" + m->name(), static_cast<float>(m->result()), global));
        }
        if (elapsed > 0) {
          SLUICE_RETURN_IF_ERROR(
              w->Scalar("examples_per_second", static_cast<float>(log_examples / elapsed), global));
          SLUICE_RETURN_IF_ERROR(
              w->Scalar("input_wait_fraction", static_cast<float>(log_wait / elapsed), global));
        }
        SLUICE_RETURN_IF_ERROR(LogPipelineStats(w, feed->input_stats(), global));
        log_examples = 0;
        log_wait = 0;
        log_start = Clock::now();
      }
    }
    double epoch_time = Since(epoch_start);
    fit_time += epoch_time;
    fit_wait += wait;
    fit_examples += examples;
    if (known_steps == 0) known_steps = step;
    std::map<std::string, double> results;
    results["loss"] = loss_mean.result();
    for (const auto& m : compiled_.metrics) results[m->name()] = m->result();
    if (o.validation_data) {
      FitOptions quiet = o;
      quiet.verbose = 0;
      Result<std::map<std::string, double>> val = Evaluate(*o.validation_data, quiet);
      if (!val.ok())
        return val.status().WithContext("fit: validation after epoch " + std::to_string(epoch + 1));
      for (const auto& [k, v] : *val) results["val_" + k] = v;
    }
    std::vector<std::pair<std::string, double>> shown = {{"loss", results["loss"]}};
    for (const auto& m : compiled_.metrics) shown.push_back({m->name(), results[m->name()]});
    for (const auto& [k, v] : results) {
      if (k.rfind("val_", 0) == 0) shown.push_back({k, v});
    }
    progress.EndEpoch(step, shown, examples, epoch_time > 0 ? wait / epoch_time : 0);
    for (const auto& [k, v] : results) h.history[k].push_back(v);
    if (o.summary_writer != nullptr) {
      for (const auto& [k, v] : results) {
        SLUICE_RETURN_IF_ERROR(
            o.summary_writer->Scalar("epoch_" + k, static_cast<float>(v), epoch));
      }
      SLUICE_RETURN_IF_ERROR(o.summary_writer->Flush());
    }
    if (o.on_epoch_end) {
      Status s = o.on_epoch_end(epoch, results);
      if (!s.ok()) return s.WithContext("fit: after epoch " + std::to_string(epoch + 1));
    }
    h.steps += step;
  }
  h.examples_per_second = fit_time > 0 ? fit_examples / fit_time : 0;
  h.input_wait_fraction = fit_time > 0 ? fit_wait / fit_time : 0;
  return h;
}

Result<std::map<std::string, double>> Sequential::Evaluate(const Dataset& data,
                                                           const FitOptions& o) {
  if (!compiled_.loss) return Status::FailedPrecondition("Evaluate: compile the model first");
  Mean loss_mean("loss");
  for (const auto& m : compiled_.metrics) m->Reset();
  SLUICE_ASSIGN_OR_RETURN(Iterator it, data.iterator());
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<BatchFeed> feed, FeedXY(std::move(it), o));
  int64_t step = 0;
  for (;;) {
    std::string where = "evaluate: step " + std::to_string(step + 1);
    Result<std::optional<std::vector<DeviceTensor>>> next = feed->Next();
    if (!next.ok()) return next.status().WithContext(where);
    if (!next->has_value()) break;
    ++step;
    const DeviceTensor& x = (**next)[0];
    const DeviceTensor& y = (**next)[1];
    Result<DeviceTensor> pred = Forward(x, false);
    if (!pred.ok()) return pred.status().WithContext(where);
    Result<double> loss = compiled_.loss->Compute(backend(), *pred, y, nullptr);
    if (!loss.ok()) return loss.status().WithContext(where);
    loss_mean.Update(*loss, static_cast<double>(pred->dim(0)));
    for (const auto& m : compiled_.metrics) {
      Status s = m->UpdateState(backend(), y, *pred);
      if (!s.ok()) return s.WithContext(where);
    }
  }
  if (step == 0) return Status::InvalidArgument("evaluate: the dataset is empty");
  std::map<std::string, double> out{{"loss", loss_mean.result()}};
  for (const auto& m : compiled_.metrics) out[m->name()] = m->result();
  return out;
}

Result<Tensor> Sequential::Predict(const Dataset& data, const FitOptions& o) {
  SLUICE_ASSIGN_OR_RETURN(Iterator it, data.iterator());
  std::vector<Tensor> outputs;
  int64_t rows = 0;
  for (;;) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, it.next());
    if (!e) break;
    if (e->empty()) return Status::InvalidArgument("predict: an element has no components");
    Tensor x = (*e)[0];
    if (!o.x_name.empty()) {
      SLUICE_ASSIGN_OR_RETURN(x, e->get(o.x_name));
    }
    SLUICE_ASSIGN_OR_RETURN(Tensor y, Predict(x));
    rows += y.shape().rank() > 0 ? y.shape().dim(0) : 1;
    outputs.push_back(std::move(y));
  }
  if (outputs.empty()) return Status::InvalidArgument("predict: the dataset is empty");
  std::vector<int64_t> dims(outputs[0].shape().dims().begin(), outputs[0].shape().dims().end());
  dims[0] = rows;
  SLUICE_ASSIGN_OR_RETURN(Tensor all, Tensor::Allocate(DType::kFloat32, Shape(dims)));
  size_t offset = 0;
  for (const Tensor& t : outputs) {
    std::memcpy(static_cast<uint8_t*>(all.raw_data()) + offset, t.raw_data(), t.byte_size());
    offset += t.byte_size();
  }
  return all;
}

}  // namespace sluice::nn
