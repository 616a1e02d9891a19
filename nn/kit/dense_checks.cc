// The dense-family argument checks (dense_checks.h).
#include "sluice/nn/kit/dense_checks.h"

#include <initializer_list>
#include <string>
#include <string_view>

#include "sluice/nn/kit/backend_checks.h"

namespace sluice::nn::kit {

Status CheckFill(Device device, const DeviceTensor* x, FloatTypes types) {
  return CheckFloatTensors("Fill", device, types, {{"x", x}});
}

Status CheckCast(Device device, const DeviceTensor& x, const DeviceTensor* y) {
  if (x.dtype() == DType::kString) return Invalid("Cast", "x must be numeric", {{"x", &x}});
  SLUICE_RETURN_IF_ERROR(CheckTensors("Cast", device, x.dtype(), {{"x", &x}}));
  if (y != nullptr && y->dtype() == DType::kBFloat16) {
    SLUICE_RETURN_IF_ERROR(CheckTensors("Cast", device, DType::kBFloat16, {{"y", y}}));
  } else {
    SLUICE_RETURN_IF_ERROR(CheckTensors("Cast", device, DType::kFloat32, {{"y", y}}));
  }
  return CheckSameShape("Cast", {"x", &x}, {"y", y});
}

Status CheckAxpby(Device device, const DeviceTensor& x, const DeviceTensor* y, FloatTypes types) {
  SLUICE_RETURN_IF_ERROR(CheckFloatTensors("Axpby", device, types, {{"x", &x}, {"y", y}}));
  return CheckSameShape("Axpby", {"x", &x}, {"y", y});
}

Status CheckMultiply(Device device, const DeviceTensor& a, const DeviceTensor& b,
                     const DeviceTensor* y, FloatTypes types) {
  SLUICE_RETURN_IF_ERROR(
      CheckFloatTensors("Multiply", device, types, {{"a", &a}, {"b", &b}, {"y", y}}));
  SLUICE_RETURN_IF_ERROR(CheckSameShape("Multiply", {"a", &a}, {"b", &b}));
  return CheckSameShape("Multiply", {"a", &a}, {"y", y});
}

Status CheckDropoutMask(Device device, float rate, const DeviceTensor* mask, FloatTypes types) {
  SLUICE_RETURN_IF_ERROR(CheckFloatTensors("DropoutMask", device, types, {{"mask", mask}}));
  if (!(rate >= 0.0f && rate < 1.0f)) {
    return Invalid("DropoutMask", "rate must be in [0, 1), got " + std::to_string(rate),
                   {{"mask", mask}});
  }
  return Status::OK();
}

Result<MatMulDims> CheckMatMul(Device device, const DeviceTensor& a, bool transpose_a,
                               const DeviceTensor& b, bool transpose_b, const DeviceTensor* c,
                               DType operands, DType out) {
  constexpr std::string_view kMethod = "MatMul";
  SLUICE_RETURN_IF_ERROR(CheckTensors(kMethod, device, operands, {{"a", &a}, {"b", &b}}));
  SLUICE_RETURN_IF_ERROR(CheckTensors(kMethod, device, out, {{"c", c}}));
  if (a.rank() != 2 || b.rank() != 2 || c->rank() != 2) {
    return Invalid(kMethod, "a, b and c must be 2-D", {{"a", &a}, {"b", &b}, {"c", c}});
  }
  MatMulDims d;
  d.m = transpose_a ? a.dim(1) : a.dim(0);
  d.k = transpose_a ? a.dim(0) : a.dim(1);
  const int64_t kb = transpose_b ? b.dim(1) : b.dim(0);
  d.n = transpose_b ? b.dim(0) : b.dim(1);
  const std::string ops =
      std::string(transpose_a ? "a^T" : "a") + " · " + (transpose_b ? "b^T" : "b");
  if (d.k != kb) {
    return Invalid(kMethod, "inner dimensions of " + ops + " differ",
                   {{"a", &a}, {"b", &b}, {"c", c}});
  }
  if (c->dim(0) != d.m || c->dim(1) != d.n) {
    return Invalid(kMethod,
                   "c must be [" + std::to_string(d.m) + "," + std::to_string(d.n) + "] for " + ops,
                   {{"a", &a}, {"b", &b}, {"c", c}});
  }
  return d;
}

Status CheckBiasAdd(Device device, const DeviceTensor& bias, const DeviceTensor* y,
                    FloatTypes types) {
  constexpr std::string_view kMethod = "BiasAdd";
  SLUICE_RETURN_IF_ERROR(CheckFloatTensors(kMethod, device, types, {{"bias", &bias}, {"y", y}}));
  if (bias.rank() != 1 || y->rank() < 1 || y->dim(y->rank() - 1) != bias.dim(0)) {
    return Invalid(kMethod, "bias must be 1-D with y's last dimension",
                   {{"bias", &bias}, {"y", y}});
  }
  return Status::OK();
}

Status CheckBiasGrad(Device device, const DeviceTensor& dy, const DeviceTensor* db,
                     FloatTypes types) {
  constexpr std::string_view kMethod = "BiasGrad";
  SLUICE_RETURN_IF_ERROR(CheckFloatTensors(kMethod, device, types, {{"dy", &dy}, {"db", db}}));
  if (db->rank() != 1 || dy.rank() < 1 || dy.dim(dy.rank() - 1) != db->dim(0)) {
    return Invalid(kMethod, "db must be 1-D with dy's last dimension", {{"dy", &dy}, {"db", db}});
  }
  return Status::OK();
}

Status CheckSum(Device device, const DeviceTensor& x) {
  return CheckTensors("Sum", device, DType::kFloat32, {{"x", &x}});
}

Status CheckCountArgMaxMatches(Device device, const DeviceTensor& scores,
                               const DeviceTensor& labels) {
  constexpr std::string_view kMethod = "CountArgMaxMatches";
  SLUICE_RETURN_IF_ERROR(CheckTensors(kMethod, device, DType::kFloat32, {{"scores", &scores}}));
  SLUICE_RETURN_IF_ERROR(CheckTensors(kMethod, device, labels.dtype(), {{"labels", &labels}}));
  const std::initializer_list<Arg> all = {{"scores", &scores}, {"labels", &labels}};
  if (scores.rank() != 2 || scores.dim(1) == 0) {
    return Invalid(kMethod, "scores must be [n, c], c > 0", all);
  }
  const int64_t n = scores.dim(0);
  const DType dt = labels.dtype();
  if (dt == DType::kInt32 || dt == DType::kInt64) {
    if (!((labels.rank() == 1 && labels.dim(0) == n) ||
          (labels.rank() == 2 && labels.dim(0) == n && labels.dim(1) == 1))) {
      return Invalid(kMethod, "class-id labels must be [n] or [n, 1]", all);
    }
  } else if (dt == DType::kFloat32) {
    if (labels.shape() != scores.shape()) {
      return Invalid(kMethod, "dense labels must be [n, c]", all);
    }
  } else {
    return Invalid(kMethod, "labels must be int32, int64 or float32", all);
  }
  return Status::OK();
}

}  // namespace sluice::nn::kit
