#include "sluice/ops/internal/image_dims.h"

#include <string>

namespace sluice::ops_internal {

Shape ImageDims::WithSize(int64_t new_height, int64_t new_width, int64_t new_channels) const {
  if (batched) return Shape{batch, new_height, new_width, new_channels};
  return Shape{new_height, new_width, new_channels};
}

Result<ImageDims> GetImageDims(const Shape& shape, std::string_view op) {
  if (shape.unknown_rank() || (shape.rank() != 3 && shape.rank() != 4)) {
    return Status::InvalidArgument(std::string(op) +
                                   ": image must be [height, width, channels] or [batch, height, "
                                   "width, channels], got shape " +
                                   shape.ToString());
  }
  ImageDims d;
  const int off = shape.rank() - 3;
  d.batched = off == 1;
  d.batch = d.batched ? shape.dim(0) : 1;
  d.height = shape.dim(off);
  d.width = shape.dim(off + 1);
  d.channels = shape.dim(off + 2);
  return d;
}

Status CheckNumeric(DType dtype, std::string_view op, bool allow_bool) {
  if (dtype == DType::kString || (!allow_bool && dtype == DType::kBool)) {
    return Status::InvalidArgument(std::string(op) + ": unsupported dtype " +
                                   std::string(DTypeName(dtype)));
  }
  return Status::OK();
}

bool Overlaps(const Tensor& a, const Tensor& b) {
  if (a.byte_size() == 0 || b.byte_size() == 0) return false;
  const auto* pa = static_cast<const uint8_t*>(a.raw_data());
  const auto* pb = static_cast<const uint8_t*>(b.raw_data());
  return pa < pb + b.byte_size() && pb < pa + a.byte_size();
}

Status CheckOutput(const Tensor& input, const Tensor* out, DType dtype, const Shape& shape,
                   std::string_view op) {
  if (out == nullptr) return Status::InvalidArgument(std::string(op) + ": output is null");
  if (out->dtype() != dtype || !(out->shape() == shape)) {
    return Status::InvalidArgument(std::string(op) + ": output must be " +
                                   std::string(DTypeName(dtype)) + shape.ToString() + ", got " +
                                   std::string(DTypeName(out->dtype())) + out->shape().ToString());
  }
  if (Overlaps(input, *out)) {
    return Status::InvalidArgument(std::string(op) + ": output shares bytes with the input");
  }
  return Status::OK();
}

}  // namespace sluice::ops_internal
