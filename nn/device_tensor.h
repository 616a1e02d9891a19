// DeviceTensor: a dense, row-major array whose bytes live on a Device.
//
// A cheap handle like sluice::Tensor: copies share the bytes; Reshape()
// returns a view. On the CPU the storage is an ordinary sluice::Tensor, so
// a batch from the pipeline becomes a DeviceTensor without a copy. On a GPU
// the storage's Buffer wraps device memory (its release function frees it
// back to the backend's allocator): data() is then a device pointer that
// host code must not dereference. Move bytes between host and device with
// Backend::ToDevice / Backend::ToHost.
//
// Thread-safety: as sluice::Tensor. Concurrent reads are fine; a write
// concurrent with any other access is a data race.
#ifndef SLUICE_NN_DEVICE_TENSOR_H_
#define SLUICE_NN_DEVICE_TENSOR_H_

#include <cstdint>
#include <string>

#include "sluice/core/result.h"
#include "sluice/core/shape.h"
#include "sluice/core/tensor.h"
#include "sluice/nn/device.h"

namespace sluice::nn {

class DeviceTensor {
 public:
  DeviceTensor() = default;
  // Adopts `storage` as the bytes of a tensor on `device`. For backends.
  DeviceTensor(Device device, Tensor storage) : device_(device), storage_(std::move(storage)) {}

  Device device() const { return device_; }
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

  // The host tensor holding the bytes (device memory for a GPU tensor).
  const Tensor& storage() const { return storage_; }

  // "cpu:0 float32[32,10]".
  std::string DebugString() const;

 private:
  Device device_;
  Tensor storage_;
};

}  // namespace sluice::nn

#endif  // SLUICE_NN_DEVICE_TENSOR_H_
