// Crop, CentralCrop, RandomCrop (declared in image_ops.h).
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "sluice/ops/image_ops.h"
#include "sluice/ops/internal/image_dims.h"

namespace sluice::ops {
namespace {

using ops_internal::ImageDims;

std::string WindowString(const CropWindow& w) {
  return "{y=" + std::to_string(w.y) + ", x=" + std::to_string(w.x) +
         ", height=" + std::to_string(w.height) + ", width=" + std::to_string(w.width) + "}";
}

// Copies the box [begin, begin + size) of `in` (any rank) into the dense
// `out`. The innermost dimensions that are taken whole are one memcpy.
// REQUIRES: the box lies inside `in`.
void SliceCopy(const Tensor& in, std::span<const int64_t> begin, std::span<const int64_t> size,
               void* out) {
  const int rank = in.shape().rank();
  const size_t esize = DTypeSize(in.dtype());
  for (int i = 0; i < rank; ++i) {
    if (size[i] == 0) return;
  }
  // The box is contiguous from dimension `inner` on: run = elements per copy.
  int inner = rank;
  int64_t run = 1;
  while (inner > 0) {
    const int d = inner - 1;
    run *= size[d];
    inner = d;
    if (size[d] != in.shape().dim(d)) break;
  }
  std::vector<int64_t> strides(rank, 1);  // strides[i]: elements per step of dim i
  for (int i = rank - 2; i >= 0; --i) strides[i] = strides[i + 1] * in.shape().dim(i + 1);
  std::vector<int64_t> idx(inner, 0);  // odometer over dims [0, inner)
  const auto* src = static_cast<const uint8_t*>(in.raw_data());
  auto* dst = static_cast<uint8_t*>(out);
  const size_t run_bytes = static_cast<size_t>(run) * esize;
  for (;;) {
    int64_t offset = 0;
    for (int i = 0; i < rank; ++i) offset += (begin[i] + (i < inner ? idx[i] : 0)) * strides[i];
    std::memcpy(dst, src + offset * esize, run_bytes);
    dst += run_bytes;
    int i = inner - 1;
    while (i >= 0 && ++idx[i] == size[i]) idx[i--] = 0;
    if (i < 0) return;
  }
}

// Checks `window` against an image and returns the output shape.
Result<Shape> CropShape(const Tensor& image, const CropWindow& w, ImageDims* dims) {
  SLUICE_ASSIGN_OR_RETURN(*dims, ops_internal::GetImageDims(image.shape(), "Crop"));
  SLUICE_RETURN_IF_ERROR(ops_internal::CheckNumeric(image.dtype(), "Crop"));
  if (w.y < 0 || w.x < 0 || w.height <= 0 || w.width <= 0 || w.height > dims->height - w.y ||
      w.width > dims->width - w.x) {
    return Status::InvalidArgument("Crop: window " + WindowString(w) +
                                   " must have y, x >= 0, height, width > 0 and lie inside the "
                                   "image of shape " +
                                   image.shape().ToString());
  }
  return dims->WithSize(w.height, w.width, dims->channels);
}

void CropCopy(const Tensor& image, const ImageDims& d, const CropWindow& w, void* out) {
  const int64_t begin[4] = {0, w.y, w.x, 0};
  const int64_t size[4] = {d.batch, w.height, w.width, d.channels};
  const int off = d.batched ? 0 : 1;
  SliceCopy(image, std::span(begin + off, 4 - off), std::span(size + off, 4 - off), out);
}

}  // namespace

Result<Tensor> Crop(const Tensor& image, const CropWindow& window) {
  ImageDims d;
  SLUICE_ASSIGN_OR_RETURN(Shape shape, CropShape(image, window, &d));
  SLUICE_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(image.dtype(), shape));
  CropCopy(image, d, window, out.raw_data());
  return out;
}

Status CropInto(const Tensor& image, const CropWindow& window, Tensor* out) {
  ImageDims d;
  SLUICE_ASSIGN_OR_RETURN(Shape shape, CropShape(image, window, &d));
  SLUICE_RETURN_IF_ERROR(ops_internal::CheckOutput(image, out, image.dtype(), shape, "CropInto"));
  CropCopy(image, d, window, out->raw_data());
  return Status::OK();
}

Result<CropWindow> CentralCropWindow(int64_t height, int64_t width, double fraction) {
  if (!(fraction > 0.0 && fraction <= 1.0)) {
    return Status::InvalidArgument("CentralCrop: fraction must be in (0, 1], got " +
                                   std::to_string(fraction));
  }
  if (height <= 0 || width <= 0) {
    return Status::InvalidArgument("CentralCrop: image must be non-empty, got height " +
                                   std::to_string(height) + " and width " + std::to_string(width));
  }
  // As TF (in double, truncating): start = int((side - side * fraction) / 2).
  auto start = [&](int64_t side) {
    const double s = static_cast<double>(side);
    return static_cast<int64_t>((s - s * fraction) / 2);
  };
  const int64_t y = start(height), x = start(width);
  return CropWindow{y, x, height - 2 * y, width - 2 * x};
}

Result<Tensor> CentralCrop(const Tensor& image, double fraction) {
  SLUICE_ASSIGN_OR_RETURN(ImageDims d, ops_internal::GetImageDims(image.shape(), "CentralCrop"));
  SLUICE_ASSIGN_OR_RETURN(CropWindow w, CentralCropWindow(d.height, d.width, fraction));
  if (fraction == 1.0) return image;
  return Crop(image, w);
}

Result<std::vector<int64_t>> SampleRandomCrop(const Shape& shape, const Shape& size, Rng& rng) {
  bool ok = !size.unknown_rank() && !shape.unknown_rank() && size.rank() == shape.rank();
  for (int i = 0; ok && i < size.rank(); ++i) ok = size.dim(i) >= 0 && size.dim(i) <= shape.dim(i);
  if (!ok) {
    return Status::InvalidArgument("RandomCrop: size " + size.ToString() +
                                   " must have the rank of the value's shape " + shape.ToString() +
                                   " and 0 <= size[i] <= shape[i]");
  }
  std::vector<int64_t> begin(shape.rank());
  for (int i = 0; i < shape.rank(); ++i) {
    begin[i] =
        static_cast<int64_t>(rng.UniformInt(static_cast<uint64_t>(shape.dim(i) - size.dim(i)) + 1));
  }
  return begin;
}

Result<Tensor> RandomCrop(const Tensor& value, const Shape& size, Rng& rng) {
  const Shape& shape = value.shape();
  SLUICE_RETURN_IF_ERROR(ops_internal::CheckNumeric(value.dtype(), "RandomCrop"));
  SLUICE_ASSIGN_OR_RETURN(std::vector<int64_t> begin, SampleRandomCrop(shape, size, rng));
  SLUICE_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(value.dtype(), size));
  if (shape.rank() == 0) {
    std::memcpy(out.raw_data(), value.raw_data(), value.byte_size());
  } else {
    SliceCopy(value, begin, size.dims(), out.raw_data());
  }
  return out;
}

}  // namespace sluice::ops
