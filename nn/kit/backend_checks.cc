#include "sluice/nn/kit/backend_checks.h"

#include <optional>

namespace sluice::nn::kit {

std::string DescribeArgs(std::initializer_list<Arg> args) {
  std::string out;
  for (const Arg& a : args) {
    if (!out.empty()) out += ", ";
    out += a.first;
    out += ' ';
    out += a.second != nullptr ? a.second->DebugString() : "null";
  }
  return out;
}

Status Invalid(std::string_view method, std::string_view problem, std::initializer_list<Arg> args) {
  std::string msg(method);
  msg += ": ";
  msg += problem;
  if (args.size() > 0) msg += " (" + DescribeArgs(args) + ")";
  return Status::InvalidArgument(msg);
}

Status CheckTensors(std::string_view method, Device device, DType dtype,
                    std::initializer_list<Arg> args) {
  for (const Arg& a : args) {
    if (a.second == nullptr) {
      return Status::InvalidArgument(std::string(method) + ": " + std::string(a.first) +
                                     " is null");
    }
    const DeviceTensor& t = *a.second;
    if (t.device() != device) {
      return Invalid(method, std::string(a.first) + " is not on " + device.ToString(), {a});
    }
    if (t.dtype() != dtype) {
      return Invalid(method, std::string(a.first) + " must be " + std::string(DTypeName(dtype)),
                     {a});
    }
    if (t.num_elements() > 0 && t.empty()) {
      return Invalid(method, std::string(a.first) + " has no storage", {a});
    }
  }
  return Status::OK();
}

Status CheckFloatTensors(std::string_view method, Device device, FloatTypes types,
                         std::initializer_list<Arg> args) {
  if (types == FloatTypes::kFloat32) return CheckTensors(method, device, DType::kFloat32, args);
  for (const Arg& a : args) {
    const DeviceTensor* t = a.second;
    const bool is_float =
        t == nullptr || t->dtype() == DType::kFloat32 || t->dtype() == DType::kBFloat16;
    if (!is_float && t->device() == device) {
      return Invalid(method, std::string(a.first) + " must be float32 or bfloat16", {a});
    }
    // Null, another device, no storage: CheckTensors' errors, in its order.
    SLUICE_RETURN_IF_ERROR(
        CheckTensors(method, device, t != nullptr ? t->dtype() : DType::kFloat32, {a}));
  }
  return Status::OK();
}

Status CheckSameShape(std::string_view method, const Arg& a, const Arg& b) {
  if (a.second->shape() == b.second->shape()) return Status::OK();
  return Invalid(method, std::string(a.first) + " and " + std::string(b.first) + " differ in shape",
                 {a, b});
}

Status CheckCounter(std::string_view method, Device device, const DeviceTensor* counter) {
  SLUICE_RETURN_IF_ERROR(CheckTensors(method, device, DType::kInt64, {{"counter", counter}}));
  if (counter->num_elements() != 1) {
    return Invalid(method, "the counter must hold one int64", {{"counter", counter}});
  }
  return Status::OK();
}

Status CheckNumeric(std::string_view method, DType dtype) {
  if (dtype == DType::kString) {
    return Status::InvalidArgument(std::string(method) +
                                   ": string tensors cannot live on a device");
  }
  return Status::OK();
}

Status CheckAllocate(DType dtype, const Shape& shape) {
  SLUICE_RETURN_IF_ERROR(CheckNumeric("Allocate", dtype));
  std::optional<int64_t> n = shape.CheckedNumElements();
  if (!n || *n < 0 || static_cast<uint64_t>(*n) > Buffer::kMaxAllocation / DTypeSize(dtype)) {
    return Status::InvalidArgument("Allocate: shape " + shape.ToString() +
                                   " is not a valid tensor shape");
  }
  return Status::OK();
}

Status CheckCopyFromHost(Device device, const Tensor& host, const DeviceTensor* dst) {
  SLUICE_RETURN_IF_ERROR(CheckNumeric("CopyFromHost", host.dtype()));
  if (dst == nullptr) return Status::InvalidArgument("CopyFromHost: dst is null");
  SLUICE_RETURN_IF_ERROR(CheckTensors("CopyFromHost", device, host.dtype(), {{"dst", dst}}));
  if (host.num_elements() != dst->num_elements()) {
    return Invalid("CopyFromHost",
                   "element counts differ: host " + std::string(DTypeName(host.dtype())) +
                       host.shape().ToString(),
                   {{"dst", dst}});
  }
  return Status::OK();
}

Status CheckCopy(Device device, const DeviceTensor& src, const DeviceTensor* dst) {
  if (dst == nullptr) return Status::InvalidArgument("Copy: dst is null");
  SLUICE_RETURN_IF_ERROR(CheckTensors("Copy", device, src.dtype(), {{"src", &src}, {"dst", dst}}));
  if (src.num_elements() != dst->num_elements()) {
    return Invalid("Copy", "element counts differ", {{"src", &src}, {"dst", dst}});
  }
  return Status::OK();
}

}  // namespace sluice::nn::kit
