#include "sluice/core/dlpack.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sluice {
namespace {

// DLPack 0.8's kDLBool, which the 0.6 header lacks: FromDLPack reads it as
// bool (PyTorch 2 exports its bool tensors so).
constexpr uint8_t kDLBoolCode = 6;

// What a managed tensor from ToDLPack points at: the exported Tensor (so
// its Buffer) and the shape and strides arrays dl_tensor points into.
struct Exported {
  DLManagedTensor managed{};
  Tensor tensor;
  std::vector<int64_t> shape_and_strides;  // rank dims, then rank strides
};

void DeleteExported(DLManagedTensor* self) {
  if (self != nullptr) delete static_cast<Exported*>(self->manager_ctx);
}

DLDataType ToDLDataType(DType dtype) {
  switch (dtype) {
    case DType::kBool: return {kDLUInt, 8, 1};
    case DType::kUInt8: return {kDLUInt, 8, 1};
    case DType::kInt32: return {kDLInt, 32, 1};
    case DType::kInt64: return {kDLInt, 64, 1};
    case DType::kFloat16: return {kDLFloat, 16, 1};
    case DType::kBFloat16: return {kDLBfloat, 16, 1};
    case DType::kFloat32: return {kDLFloat, 32, 1};
    case DType::kFloat64: return {kDLFloat, 64, 1};
    case DType::kString: break;
  }
  return {kDLOpaqueHandle, 0, 0};
}

std::optional<DType> FromDLDataType(DLDataType t) {
  switch (t.code) {
    case kDLUInt:
      if (t.bits == 8) return DType::kUInt8;
      break;
    case kDLInt:
      if (t.bits == 32) return DType::kInt32;
      if (t.bits == 64) return DType::kInt64;
      break;
    case kDLFloat:
      if (t.bits == 16) return DType::kFloat16;
      if (t.bits == 32) return DType::kFloat32;
      if (t.bits == 64) return DType::kFloat64;
      break;
    case kDLBfloat:
      if (t.bits == 16) return DType::kBFloat16;
      break;
    case kDLBoolCode:
      if (t.bits == 8) return DType::kBool;
      break;
    default: break;
  }
  return std::nullopt;
}

// "int16", "complex64", "code 9 with 8 bits".
std::string DLDataTypeName(DLDataType t) {
  const std::string bits = std::to_string(t.bits);
  switch (t.code) {
    case kDLInt: return "int" + bits;
    case kDLUInt: return "uint" + bits;
    case kDLFloat: return "float" + bits;
    case kDLBfloat: return "bfloat" + bits;
    case kDLComplex: return "complex" + bits;
    case kDLOpaqueHandle: return "opaque handle of " + bits + " bits";
    case kDLBoolCode: return "bool of " + bits + " bits";
    default: return "code " + std::to_string(t.code) + " with " + bits + " bits";
  }
}

std::string DLDeviceTypeName(DLDeviceType type) {
  switch (type) {
    case kDLCPU: return "kDLCPU";
    case kDLCUDA: return "kDLCUDA";
    case kDLCUDAHost: return "kDLCUDAHost";
    case kDLOpenCL: return "kDLOpenCL";
    case kDLVulkan: return "kDLVulkan";
    case kDLMetal: return "kDLMetal";
    case kDLVPI: return "kDLVPI";
    case kDLROCM: return "kDLROCM";
    case kDLROCMHost: return "kDLROCMHost";
    case kDLExtDev: return "kDLExtDev";
    case kDLCUDAManaged: return "kDLCUDAManaged";
  }
  return "device type " + std::to_string(static_cast<int>(type));
}

Status Invalid(const std::string& what) { return Status::InvalidArgument("FromDLPack: " + what); }

}  // namespace

Result<DLManagedTensor*> ToDLPack(const Tensor& tensor) {
  if (tensor.dtype() == DType::kString) {
    return Status::InvalidArgument("ToDLPack: a " + std::string(DTypeName(tensor.dtype())) +
                                   tensor.shape().ToString() +
                                   " tensor has no DLPack form (DLPack holds numbers only)");
  }
  auto exported = std::make_unique<Exported>();
  exported->tensor = tensor;
  const int rank = tensor.shape().rank();
  std::vector<int64_t>& dims = exported->shape_and_strides;
  dims.resize(2 * static_cast<size_t>(rank));
  int64_t stride = 1;
  for (int i = rank - 1; i >= 0; --i) {
    dims[i] = tensor.shape().dim(i);
    dims[rank + i] = stride;
    stride *= dims[i];
  }

  DLTensor& dl = exported->managed.dl_tensor;
  // const_cast: DLPack has no const tensors; the consumer shares the bytes.
  dl.data = const_cast<void*>(exported->tensor.raw_data());
  const Device device = tensor.device();
  dl.device = device.is_gpu() ? DLDevice{kDLCUDA, device.index()} : DLDevice{kDLCPU, 0};
  dl.ndim = rank;
  dl.dtype = ToDLDataType(tensor.dtype());
  dl.shape = rank > 0 ? dims.data() : nullptr;
  dl.strides = rank > 0 ? dims.data() + rank : nullptr;
  dl.byte_offset = 0;
  exported->managed.manager_ctx = exported.get();
  exported->managed.deleter = &DeleteExported;
  return &exported.release()->managed;
}

Result<Tensor> FromDLPack(DLManagedTensor* managed) {
  if (managed == nullptr) return Invalid("null DLManagedTensor");
  const DLTensor& dl = managed->dl_tensor;

  if (dl.dtype.lanes != 1) {
    return Invalid(DLDataTypeName(dl.dtype) + " with " + std::to_string(dl.dtype.lanes) +
                   " lanes: sluice reads scalar element types only (lanes 1)");
  }
  const std::optional<DType> dtype = FromDLDataType(dl.dtype);
  if (!dtype) {
    return Invalid("no sluice dtype for DLPack dtype " + DLDataTypeName(dl.dtype) +
                   " (sluice has bool, uint8, int32, int64, float16, bfloat16, float32, "
                   "float64)");
  }

  std::optional<Device> device;
  switch (dl.device.device_type) {
    case kDLCPU:
    case kDLCUDAHost: break;
    case kDLCUDA:
      if (dl.device.device_id < 0) {
        return Invalid("kDLCUDA device id " + std::to_string(dl.device.device_id) + " is negative");
      }
      device = Device::Gpu(dl.device.device_id);
      break;
    default:
      return Invalid("device " + DLDeviceTypeName(dl.device.device_type) +
                     " is not supported (sluice reads kDLCPU, kDLCUDAHost and kDLCUDA)");
  }

  if (dl.ndim < 0) return Invalid("negative ndim " + std::to_string(dl.ndim));
  if (dl.ndim > 0 && dl.shape == nullptr) {
    return Invalid("null shape for ndim " + std::to_string(dl.ndim));
  }
  std::vector<int64_t> dims(dl.shape, dl.shape + dl.ndim);
  for (int i = 0; i < dl.ndim; ++i) {
    if (dims[i] < 0) {
      return Invalid("dimension " + std::to_string(i) + " is negative (" + std::to_string(dims[i]) +
                     ")");
    }
  }
  const Shape shape(dims);
  const std::optional<int64_t> n = shape.CheckedNumElements();
  size_t bytes = 0;
  size_t total = 0;
  if (!n || __builtin_mul_overflow(static_cast<size_t>(*n), DTypeSize(*dtype), &bytes) ||
      __builtin_add_overflow(bytes, dl.byte_offset, &total)) {
    return Invalid("shape " + shape.ToString() + " of " + std::string(DTypeName(*dtype)) +
                   " at byte offset " + std::to_string(dl.byte_offset) +
                   " has more bytes than an address space");
  }

  // Row-major and compact: the stride of dimension i is the product of the
  // dimensions after it, except where dimension i has size 1 (never
  // stepped over) or there are no elements at all (nothing addressed).
  if (dl.strides != nullptr && *n > 0) {
    int64_t expected = 1;
    for (int i = dl.ndim - 1; i >= 0; --i) {
      if (dims[i] != 1 && dl.strides[i] != expected) {
        std::string got;
        for (int j = 0; j < dl.ndim; ++j) got += (j ? ", " : "") + std::to_string(dl.strides[j]);
        return Invalid("strides [" + got + "] of shape " + shape.ToString() +
                       " are not compact row-major: dimension " + std::to_string(i) +
                       " has stride " + std::to_string(dl.strides[i]) + ", not " +
                       std::to_string(expected) + " (copy it to a contiguous tensor first)");
      }
      expected *= dims[i];
    }
  }
  size_t offset = dl.byte_offset;
  if (dl.data == nullptr) {
    if (bytes > 0) {
      return Invalid("null data for " + std::string(DTypeName(*dtype)) + shape.ToString());
    }
    offset = total = 0;  // no elements: nothing to offset from
  }

  // From here on the Tensor owns `managed`. The flag keeps the deleter from
  // running should FromBuffer refuse after all (it checks what we checked).
  auto owns = std::make_shared<bool>(true);
  std::function<void()> release = [managed, owns] {
    if (*owns && managed->deleter != nullptr) managed->deleter(managed);
  };
  const Buffer buffer = device ? Buffer::WrapDevice(dl.data, total, std::move(release), *device,
                                                    /*uses=*/nullptr)
                               : Buffer::Wrap(dl.data, total, std::move(release));
  Result<Tensor> tensor = Tensor::FromBuffer(*dtype, shape, buffer, offset);
  if (!tensor.ok()) {
    *owns = false;
    return tensor.status().WithContext("FromDLPack");
  }
  return tensor;
}

}  // namespace sluice
