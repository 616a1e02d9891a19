// Metrics with Keras's interface: UpdateState() accumulates over batches,
// result() reads the value, Reset() starts over (fit() resets them each
// epoch).
//
// Custom metrics subclass Metric. Thread-safety: none; one loop updates a
// metric.
#ifndef SLUICE_NN_METRICS_H_
#define SLUICE_NN_METRICS_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "sluice/core/status.h"
#include "sluice/nn/backend.h"

namespace sluice::nn {

class Metric {
 public:
  virtual ~Metric() = default;
  virtual std::string name() const = 0;
  // Accumulates one batch of labels and predictions.
  virtual Status UpdateState(Backend& backend, const DeviceTensor& labels,
                             const DeviceTensor& pred) = 0;
  virtual double result() const = 0;
  virtual void Reset() = 0;

  // For strategies, which keep one copy per replica and report the metric
  // over all of them. Clone(): a new metric of the same kind and name, reset
  // (nullptr if not implemented). SummableState(): the accumulated state as
  // numbers that add up across replicas (Keras's metric variables, e.g.
  // total and count); ResultOf(): the result of such a sum. The defaults
  // (empty; result()) leave a custom metric unreduced: each process reports
  // its own replicas' value.
  virtual std::unique_ptr<Metric> Clone() const { return nullptr; }
  virtual std::vector<double> SummableState() const { return {}; }
  virtual double ResultOf(std::span<const double> /*summed*/) const { return result(); }
};

// The weighted mean of the values given to Update(); as a Metric it
// averages nothing from labels (UpdateState is a no-op), so fit() uses it
// for the loss.
class Mean : public Metric {
 public:
  explicit Mean(std::string name = "mean") : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  void Update(double value, double weight = 1.0) {
    total_ += value * weight;
    count_ += weight;
  }
  Status UpdateState(Backend&, const DeviceTensor&, const DeviceTensor&) override {
    return Status::OK();
  }
  double result() const override { return count_ > 0 ? total_ / count_ : 0.0; }
  void Reset() override { total_ = count_ = 0; }
  std::unique_ptr<Metric> Clone() const override { return std::make_unique<Mean>(name_); }
  std::vector<double> SummableState() const override { return {total_, count_}; }
  double ResultOf(std::span<const double> s) const override {
    return s.size() == 2 && s[1] > 0 ? s[0] / s[1] : 0.0;
  }

 private:
  std::string name_;
  double total_ = 0, count_ = 0;
};

// Fraction of rows whose highest score is the label: int32/int64 class ids
// [n] or [n, 1] against scores [n, classes].
class SparseCategoricalAccuracy : public Metric {
 public:
  explicit SparseCategoricalAccuracy(std::string name = "accuracy") : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  Status UpdateState(Backend& backend, const DeviceTensor& labels,
                     const DeviceTensor& pred) override;
  double result() const override {
    return total_ > 0 ? static_cast<double>(correct_) / static_cast<double>(total_) : 0.0;
  }
  void Reset() override { correct_ = total_ = 0; }
  std::unique_ptr<Metric> Clone() const override {
    return std::make_unique<SparseCategoricalAccuracy>(name_);
  }
  std::vector<double> SummableState() const override {
    return {static_cast<double>(correct_), static_cast<double>(total_)};
  }
  double ResultOf(std::span<const double> s) const override {
    return s.size() == 2 && s[1] > 0 ? s[0] / s[1] : 0.0;
  }

 private:
  std::string name_;
  int64_t correct_ = 0, total_ = 0;
};

}  // namespace sluice::nn

#endif  // SLUICE_NN_METRICS_H_
