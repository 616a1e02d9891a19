// DeviceTensor: a dense, row-major tensor whose bytes live on a Device.
//
// A cheap handle like sluice::Tensor, and a Tensor inside: storage() is the
// Tensor whose Buffer holds the bytes. On the CPU that is an ordinary host
// tensor, so a pipeline batch becomes a DeviceTensor without a copy. On a
// GPU the Buffer wraps device memory, and data() is a device pointer that
// host code must never dereference. The device runtime (device/) makes
// device memory and copies between host and device; the training core's
// backends compute on it.
//
// Ownership: copies, Reshape() and Slice() share the bytes, which are freed
// (back to their allocator) when the last handle and the last copy of
// storage() are gone. Memory from the device runtime's caching allocator
// also carries the record of the streams that used it (uses(), in its
// Buffer, for device/'s RecordUse): its block is reused only after that
// work has run.
//
// Thread-safety: as sluice::Tensor. Concurrent reads of the handle are
// fine; the bytes are as safe as any memory several threads or streams use.
#ifndef SLUICE_CORE_DEVICE_TENSOR_H_
#define SLUICE_CORE_DEVICE_TENSOR_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "sluice/core/device.h"
#include "sluice/core/dtype.h"
#include "sluice/core/result.h"
#include "sluice/core/shape.h"
#include "sluice/core/tensor.h"

namespace sluice {

class DeviceTensor {
 public:
  // Empty (no bytes) on cpu:0.
  DeviceTensor() = default;
  // Adopts `storage` as the bytes of a tensor on `device`. `device` is
  // normally storage.device(); backends that run GPU code on host memory
  // (the GPU backend on the host, for tests) tag host bytes as a GPU's.
  DeviceTensor(Device device, Tensor storage) : device_(device), storage_(std::move(storage)) {}
  // `storage` on the device its bytes are on (Tensor::device()).
  explicit DeviceTensor(Tensor storage) : device_(storage.device()), storage_(std::move(storage)) {}

  const Device& device() const { return device_; }
  DType dtype() const { return storage_.dtype(); }
  const Shape& shape() const { return storage_.shape(); }
  int64_t dim(int i) const { return storage_.shape().dim(i); }
  int rank() const { return storage_.shape().rank(); }
  int64_t num_elements() const { return storage_.num_elements(); }
  size_t byte_size() const { return storage_.byte_size(); }
  // True for a default-constructed (null) tensor.
  bool empty() const { return !storage_.buffer(); }

  // The element pointer, on the device (dereference on the host only for
  // CPU tensors). REQUIRES: T matches dtype() (checked).
  template <typename T>
  T* data() {
    return storage_.flat<T>().data();
  }
  template <typename T>
  const T* data() const {
    return storage_.flat<T>().data();
  }
  void* raw_data() { return storage_.raw_data(); }
  const void* raw_data() const { return storage_.raw_data(); }

  // The same bytes with another shape of equal element count.
  Result<DeviceTensor> Reshape(const Shape& shape) const;
  // Rows [begin, end) along dimension 0, sharing bytes.
  Result<DeviceTensor> Slice(int64_t begin, int64_t end) const;

  // The tensor holding the bytes (device memory for a GPU tensor).
  const Tensor& storage() const { return storage_; }
  // The memory owner's record of uses (Buffer::device_uses); null when it
  // keeps none.
  DeviceMemoryUses* uses() const { return storage_.buffer().device_uses(); }

  // "gpu:0 float32[32,10]".
  std::string DebugString() const;

 private:
  Device device_;
  Tensor storage_;
};

}  // namespace sluice

#endif  // SLUICE_CORE_DEVICE_TENSOR_H_
