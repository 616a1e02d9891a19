// Float32 staging of bfloat16 tensors (float32_staging.h).
#include "sluice/nn/kit/float32_staging.h"

#include <deque>
#include <string_view>
#include <utility>
#include <vector>

#include "sluice/nn/kit/backend_checks.h"

namespace sluice::nn::kit {

bool AnyBFloat16(std::initializer_list<const DeviceTensor*> tensors) {
  for (const DeviceTensor* t : tensors) {
    if (t != nullptr && t->dtype() == DType::kBFloat16) return true;
  }
  return false;
}

namespace in_float32 {
namespace {

// The stand-ins of one call. In() and Out() return the tensor itself when
// it is not bfloat16; Finish() rounds the output stand-ins into their
// targets, in the order Out() was called.
class Staging {
 public:
  Staging(Backend& backend, std::string_view method) : backend_(backend), method_(method) {}

  Result<DeviceTensor> In(std::string_view name, const DeviceTensor& x) {
    if (x.dtype() != DType::kBFloat16) return x;
    SLUICE_RETURN_IF_ERROR(Check(name, x));
    SLUICE_ASSIGN_OR_RETURN(DeviceTensor f, backend_.Allocate(DType::kFloat32, x.shape()));
    SLUICE_RETURN_IF_ERROR(backend_.Cast(x, 1.0f, &f));
    return f;
  }
  // An optional input: null stays null.
  Result<const DeviceTensor*> In(std::string_view name, const DeviceTensor* x) {
    if (x == nullptr || x->dtype() != DType::kBFloat16) return x;
    SLUICE_ASSIGN_OR_RETURN(DeviceTensor f, In(name, *x));
    return &held_.emplace_back(std::move(f));
  }
  // `read`: the method reads y's old values too.
  Result<DeviceTensor*> Out(std::string_view name, DeviceTensor* y, bool read) {
    if (y == nullptr || y->dtype() != DType::kBFloat16) return y;
    DeviceTensor f;
    if (read) {
      SLUICE_ASSIGN_OR_RETURN(f, In(name, *y));
    } else {
      SLUICE_RETURN_IF_ERROR(Check(name, *y));
      SLUICE_ASSIGN_OR_RETURN(f, backend_.Allocate(DType::kFloat32, y->shape()));
    }
    DeviceTensor* stand_in = &held_.emplace_back(std::move(f));
    outputs_.emplace_back(stand_in, y);
    return stand_in;
  }
  // Runs after the float32 call succeeded.
  Status Finish() {
    for (auto& [stand_in, target] : outputs_) {
      SLUICE_RETURN_IF_ERROR(backend_.Cast(*stand_in, 1.0f, target));
    }
    return Status::OK();
  }

 private:
  // A bfloat16 tensor must be on the backend's device (with storage): the
  // message names the method the caller called, not Cast.
  Status Check(std::string_view name, const DeviceTensor& t) const {
    return CheckTensors(method_, backend_.device(), DType::kBFloat16, {{name, &t}});
  }

  Backend& backend_;
  std::string_view method_;
  std::deque<DeviceTensor> held_;  // stable addresses for the stand-ins
  std::vector<std::pair<DeviceTensor*, DeviceTensor*>> outputs_;
};

}  // namespace

Status Fill(Backend& backend, float value, DeviceTensor* x) {
  Staging s(backend, "Fill");
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor * xf, s.Out("x", x, false));
  SLUICE_RETURN_IF_ERROR(backend.Fill(value, xf));
  return s.Finish();
}

Status Axpby(Backend& backend, float alpha, const DeviceTensor& x, float beta, DeviceTensor* y) {
  Staging s(backend, "Axpby");
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor xf, s.In("x", x));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor * yf, s.Out("y", y, beta != 0.0f));
  SLUICE_RETURN_IF_ERROR(backend.Axpby(alpha, xf, beta, yf));
  return s.Finish();
}

Status Multiply(Backend& backend, const DeviceTensor& a, const DeviceTensor& b, DeviceTensor* y) {
  Staging s(backend, "Multiply");
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor af, s.In("a", a));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor bf, s.In("b", b));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor * yf, s.Out("y", y, false));
  SLUICE_RETURN_IF_ERROR(backend.Multiply(af, bf, yf));
  return s.Finish();
}

Status DropoutMask(Backend& backend, float rate, uint64_t seed, uint64_t stream,
                   const DeviceTensor* stream_counter, DeviceTensor* mask) {
  Staging s(backend, "DropoutMask");
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor * mf, s.Out("mask", mask, false));
  SLUICE_RETURN_IF_ERROR(stream_counter != nullptr
                             ? backend.DropoutMaskFromCounter(rate, seed, *stream_counter, mf)
                             : backend.DropoutMask(rate, seed, stream, mf));
  return s.Finish();
}

Status MatMul(Backend& backend, const DeviceTensor& a, bool transpose_a, const DeviceTensor& b,
              bool transpose_b, float beta, DeviceTensor* c) {
  Staging s(backend, "MatMul");
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor af, s.In("a", a));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor bf, s.In("b", b));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor * cf, s.Out("c", c, beta != 0.0f));
  SLUICE_RETURN_IF_ERROR(backend.MatMul(af, transpose_a, bf, transpose_b, beta, cf));
  return s.Finish();
}

Status BiasAdd(Backend& backend, const DeviceTensor& bias, DeviceTensor* y) {
  Staging s(backend, "BiasAdd");
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor bf, s.In("bias", bias));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor * yf, s.Out("y", y, true));
  SLUICE_RETURN_IF_ERROR(backend.BiasAdd(bf, yf));
  return s.Finish();
}

Status BiasGrad(Backend& backend, const DeviceTensor& dy, float beta, DeviceTensor* db) {
  Staging s(backend, "BiasGrad");
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor dyf, s.In("dy", dy));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor * dbf, s.Out("db", db, beta != 0.0f));
  SLUICE_RETURN_IF_ERROR(backend.BiasGrad(dyf, beta, dbf));
  return s.Finish();
}

Status Conv2DForward(Backend& backend, const DeviceTensor& x, const DeviceTensor& filter,
                     const DeviceTensor* bias, const Window2D& window, DeviceTensor* y) {
  Staging s(backend, "Conv2DForward");
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor xf, s.In("x", x));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor ff, s.In("filter", filter));
  SLUICE_ASSIGN_OR_RETURN(const DeviceTensor* bf, s.In("bias", bias));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor * yf, s.Out("y", y, false));
  SLUICE_RETURN_IF_ERROR(backend.Conv2DForward(xf, ff, bf, window, yf));
  return s.Finish();
}

Status Conv2DBackwardData(Backend& backend, const DeviceTensor& dy, const DeviceTensor& filter,
                          const Window2D& window, DeviceTensor* dx) {
  Staging s(backend, "Conv2DBackwardData");
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor dyf, s.In("dy", dy));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor ff, s.In("filter", filter));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor * dxf, s.Out("dx", dx, false));
  SLUICE_RETURN_IF_ERROR(backend.Conv2DBackwardData(dyf, ff, window, dxf));
  return s.Finish();
}

Status Conv2DBackwardFilter(Backend& backend, const DeviceTensor& x, const DeviceTensor& dy,
                            const Window2D& window, DeviceTensor* dfilter, DeviceTensor* dbias) {
  Staging s(backend, "Conv2DBackwardFilter");
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor xf, s.In("x", x));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor dyf, s.In("dy", dy));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor * dff, s.Out("dfilter", dfilter, false));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor * dbf, s.Out("dbias", dbias, false));
  SLUICE_RETURN_IF_ERROR(backend.Conv2DBackwardFilter(xf, dyf, window, dff, dbf));
  return s.Finish();
}

Status Pool2DForward(Backend& backend, PoolMode mode, const DeviceTensor& x, const Window2D& window,
                     DeviceTensor* y, DeviceTensor* workspace) {
  Staging s(backend, "Pool2DForward");
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor xf, s.In("x", x));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor * yf, s.Out("y", y, false));
  SLUICE_RETURN_IF_ERROR(backend.Pool2DForward(mode, xf, window, yf, workspace));
  return s.Finish();
}

Status Pool2DBackward(Backend& backend, PoolMode mode, const DeviceTensor& x, const DeviceTensor& y,
                      const DeviceTensor& dy, const DeviceTensor& workspace, const Window2D& window,
                      DeviceTensor* dx) {
  Staging s(backend, "Pool2DBackward");
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor xf, s.In("x", x));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor yf, s.In("y", y));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor dyf, s.In("dy", dy));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor * dxf, s.Out("dx", dx, false));
  SLUICE_RETURN_IF_ERROR(backend.Pool2DBackward(mode, xf, yf, dyf, workspace, window, dxf));
  return s.Finish();
}

Status ActivationForward(Backend& backend, Activation f, const DeviceTensor& x, DeviceTensor* y) {
  Staging s(backend, "ActivationForward");
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor xf, s.In("x", x));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor * yf, s.Out("y", y, false));
  SLUICE_RETURN_IF_ERROR(backend.ActivationForward(f, xf, yf));
  return s.Finish();
}

Status ActivationBackward(Backend& backend, Activation f, const DeviceTensor& y,
                          const DeviceTensor& dy, DeviceTensor* dx) {
  Staging s(backend, "ActivationBackward");
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor yf, s.In("y", y));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor dyf, s.In("dy", dy));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor * dxf, s.Out("dx", dx, false));
  SLUICE_RETURN_IF_ERROR(backend.ActivationBackward(f, yf, dyf, dxf));
  return s.Finish();
}

Status CrossEntropy(Backend& backend, const DeviceTensor& pred, const DeviceTensor& labels,
                    bool from_logits, float grad_scale, DeviceTensor* loss, DeviceTensor* dpred) {
  Staging s(backend, "CrossEntropy");
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor pf, s.In("pred", pred));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor lf, s.In("labels", labels));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor * lossf, s.Out("loss", loss, false));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor * df, s.Out("dpred", dpred, false));
  SLUICE_RETURN_IF_ERROR(backend.CrossEntropy(pf, lf, from_logits, grad_scale, lossf, df));
  return s.Finish();
}

Status MeanSquaredError(Backend& backend, const DeviceTensor& pred, const DeviceTensor& target,
                        float grad_scale, DeviceTensor* loss, DeviceTensor* dpred) {
  Staging s(backend, "MeanSquaredError");
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor pf, s.In("pred", pred));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor tf, s.In("target", target));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor * lossf, s.Out("loss", loss, false));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor * df, s.Out("dpred", dpred, false));
  SLUICE_RETURN_IF_ERROR(backend.MeanSquaredError(pf, tf, grad_scale, lossf, df));
  return s.Finish();
}

Result<double> Sum(Backend& backend, const DeviceTensor& x) {
  Staging s(backend, "Sum");
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor xf, s.In("x", x));
  return backend.Sum(xf);
}

Result<int64_t> CountArgMaxMatches(Backend& backend, const DeviceTensor& scores,
                                   const DeviceTensor& labels) {
  Staging s(backend, "CountArgMaxMatches");
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor sf, s.In("scores", scores));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor lf, s.In("labels", labels));
  return backend.CountArgMaxMatches(sf, lf);
}

}  // namespace in_float32
}  // namespace sluice::nn::kit
