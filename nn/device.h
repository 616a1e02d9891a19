// Device: where a DeviceTensor's bytes live and which Backend computes on
// them. "cpu" (the default) or "gpu:N". The GPU backend registers itself
// when the gpu/ module is linked; nn/ itself never includes CUDA headers.
//
// Thread-safety: a plain value type.
#ifndef SLUICE_NN_DEVICE_H_
#define SLUICE_NN_DEVICE_H_

#include <string>
#include <string_view>

#include "sluice/core/result.h"

namespace sluice::nn {

enum class DeviceKind { kCpu, kGpu };

struct Device {
  DeviceKind kind = DeviceKind::kCpu;
  int index = 0;

  static Device Cpu() { return {}; }
  static Device Gpu(int index = 0) { return {DeviceKind::kGpu, index}; }
  // "cpu", "cpu:0", "gpu", "gpu:1" (case-insensitive; "cuda" is taken for
  // "gpu"). InvalidArgument otherwise.
  static Result<Device> Parse(std::string_view text);
  // "cpu:0" / "gpu:1".
  std::string ToString() const;

  friend bool operator==(const Device&, const Device&) = default;
};

}  // namespace sluice::nn

#endif  // SLUICE_NN_DEVICE_H_
