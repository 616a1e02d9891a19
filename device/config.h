// Process-wide GPU configuration, after TensorFlow's tf.config chapter:
// which physical GPUs are used, how each one's memory is managed, and how
// it is split into logical devices.
//
//   gpu::SetVisibleDevices({0});                          // set_visible_devices
//   gpu::SetLogicalDeviceConfiguration(0, {{.memory_limit = 1 << 30},
//                                          {.memory_limit = 1 << 30}});
//   for (auto& d : gpu::ListLogicalDevices()) ...        // gpu:0, gpu:1
//   SLUICE_ASSIGN_OR_RETURN(gpu::CachingAllocator* a, gpu::GetDeviceAllocator(1));
//
// Configuration is allowed until the GPU runtime initializes, which happens
// on the first ListLogicalDevices, GetDeviceAllocator or GetMemoryInfo.
// After that, the Set* functions return FailedPrecondition (TensorFlow
// raises RuntimeError). Physical indices are those of ListPhysicalDevices().
//
// Memory policy of a logical device: memory_limit == 0 grows on demand
// until the GPU is full (the default, TensorFlow's set_memory_growth(True));
// a positive limit caps what its allocator reserves. Exceeding either is
// ResourceExhausted with the sizes in the message. Unlike TensorFlow,
// nothing is reserved up front and limits are in bytes, not MiB.
//
// Thread-safety: every function is thread-safe. Allocators live until the
// process exits (they are never destroyed, so no cudaFree runs after the
// driver has shut down).
#ifndef SLUICE_DEVICE_CONFIG_H_
#define SLUICE_DEVICE_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "sluice/core/result.h"
#include "sluice/core/status.h"
#include "sluice/device/allocator_stats.h"
#include "sluice/device/caching_allocator.h"

namespace sluice::gpu {

struct LogicalDeviceConfiguration {
  int64_t memory_limit = 0;  // bytes; 0 grows on demand
};

struct LogicalDevice {
  int index = 0;           // "gpu:<index>": Device::Gpu(index)
  int physical_index = 0;  // the GPU it lives on
  int64_t memory_limit = 0;
  // "/device:GPU:1 (on /physical_device:GPU:0, limit 1.0 GiB)".
  std::string ToString() const;
};

// Restricts this process to these physical GPUs, in this order (logical
// devices are numbered in it). {} hides every GPU. InvalidArgument for an
// unknown or repeated index. The default is every physical GPU.
Status SetVisibleDevices(const std::vector<int>& physical_indices);
std::vector<int> GetVisibleDevices();

// Splits physical GPU `physical_index` into configs.size() logical devices
// with their own limits; one entry just sets that GPU's memory limit, {}
// restores the default (one device growing on demand). InvalidArgument for
// a negative limit, a zero limit among several entries, or limits summing to
// more than the GPU's memory.
Status SetLogicalDeviceConfiguration(int physical_index,
                                     const std::vector<LogicalDeviceConfiguration>& configs);
// The same as one-entry SetLogicalDeviceConfiguration.
Status SetMemoryLimit(int physical_index, int64_t bytes);
Result<std::vector<LogicalDeviceConfiguration>> GetLogicalDeviceConfiguration(int physical_index);

// Initializes the runtime. Empty when no GPU is visible.
std::vector<LogicalDevice> ListLogicalDevices();

// The caching allocator of logical device `index` (created on first use).
// NotFound naming the device when there is no such logical device.
Result<CachingAllocator*> GetDeviceAllocator(int index);
// tf.config.experimental.get_memory_info / reset_memory_stats.
Result<AllocatorStats> GetMemoryInfo(int index);
Status ResetMemoryStats(int index);

}  // namespace sluice::gpu

#endif  // SLUICE_DEVICE_CONFIG_H_
