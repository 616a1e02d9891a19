// Argument checks of the backends' elementwise, dense-algebra and reduction
// methods (Fill ... DropoutMask, MatMul, BiasAdd, BiasGrad, Sum,
// CountArgMaxMatches), shared by nn/cpu/ and nn/cuda/ so both report
// the same errors. Each returns OK or the method's InvalidArgument
// (backend_checks.h's format); `device` is the backend's device. Part of
// the backend kit (nn/kit/); plain functions, thread-safe.
#ifndef SLUICE_NN_KIT_DENSE_CHECKS_H_
#define SLUICE_NN_KIT_DENSE_CHECKS_H_

#include <cstdint>

#include "sluice/core/device.h"
#include "sluice/core/device_tensor.h"
#include "sluice/core/result.h"
#include "sluice/core/status.h"
#include "sluice/nn/kit/backend_checks.h"

namespace sluice::nn::kit {

// x float32 (or one of `types`, as every `types` below).
Status CheckFill(Device device, const DeviceTensor* x, FloatTypes types = FloatTypes::kFloat32);
// x numeric (any dtype), y float32 or bfloat16 of x's shape.
Status CheckCast(Device device, const DeviceTensor& x, const DeviceTensor* y);
// x and y float32 of one shape.
Status CheckAxpby(Device device, const DeviceTensor& x, const DeviceTensor* y,
                  FloatTypes types = FloatTypes::kFloat32);
// a, b and y float32 of one shape.
Status CheckMultiply(Device device, const DeviceTensor& a, const DeviceTensor& b,
                     const DeviceTensor* y, FloatTypes types = FloatTypes::kFloat32);
// mask float32, 0 <= rate < 1.
Status CheckDropoutMask(Device device, float rate, const DeviceTensor* mask,
                        FloatTypes types = FloatTypes::kFloat32);

// MatMul's sizes: op(a) is [m, k], op(b) [k, n], c [m, n].
struct MatMulDims {
  int64_t m = 0, k = 0, n = 0;
};
// a and b of dtype `operands`, c of dtype `out`, all 2-D, with matching
// inner dimensions and c [m, n].
Result<MatMulDims> CheckMatMul(Device device, const DeviceTensor& a, bool transpose_a,
                               const DeviceTensor& b, bool transpose_b, const DeviceTensor* c,
                               DType operands = DType::kFloat32, DType out = DType::kFloat32);
// bias float32 1-D with y's last dimension (y float32, rank >= 1); each
// of `types` with FloatTypes::kFloat32OrBFloat16.
Status CheckBiasAdd(Device device, const DeviceTensor& bias, const DeviceTensor* y,
                    FloatTypes types = FloatTypes::kFloat32);
// db float32 1-D with dy's last dimension (dy float32, rank >= 1); each of
// `types` likewise.
Status CheckBiasGrad(Device device, const DeviceTensor& dy, const DeviceTensor* db,
                     FloatTypes types = FloatTypes::kFloat32);

// x float32.
Status CheckSum(Device device, const DeviceTensor& x);
// scores float32 [n, c], c > 0; labels int32/int64 [n] or [n, 1], or
// float32 [n, c].
Status CheckCountArgMaxMatches(Device device, const DeviceTensor& scores,
                               const DeviceTensor& labels);

}  // namespace sluice::nn::kit

#endif  // SLUICE_NN_KIT_DENSE_CHECKS_H_
