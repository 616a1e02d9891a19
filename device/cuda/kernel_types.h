// The plain types every CUDA twin's element loops share (ops/cuda's image
// kernels, nn/cuda's backend kernels): where a loop runs (KernelTarget) and
// the element types (ElemType, numbered as sluice::DType). Shared by C++20
// (g++) and CUDA C++17 (nvcc) code: no sluice or CUDA headers. Part of the
// device runtime's kit for the CUDA twins (device/cuda/); values only.
#ifndef SLUICE_DEVICE_CUDA_KERNEL_TYPES_H_
#define SLUICE_DEVICE_CUDA_KERNEL_TYPES_H_

#include <cstdint>

namespace sluice::gpu_internal {

// Where a loop runs: a CUDA kernel queued on `cuda_stream` (a cudaStream_t
// of the current device), or, when it is null, a loop that runs to the end
// before the call returns.
struct KernelTarget {
  void* cuda_stream = nullptr;
};

// Element types, numbered as sluice::DType (checked in image_ops.cc).
enum class ElemType : uint8_t {
  kBool,
  kUInt8,
  kInt32,
  kInt64,
  kFloat16,
  kBFloat16,
  kFloat32,
  kFloat64,
};

// Bytes per element.
constexpr int ElemTypeSize(ElemType type) {
  switch (type) {
    case ElemType::kBool:
    case ElemType::kUInt8: return 1;
    case ElemType::kFloat16:
    case ElemType::kBFloat16: return 2;
    case ElemType::kInt32:
    case ElemType::kFloat32: return 4;
    case ElemType::kInt64:
    case ElemType::kFloat64: return 8;
  }
  return 1;
}

}  // namespace sluice::gpu_internal

#endif  // SLUICE_DEVICE_CUDA_KERNEL_TYPES_H_
