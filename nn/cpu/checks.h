// Argument checks shared by the CPU backend's methods (internal).
//
// Every failure is InvalidArgument and reads
//   "<Method>: <problem> (<name> cpu:0 float32[2,3], <name> ...)"
// so the caller sees which call and which tensors were wrong.
#ifndef SLUICE_NN_CPU_CHECKS_H_
#define SLUICE_NN_CPU_CHECKS_H_

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "sluice/core/status.h"
#include "sluice/nn/device.h"
#include "sluice/nn/device_tensor.h"

namespace sluice::nn::cpu {

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

// Checks that `b` has exactly `a`'s shape.
Status CheckSameShape(std::string_view method, const Arg& a, const Arg& b);

}  // namespace sluice::nn::cpu

#endif  // SLUICE_NN_CPU_CHECKS_H_
