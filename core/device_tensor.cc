#include "sluice/core/device_tensor.h"

namespace sluice {

Result<DeviceTensor> DeviceTensor::Reshape(const Shape& shape) const {
  SLUICE_ASSIGN_OR_RETURN(Tensor t, storage_.Reshape(shape));
  return DeviceTensor(device_, std::move(t));
}

Result<DeviceTensor> DeviceTensor::Slice(int64_t begin, int64_t end) const {
  SLUICE_ASSIGN_OR_RETURN(Tensor t, storage_.Slice(begin, end));
  return DeviceTensor(device_, std::move(t));
}

std::string DeviceTensor::DebugString() const {
  return device_.ToString() + " " + std::string(DTypeName(dtype())) + shape().ToString();
}

}  // namespace sluice
