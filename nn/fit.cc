// Sequential's dataset loops on one device: Fit (the steps of an epoch;
// the loop around them is fit_loop.cc's), Evaluate, Predict.
#include <cstring>

#include "sluice/nn/internal/fit_loop.h"
#include "sluice/nn/sequential.h"

namespace sluice::nn {

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

Result<std::unique_ptr<BatchFeed>> Sequential::FeedXY(const Dataset& data, const FitOptions& o,
                                                      bool weights) {
  if (o.prefetch_to_device < 0) {
    return Status::InvalidArgument("FitOptions::prefetch_to_device must be >= 0, got " +
                                   std::to_string(o.prefetch_to_device));
  }
  SLUICE_ASSIGN_OR_RETURN(Backend * b, GetBackend(device()));
  FitOptions names;
  names.x_name = o.x_name;
  names.y_name = o.y_name;
  // Runs in the pipeline when the feed reads ahead: SplitBatch only reads.
  FeedSelect select = [this, names, weights](const Element& e) -> Result<std::vector<Tensor>> {
    SLUICE_ASSIGN_OR_RETURN(auto xy, SplitBatch(e, names));
    std::vector<Tensor> out{std::move(xy.first), std::move(xy.second)};
    if (weights) {
      const Tensor* w = e.find("sample_weight");
      out.push_back(w != nullptr ? *w : Tensor::Scalar<float>(1.0f));
    }
    return out;
  };
  return MakeBatchFeed(*b, data, std::move(select), o.prefetch_to_device);
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
  if (o.distributed_validation_data) {
    return Status::InvalidArgument("Fit: model " + name() +
                                   " has no strategy for distributed_validation_data (give "
                                   "validation_data, or compile with a strategy)");
  }
  // One device is the one replica, with nothing to agree on or reduce:
  // each step is Step() on this thread, and its loss and metrics are the
  // results.
  FitLoop loop(o, {{this, &train}}, /*chief=*/true);
  Mean loss_mean("loss");
  std::unique_ptr<CapturedTrainStep> captured;  // with o.capture, from the first batch
  return loop.Run([&](FitLoop& loop, int epoch) -> Status {
    loss_mean.Reset();
    BatchFeed& feed = loop.feed(0);
    std::vector<std::pair<std::string, double>>& values = loop.values();
    int64_t examples = 0;
    for (int64_t step = 0; o.steps_per_epoch == 0 || step < o.steps_per_epoch; ++step) {
      const FitLoop::Clock::time_point t0 = FitLoop::Clock::now();
      Result<std::optional<std::vector<DeviceTensor>>> next = feed.Next();
      loop.Waited(FitLoop::Since(t0));
      if (!next.ok()) return next.status().WithContext(FitLoop::Where(epoch, step));
      if (!next->has_value()) {
        loop.RanDry();
        break;
      }
      const DeviceTensor& x = (**next)[0];
      Result<double> loss = Step(x, (**next)[1], o.capture, &captured);
      if (!loss.ok()) return loss.status().WithContext(FitLoop::Where(epoch, step));
      const int64_t batch = x.rank() > 0 ? x.dim(0) : 1;
      loss_mean.Update(*loss, static_cast<double>(batch));
      examples += batch;
      values.clear();
      values.push_back({"loss", loss_mean.result()});
      for (const auto& m : compiled_.metrics) values.push_back({m->name(), m->result()});
      Status s = loop.AfterStep(epoch, {.step = step,
                                        .loss = *loss,
                                        .batch_size = batch,
                                        .step_loss = *loss,
                                        .examples = examples});
      if (!s.ok()) return s.WithContext(FitLoop::Where(epoch, step));
    }
    return Status::OK();
  });
}

Result<std::map<std::string, double>> Sequential::Evaluate(const Dataset& data,
                                                           const FitOptions& o) {
  if (!compiled_.loss) return Status::FailedPrecondition("Evaluate: compile the model first");
  Mean loss_mean("loss");
  for (const auto& m : compiled_.metrics) m->Reset();
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<BatchFeed> feed, FeedXY(data, o));
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
