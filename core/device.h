// Device: where a tensor's bytes live and where work on them runs. The one
// device vocabulary of sluice: the pipeline's prefetch_to_device, the device
// runtime's streams and allocators, and the training core's backends all
// name devices with it.
//
//   Device::Cpu()      "cpu:0"   host memory (cpu:N for N > 0 names extra
//                                host replicas of the training core)
//   Device::Gpu(1)     "gpu:1"   logical GPU 1 (device/config.h)
//
// Parse accepts sluice's names and TensorFlow's: "cpu", "cpu:0", "gpu",
// "gpu:1", "cuda:1", "/cpu:0", "/gpu:1", "/device:GPU:1" (any case).
//
// Thread-safety: a plain value type.
#ifndef SLUICE_CORE_DEVICE_H_
#define SLUICE_CORE_DEVICE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "sluice/core/result.h"

namespace sluice {

enum class DeviceKind : uint8_t { kCpu, kGpu };

class Device {
 public:
  // cpu:0.
  Device() = default;
  static Device Cpu(int index = 0) { return Device(DeviceKind::kCpu, index); }
  static Device Gpu(int index = 0) { return Device(DeviceKind::kGpu, index); }
  // See the top of this file; InvalidArgument naming the text otherwise.
  static Result<Device> Parse(std::string_view name);

  DeviceKind kind() const { return kind_; }
  bool is_cpu() const { return kind_ == DeviceKind::kCpu; }
  bool is_gpu() const { return kind_ == DeviceKind::kGpu; }
  int index() const { return index_; }
  // "cpu:0", "gpu:1".
  std::string ToString() const;

  friend bool operator==(const Device&, const Device&) = default;

 private:
  Device(DeviceKind kind, int index) : kind_(kind), index_(index) {}
  DeviceKind kind_ = DeviceKind::kCpu;
  int index_ = 0;
};

// What the owner of device memory records about its use (the device
// runtime: the events of the streams that used a block), carried by the
// memory's Buffer (Buffer::WrapDevice). Opaque here.
class DeviceMemoryUses {
 public:
  virtual ~DeviceMemoryUses() = default;
};

}  // namespace sluice

#endif  // SLUICE_CORE_DEVICE_H_
