// The backend kit (nn/kit/): argument checks for a Backend's methods,
// shared by the CPU backend (nn/cpu/) and the GPU backend (nn/cuda/)
// and public for any other backend, so that every backend names the same
// errors. Plain functions; thread-safe.
//
// Every failure is InvalidArgument and reads
//   "<Method>: <problem> (<name> cpu:0 float32[2,3], <name> ...)"
// so the caller sees which call and which tensors were wrong.
#ifndef SLUICE_NN_KIT_BACKEND_CHECKS_H_
#define SLUICE_NN_KIT_BACKEND_CHECKS_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "sluice/core/device.h"
#include "sluice/core/device_tensor.h"
#include "sluice/core/shape.h"
#include "sluice/core/status.h"
#include "sluice/core/tensor.h"

namespace sluice::nn::kit {

// A named tensor argument; a null tensor reads as "<name> null".
using Arg = std::pair<std::string_view, const DeviceTensor*>;

// "x cpu:0 float32[2,3], y cpu:0 float32[3]".
std::string DescribeArgs(std::initializer_list<Arg> args);

// InvalidArgument "<method>: <problem> (<args>)".
Status Invalid(std::string_view method, std::string_view problem, std::initializer_list<Arg> args);

// Checks that every tensor is non-null, on `device`, and has `dtype`; and
// that each has storage for its elements.
Status CheckTensors(std::string_view method, Device device, DType dtype,
                    std::initializer_list<Arg> args);

// The float types a method's tensors may have: float32 alone, or, for a
// backend with mixed-precision kernels of the method, float32 or bfloat16
// per tensor.
enum class FloatTypes : uint8_t { kFloat32, kFloat32OrBFloat16 };

// CheckTensors for float tensors: as above, with each dtype one of `types`.
Status CheckFloatTensors(std::string_view method, Device device, FloatTypes types,
                         std::initializer_list<Arg> args);

// Checks that `b` has exactly `a`'s shape.
Status CheckSameShape(std::string_view method, const Arg& a, const Arg& b);

// A step counter (AddToCounter, AdamStep::step_counter): an int64 scalar
// (one element) on `device`.
Status CheckCounter(std::string_view method, Device device, const DeviceTensor* counter);

// The checks of the memory methods, common to every backend:
// - Allocate: a numeric dtype and a shape whose bytes fit one allocation;
// - ToDevice: a numeric host tensor;
// - CopyFromHost: dst non-null, on `device`, of host's dtype and count;
// - Copy: src and dst on `device`, of one dtype and count.
Status CheckAllocate(DType dtype, const Shape& shape);
Status CheckNumeric(std::string_view method, DType dtype);
Status CheckCopyFromHost(Device device, const Tensor& host, const DeviceTensor* dst);
Status CheckCopy(Device device, const DeviceTensor& src, const DeviceTensor* dst);

}  // namespace sluice::nn::kit

#endif  // SLUICE_NN_KIT_BACKEND_CHECKS_H_
