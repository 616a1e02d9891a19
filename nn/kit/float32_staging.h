// Float32 staging: how a backend runs a method on bfloat16 tensors (mixed
// precision, nn/policy.h) without a bfloat16 kernel of its own. Part of
// the backend kit (nn/kit/), used by the CPU and GPU backends.
//
// in_float32::M(backend, args...) runs backend.M on float32 stand-ins:
// each bfloat16 input is widened into float32 scratch (exact), each
// bfloat16 output gets float32 scratch (widened first when the method also
// reads it: MatMul's and Axpby's beta, BiasAdd's y), and after the float32
// call succeeds every stand-in is rounded into its output once (nearest
// even). Tensors that are not bfloat16 are passed as they are. So products
// of bfloat16 values accumulate in float32 and each output is rounded once,
// the numerics of a bfloat16 tensor-core kernel; a call that fails writes
// no output. A backend method checks its arguments allowing either type
// (FloatTypes::kFloat32OrBFloat16, nn/kit/backend_checks.h), so both
// backends name the same errors, then
//
//   if (kit::AnyBFloat16({&x, y})) return kit::in_float32::M(*this, ...);
//
// and leaves the rest of its body float32-only. A backend with a native
// bfloat16 kernel (the GPU backend's elementwise, pooling and loss kernels,
// cuBLAS, cuDNN) runs it instead and stages only what it cannot take.
//
// Thread-safety: as the backend's own methods.
#ifndef SLUICE_NN_KIT_FLOAT32_STAGING_H_
#define SLUICE_NN_KIT_FLOAT32_STAGING_H_

#include <cstdint>
#include <initializer_list>

#include "sluice/core/device_tensor.h"
#include "sluice/core/result.h"
#include "sluice/core/status.h"
#include "sluice/nn/backend.h"
#include "sluice/nn/window.h"

namespace sluice::nn::kit {

// True when any non-null tensor is bfloat16.
bool AnyBFloat16(std::initializer_list<const DeviceTensor*> tensors);

namespace in_float32 {

Status Fill(Backend& backend, float value, DeviceTensor* x);
Status Axpby(Backend& backend, float alpha, const DeviceTensor& x, float beta, DeviceTensor* y);
Status Multiply(Backend& backend, const DeviceTensor& a, const DeviceTensor& b, DeviceTensor* y);
// DropoutMask, or DropoutMaskFromCounter when stream_counter is non-null.
Status DropoutMask(Backend& backend, float rate, uint64_t seed, uint64_t stream,
                   const DeviceTensor* stream_counter, DeviceTensor* mask);
Status MatMul(Backend& backend, const DeviceTensor& a, bool transpose_a, const DeviceTensor& b,
              bool transpose_b, float beta, DeviceTensor* c);
Status BiasAdd(Backend& backend, const DeviceTensor& bias, DeviceTensor* y);
Status BiasGrad(Backend& backend, const DeviceTensor& dy, float beta, DeviceTensor* db);
Status Conv2DForward(Backend& backend, const DeviceTensor& x, const DeviceTensor& filter,
                     const DeviceTensor* bias, const Window2D& window, DeviceTensor* y);
Status Conv2DBackwardData(Backend& backend, const DeviceTensor& dy, const DeviceTensor& filter,
                          const Window2D& window, DeviceTensor* dx);
Status Conv2DBackwardFilter(Backend& backend, const DeviceTensor& x, const DeviceTensor& dy,
                            const Window2D& window, DeviceTensor* dfilter, DeviceTensor* dbias);
Status Pool2DForward(Backend& backend, PoolMode mode, const DeviceTensor& x, const Window2D& window,
                     DeviceTensor* y, DeviceTensor* workspace);
Status Pool2DBackward(Backend& backend, PoolMode mode, const DeviceTensor& x, const DeviceTensor& y,
                      const DeviceTensor& dy, const DeviceTensor& workspace, const Window2D& window,
                      DeviceTensor* dx);
Status ActivationForward(Backend& backend, Activation f, const DeviceTensor& x, DeviceTensor* y);
Status ActivationBackward(Backend& backend, Activation f, const DeviceTensor& y,
                          const DeviceTensor& dy, DeviceTensor* dx);
Status CrossEntropy(Backend& backend, const DeviceTensor& pred, const DeviceTensor& labels,
                    bool from_logits, float grad_scale, DeviceTensor* loss, DeviceTensor* dpred);
Status MeanSquaredError(Backend& backend, const DeviceTensor& pred, const DeviceTensor& target,
                        float grad_scale, DeviceTensor* loss, DeviceTensor* dpred);
Result<double> Sum(Backend& backend, const DeviceTensor& x);
Result<int64_t> CountArgMaxMatches(Backend& backend, const DeviceTensor& scores,
                                   const DeviceTensor& labels);

}  // namespace in_float32
}  // namespace sluice::nn::kit

#endif  // SLUICE_NN_KIT_FLOAT32_STAGING_H_
