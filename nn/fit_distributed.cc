// Sequential's Fit and Evaluate under a Strategy: the local replicas, one
// thread each (local replica 0 on the caller's), in lockstep with every
// replica of the job. Fit's epochs, feeds, callbacks, logs and History are
// the one fit loop's (fit_loop.cc); here are the steps of an epoch.
//
// Each training step of each replica:
//   1. takes its batch, then agrees with every replica that all have one
//      (an all-reduce of flags): a replica out of data, or a stop asked by
//      replica 0 (a callback's error, steps_per_epoch), ends the epoch for
//      all instead of leaving the others waiting;
//   2. on the first step of a Fit, takes global replica 0's weights and
//      optimizer state (broadcast);
//   3. computes its gradient and averages it over the replicas
//      (CrossDeviceOps::Add as each layer's gradients are ready, last layer
//      first, so that full buckets can be reduced while the backward pass
//      goes on; then Wait), applies the update, updates its metrics;
//   4. sums loss, batch size and the metrics' states over the replicas (one
//      small all-reduce), which replica 0 reports.
// A replica whose step fails aborts its communicator: the others' next
// collective fails naming it.
#include <atomic>
#include <cstdio>
#include <cstring>

#include "sluice/core/background.h"
#include "sluice/nn/cross_device_ops.h"
#include "sluice/nn/internal/fit_loop.h"
#include "sluice/nn/internal/replicas.h"
#include "sluice/nn/sequential.h"

namespace sluice::nn {

Result<std::vector<Variable*>> Sequential::Replicas::SyncedVariables(Sequential& m) {
  std::vector<Variable*> vars;
  for (const auto& l : m.layers_) {
    for (Variable* v : l->weights()) vars.push_back(v);
  }
  std::vector<Variable*> trainable = m.trainable_variables();
  SLUICE_RETURN_IF_ERROR(m.compiled_.optimizer->Build(std::span<Variable* const>(trainable)));
  for (Variable* v : m.compiled_.optimizer->variables()) vars.push_back(v);
  return vars;
}

Status Sequential::Replicas::Sync(One& r) {
  SLUICE_ASSIGN_OR_RETURN(std::vector<Variable*> vars, SyncedVariables(*r.model));
  std::vector<DeviceTensor*> on_device;
  for (Variable* v : vars) {
    DeviceTensor& t = v->value();
    if (t.device().kind() == DeviceKind::kCpu && r.model->device().kind() != DeviceKind::kCpu) {
      SLUICE_RETURN_IF_ERROR(r.comm->Broadcast(t.raw_data(), t.byte_size(), 0));
    } else {
      on_device.push_back(&t);
    }
  }
  SLUICE_RETURN_IF_ERROR(r.ops->Broadcast(std::span<DeviceTensor* const>(on_device), 0));
  return r.model->compiled_.optimizer->SyncStepCounter();
}

Status Sequential::Replicas::FlattenGradients(One& r) {
  Sequential& m = *r.model;
  r.flat_gradients = true;
  if (m.device().kind() != DeviceKind::kCpu) return Status::OK();
  std::vector<DeviceTensor*> grads;  // in all-reduce order
  for (size_t i = m.layers_.size(); i-- > 0;) {
    for (DeviceTensor* g : m.layers_[i]->gradients()) grads.push_back(g);
  }
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    int64_t total = 0;
    for (const DeviceTensor* g : grads) total += g->dtype() == dtype ? g->num_elements() : 0;
    if (total == 0) continue;
    SLUICE_ASSIGN_OR_RETURN(DeviceTensor flat, m.backend().Allocate(dtype, Shape{total}));
    int64_t at = 0;
    for (DeviceTensor* g : grads) {
      if (g->dtype() != dtype) continue;
      const int64_t n = g->num_elements();
      SLUICE_ASSIGN_OR_RETURN(DeviceTensor part, flat.Slice(at, at + n));
      SLUICE_ASSIGN_OR_RETURN(part, part.Reshape(g->shape()));
      std::memcpy(part.raw_data(), g->raw_data(), g->byte_size());
      *g = std::move(part);
      at += n;
    }
  }
  return Status::OK();
}

namespace {

// Runs body(r) for every local replica, r > 0 on threads of their own and
// r = 0 on this one; the first error in replica order (one that is not an
// echo of another replica's abort, if there is such).
Status RunReplicas(size_t n, const std::function<Status(size_t)>& body) {
  std::vector<Status> status(n);
  RunTogether(static_cast<int>(n), [&](int r) { status[r] = body(static_cast<size_t>(r)); });
  for (const Status& s : status) {
    if (!s.ok() && s.code() != StatusCode::kUnavailable) return s;
  }
  for (const Status& s : status) {
    if (!s.ok()) return s;
  }
  return Status::OK();
}

// The sums a step (or an evaluation) reports: loss x rows, rows, then each
// metric's summable state (its size is the metric's own, the same on every
// replica).
std::vector<double> Totals(double loss_sum, double rows,
                           const std::vector<std::shared_ptr<Metric>>& metrics) {
  std::vector<double> t = {loss_sum, rows};
  for (const auto& m : metrics) {
    std::vector<double> s = m->SummableState();
    t.insert(t.end(), s.begin(), s.end());
  }
  return t;
}

// Results from summed totals: the loss, then each metric (its own result
// where it has no summable state).
std::vector<std::pair<std::string, double>> Results(
    const std::vector<double>& t, const std::vector<std::shared_ptr<Metric>>& metrics) {
  std::vector<std::pair<std::string, double>> out = {{"loss", t[1] > 0 ? t[0] / t[1] : 0.0}};
  size_t i = 2;
  for (const auto& m : metrics) {
    const size_t n = m->SummableState().size();
    if (n == 0 || i + n > t.size()) {
      out.push_back({m->name(), m->result()});
    } else {
      out.push_back({m->name(), m->ResultOf(std::span<const double>(t.data() + i, n))});
    }
    i += n;
  }
  return out;
}

}  // namespace

Sequential* Sequential::replica(size_t r) {
  if (!replicas_ || r >= replicas_->local.size()) return nullptr;
  return replicas_->local[r].model;
}

Result<Sequential::Replicas*> Sequential::PrepareReplicas() {
  const std::shared_ptr<Strategy>& s = compiled_.strategy;
  if (!s) {
    return Status::FailedPrecondition("model " + name() +
                                      " has no strategy: compile it with one to train on a "
                                      "DistributedDataset");
  }
  if (replicas_ && replicas_->strategy == s) return replicas_.get();
  const std::vector<Device>& devices = s->local_devices();
  SLUICE_RETURN_IF_ERROR(SetDevice(devices[0]).WithContext("placing replica 0"));
  auto reps = std::make_unique<Replicas>();
  reps->strategy = s;
  SLUICE_ASSIGN_OR_RETURN(std::vector<Communicator*> comms, s->ReplicaCommunicators());
  for (size_t r = 0; r < devices.size(); ++r) {
    Replicas::One one;
    one.comm = comms[r];
    if (r == 0) {
      one.model = this;
    } else {
      for (const auto& l : layers_) {
        if (!l->Clone()) {
          return Status::InvalidArgument("model " + name() + ": " + s->name() + " with " +
                                         std::to_string(devices.size()) +
                                         " local replicas copies the model, but layer " +
                                         l->name() + " cannot be cloned (implement CloneLayer)");
        }
      }
      std::unique_ptr<Layer> copy = Clone();
      one.owned.reset(static_cast<Sequential*>(copy.release()));
      SLUICE_RETURN_IF_ERROR(one.owned->SetDevice(devices[r]));
      CompileOptions c;
      c.optimizer = compiled_.optimizer->Clone();
      if (!c.optimizer) {
        return Status::InvalidArgument("optimizer " + compiled_.optimizer->name() +
                                       " cannot be cloned for the replicas (implement Clone)");
      }
      c.loss = compiled_.loss;
      for (const auto& m : compiled_.metrics) {
        std::shared_ptr<Metric> mc = m->Clone();
        if (!mc) {
          return Status::InvalidArgument("metric " + m->name() +
                                         " cannot be cloned for the replicas (implement Clone)");
        }
        c.metrics.push_back(std::move(mc));
      }
      SLUICE_RETURN_IF_ERROR(one.owned->Compile(std::move(c)));
      one.model = one.owned.get();
    }
    reps->local.push_back(std::move(one));
  }
  replicas_ = std::move(reps);
  return replicas_.get();
}

Result<History> Sequential::Fit(const DistributedDataset& train, FitOptions o) {
  if (!compiled_.optimizer) return Status::FailedPrecondition("Fit: compile the model first");
  if (o.epochs < 0) return Status::InvalidArgument("Fit: epochs must be >= 0");
  SLUICE_ASSIGN_OR_RETURN(Replicas * reps, PrepareReplicas());
  const size_t n = reps->local.size();
  if (o.capture) {
    for (const Replicas::One& one : reps->local) {
      SLUICE_ASSIGN_OR_RETURN(Backend * b, GetBackend(one.model->device()));
      if (!b->can_capture()) {
        return Status::InvalidArgument("Fit: captured steps need a backend that records work; " +
                                       b->name() + " cannot (train eagerly)");
      }
    }
  }
  if (train.per_replica.size() != n) {
    return Status::InvalidArgument("Fit: " + std::to_string(train.per_replica.size()) +
                                   " datasets for " + std::to_string(n) +
                                   " local replicas (use Strategy::DistributeDatasets)");
  }
  const Strategy& strategy = *reps->strategy;
  std::vector<FitLoop::Replica> replicas;
  for (size_t r = 0; r < n; ++r) replicas.push_back({reps->local[r].model, &train.per_replica[r]});
  FitLoop loop(o, std::move(replicas), strategy.is_chief());
  bool need_sync = true;  // replicas take replica 0's state on the first step that runs
  return loop.Run([&](FitLoop& loop, int epoch) -> Status {
    // The first batches, read here in replica order: a replica not yet
    // built is built from its batch now, in order, so the replicas' initial
    // weights (replaced by replica 0's anyway) draw from the generator in
    // the same order in every run.
    std::vector<std::optional<std::vector<DeviceTensor>>> first(n);
    for (size_t r = 0; r < n; ++r) {
      const FitLoop::Clock::time_point t0 = FitLoop::Clock::now();
      Result<std::optional<std::vector<DeviceTensor>>> b = loop.feed(r).Next();
      if (r == 0) loop.Waited(FitLoop::Since(t0));
      if (!b.ok()) {
        reps->local[r].comm->Abort(b.status());
        return b.status().WithContext("fit: replica " +
                                      std::to_string(strategy.first_replica() + r) + ": epoch " +
                                      std::to_string(epoch + 1) + " step 1");
      }
      first[r] = std::move(*b);
      Sequential& m = *reps->local[r].model;
      if (first[r] && !m.layers_.empty() && !m.layers_.back()->built()) {
        SLUICE_RETURN_IF_ERROR(m.Forward((*first[r])[0], false).status());
      }
    }
    std::atomic<bool> stop{false};     // replica 0 asks every replica to stop
    std::atomic<bool> ran_dry{false};  // the data ended (or steps_per_epoch)
    bool stepped = false;              // replica 0 took a step
    Status callback_error;
    const bool sync = need_sync;  // replicas take replica 0's state first
    Status run = RunReplicas(n, [&](size_t r) -> Status {
      Replicas::One& one = reps->local[r];
      Sequential& m = *one.model;
      BatchFeed& feed = loop.feed(r);
      const int global = strategy.first_replica() + static_cast<int>(r);
      auto fail = [&](const Status& s, int64_t step) {
        one.comm->Abort(s);
        if (one.ops) one.ops->Cancel();  // no bucket left in flight
        return s.WithContext("fit: replica " + std::to_string(global) + ": epoch " +
                             std::to_string(epoch + 1) + " step " + std::to_string(step + 1));
      };
      // The cross-device ops, made by every replica at once (NCCL's are
      // set up together).
      if (!one.ops) {
        Result<std::unique_ptr<CrossDeviceOps>> ops =
            MakeCrossDeviceOps(m.backend(), *one.comm, strategy.cross_device_options());
        if (!ops.ok()) return fail(ops.status(), 0);
        one.ops = std::move(*ops);
      }
      if (!one.flat_gradients && m.layers_.empty() == false && m.layers_.back()->built()) {
        Status s = Replicas::FlattenGradients(one);
        if (!s.ok()) return fail(s, 0);
      }
      double loss_sum = 0, row_sum = 0;  // this replica's, this epoch
      std::vector<double> reported;      // replica 0: the totals of the last step
      bool synced = !sync;
      for (int64_t step = 0;; ++step) {
        if (o.steps_per_epoch > 0 && step >= o.steps_per_epoch) break;
        std::optional<std::vector<DeviceTensor>> batch;
        if (step == 0) {
          batch = std::move(first[r]);
        } else {
          const FitLoop::Clock::time_point t0 = FitLoop::Clock::now();
          Result<std::optional<std::vector<DeviceTensor>>> b = feed.Next();
          if (r == 0) loop.Waited(FitLoop::Since(t0));
          if (!b.ok()) return fail(b.status(), step);
          batch = std::move(*b);
        }
        // Go on only if every replica has a batch and replica 0 wants to.
        int64_t flags[2] = {batch ? 1 : 0, r == 0 && stop.load() ? 0 : 1};
        Status agreed = one.comm->AllReduce(flags, 2, DType::kInt64, ReduceOp::kMin);
        if (!agreed.ok()) return agreed.WithContext("fit: replica " + std::to_string(global));
        if (flags[0] == 0 || flags[1] == 0) {
          if (flags[0] == 0) ran_dry = true;
          if (flags[0] == 0 && batch) {
            std::fprintf(stderr,
                         "fit: replica %d still had batches when another ran out at step %lld; "
                         "they are skipped (distribute() gives every replica the same count)\n",
                         global, static_cast<long long>(step + 1));
          }
          break;
        }
        if (!synced) {
          Status s = Replicas::Sync(one);
          if (!s.ok()) return fail(s, step);
          synced = true;
        }
        const DeviceTensor& x = (*batch)[0];
        const DeviceTensor& y = (*batch)[1];
        // With capture, the step after the first eager one is recorded (in
        // two pieces around the all-reduce) and replayed for every batch
        // of its shapes; others (a last partial batch) run eagerly.
        if (o.capture && one.steps_run > 0 && !one.captured) {
          Result<std::unique_ptr<Replicas::Captured>> c = Replicas::Record(m, x, y);
          if (!c.ok()) return fail(c.status(), step);
          one.captured = std::move(*c);
        }
        Replicas::Captured* replay =
            one.captured != nullptr && one.captured->Accepts(x, y) ? one.captured.get() : nullptr;
        Gradients g;
        Status s;
        if (replay != nullptr) {
          Result<double> loss = Replicas::ReplayGradients(m, *replay, x, y);
          if (!loss.ok()) return fail(loss.status(), step);
          g.loss = *loss;
          g.predictions = replay->predictions;
          g.grads = replay->grad_ptrs;
          g.variables = replay->variables;
          s = one.ops->AllReduceMean(std::span<DeviceTensor* const>(g.grads));
        } else {
          // The gradients go to the all-reduce a layer at a time as the
          // backward pass makes them, last layer first (DDP's bucket order);
          // with overlap the ops reduce full buckets meanwhile.
          size_t handed = m.layers_.size();  // layers [handed, end) are
          auto hand_down_to = [&](size_t i) -> Status {
            while (handed > i) {
              std::vector<DeviceTensor*> grads = m.layers_[--handed]->gradients();
              SLUICE_RETURN_IF_ERROR(one.ops->Add(std::span<DeviceTensor* const>(grads)));
            }
            return Status::OK();
          };
          m.gradients_ready_ = hand_down_to;
          Result<Gradients> eager = m.ComputeGradients(x, y);
          m.gradients_ready_ = nullptr;
          if (!eager.ok()) return fail(eager.status(), step);
          g = std::move(*eager);
          s = hand_down_to(0);  // layers before the last that trains
          if (!s.ok()) return fail(s, step);
          s = one.ops->Wait();
        }
        if (!s.ok()) return s.WithContext("fit: replica " + std::to_string(global));
        s = replay != nullptr
                ? Replicas::ReplayApply(m, *replay)
                : m.compiled_.optimizer->ApplyGradients(std::span<DeviceTensor* const>(g.grads),
                                                        std::span<Variable* const>(g.variables));
        if (!s.ok()) return fail(s, step);
        ++one.steps_run;
        const DeviceTensor& labels = replay != nullptr ? replay->y : y;
        for (const auto& metric : m.compiled_.metrics) {
          s = metric->UpdateState(m.backend(), labels, g.predictions);
          if (!s.ok()) return fail(s, step);
        }
        const int64_t rows = x.rank() > 0 ? x.dim(0) : 1;
        loss_sum += g.loss * static_cast<double>(rows);
        row_sum += static_cast<double>(rows);
        std::vector<double> t = Totals(loss_sum, row_sum, m.compiled_.metrics);
        s = one.comm->AllReduce(t.data(), t.size(), DType::kFloat64, ReduceOp::kSum);
        if (!s.ok()) return s.WithContext("fit: replica " + std::to_string(global));
        if (r != 0) continue;
        // Replica 0 reports, for everyone: the step's loss over the
        // replicas is what this step added to the summed totals.
        stepped = true;
        const double step_rows = t[1] - (reported.empty() ? 0 : reported[1]);
        const double step_loss_sum = t[0] - (reported.empty() ? 0 : reported[0]);
        loop.values() = Results(t, m.compiled_.metrics);
        reported = std::move(t);
        Status cb =
            loop.AfterStep(epoch, {.step = step,
                                   .loss = g.loss,
                                   .batch_size = rows,
                                   .step_loss = step_rows > 0 ? step_loss_sum / step_rows : 0,
                                   .examples = static_cast<int64_t>(reported[1])});
        if (!cb.ok()) callback_error = cb.WithContext(FitLoop::Where(epoch, step)), stop = true;
      }
      return Status::OK();
    });
    if (!run.ok()) return run;
    if (stepped) need_sync = false;
    if (!callback_error.ok()) return callback_error;
    if (ran_dry) loop.RanDry();
    return Status::OK();
  });
}

Result<std::map<std::string, double>> Sequential::Evaluate(const DistributedDataset& data,
                                                           const FitOptions& o) {
  if (!compiled_.loss) return Status::FailedPrecondition("Evaluate: compile the model first");
  SLUICE_ASSIGN_OR_RETURN(Replicas * reps, PrepareReplicas());
  const size_t n = reps->local.size();
  if (data.per_replica.size() != n) {
    return Status::InvalidArgument("Evaluate: " + std::to_string(data.per_replica.size()) +
                                   " datasets for " + std::to_string(n) +
                                   " local replicas (use Strategy::DistributeDatasets)");
  }
  const int first_replica = reps->strategy->first_replica();
  std::vector<double> totals;
  Status run = RunReplicas(n, [&](size_t r) -> Status {
    Replicas::One& one = reps->local[r];
    Sequential& m = *one.model;
    const std::string who = "evaluate: replica " + std::to_string(first_replica + r);
    auto fail = [&](const Status& s) {
      one.comm->Abort(s);
      return s.WithContext(who);
    };
    for (const auto& metric : m.compiled_.metrics) metric->Reset();
    Result<std::unique_ptr<BatchFeed>> feed = m.FeedXY(data.per_replica[r], o, /*weights=*/true);
    if (!feed.ok()) return fail(feed.status());
    double loss_sum = 0, rows = 0;
    for (;;) {
      Result<std::optional<std::vector<DeviceTensor>>> next = (*feed)->Next();
      if (!next.ok()) return fail(next.status());
      if (!next->has_value()) break;
      DeviceTensor x = (**next)[0], y = (**next)[1];
      // Rows of weight 0 (pad_for_eval's copies, at the end of a share)
      // are not counted.
      Result<Tensor> w = m.backend().ToHost((**next)[2]);
      if (!w.ok()) return fail(w.status());
      int64_t keep = x.rank() > 0 ? x.dim(0) : 1;
      if (w->shape().rank() == 1 && w->dtype() == DType::kFloat32) {
        std::span<const float> weights = w->flat<float>();
        keep = 0;
        while (keep < static_cast<int64_t>(weights.size()) && weights[keep] != 0) ++keep;
        for (int64_t i = keep; i < static_cast<int64_t>(weights.size()); ++i) {
          if (weights[i] != 0) {
            return fail(Status::InvalidArgument(
                "sample_weight: weights other than 1... then 0... (pad_for_eval's padding) are "
                "not supported"));
          }
        }
        if (keep == 0) continue;
        if (keep < x.dim(0)) {
          Result<DeviceTensor> xs = x.Slice(0, keep), ys = y.Slice(0, keep);
          if (!xs.ok() || !ys.ok()) return fail(!xs.ok() ? xs.status() : ys.status());
          x = *xs, y = *ys;
        }
      }
      Result<DeviceTensor> pred = m.Forward(x, false);
      if (!pred.ok()) return fail(pred.status());
      Result<double> loss = m.compiled_.loss->Compute(m.backend(), *pred, y, nullptr);
      if (!loss.ok()) return fail(loss.status());
      loss_sum += *loss * static_cast<double>(keep);
      rows += static_cast<double>(keep);
      for (const auto& metric : m.compiled_.metrics) {
        Status s = metric->UpdateState(m.backend(), y, *pred);
        if (!s.ok()) return fail(s);
      }
    }
    std::vector<double> t = Totals(loss_sum, rows, m.compiled_.metrics);
    Status s = one.comm->AllReduce(t.data(), t.size(), DType::kFloat64, ReduceOp::kSum);
    if (!s.ok()) return s.WithContext(who);
    if (r == 0) totals = std::move(t);
    return Status::OK();
  });
  SLUICE_RETURN_IF_ERROR(run);
  if (totals.empty() || totals[1] == 0) {
    return Status::InvalidArgument("evaluate: the datasets are empty");
  }
  std::map<std::string, double> out;
  for (const auto& [k, v] : Results(totals, compiled_.metrics)) out[k] = v;
  return out;
}

}  // namespace sluice::nn
