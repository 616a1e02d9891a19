#include "sluice/nn/cpu/checks.h"

namespace sluice::nn::cpu {

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

Status CheckSameShape(std::string_view method, const Arg& a, const Arg& b) {
  if (a.second->shape() == b.second->shape()) return Status::OK();
  return Invalid(method, std::string(a.first) + " and " + std::string(b.first) + " differ in shape",
                 {a, b});
}

}  // namespace sluice::nn::cpu
