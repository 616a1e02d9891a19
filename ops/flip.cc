// Flips, random flips and Rot90 (declared in image_ops.h).
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "sluice/ops/image_ops.h"
#include "sluice/ops/internal/image_dims.h"
#include "sluice/ops/internal/row_ops.h"

namespace sluice::ops {
namespace {

using ops_internal::ImageDims;

// Copies `n` pixels of `P` bytes (kP when known at compile time) from src
// to dst in reverse order.
template <int kP>
void ReversePixels(const uint8_t* src, int64_t n, int64_t pixel_bytes, uint8_t* dst) {
  const int64_t P = kP > 0 ? kP : pixel_bytes;
  const uint8_t* s = src + (n - 1) * P;
  int64_t x = 0;
  if constexpr (kP == 3 || kP == 12) {
    // Moves of one power of two wider (4 bytes for uint8 RGB, 16 for float
    // RGB): each also writes the start of the next destination pixel, which
    // the next move rewrites. The first source pixel (the row's last) and
    // the last destination pixel keep exact moves, inside their rows.
    constexpr int64_t kWide = kP == 3 ? 4 : 16;
    if (n > 1) {
      std::memcpy(dst, s, P);
      for (x = 1, s -= P, dst += P; x + 1 < n; ++x, s -= P, dst += P) std::memcpy(dst, s, kWide);
    }
  }
  for (; x < n; ++x, s -= P, dst += P) std::memcpy(dst, s, P);
}

void ReverseAnyRow(const uint8_t* src, int64_t n, int64_t pixel_bytes, uint8_t* dst) {
  switch (pixel_bytes) {
    case 1: return ReversePixels<1>(src, n, 1, dst);
    case 2: return ReversePixels<2>(src, n, 2, dst);
    case 3: return ReversePixels<3>(src, n, 3, dst);
    case 4: return ReversePixels<4>(src, n, 4, dst);
    case 6: return ReversePixels<6>(src, n, 6, dst);
    case 8: return ReversePixels<8>(src, n, 8, dst);
    case 12: return ReversePixels<12>(src, n, 12, dst);
    case 16: return ReversePixels<16>(src, n, 16, dst);
    default: return ReversePixels<0>(src, n, pixel_bytes, dst);
  }
}

// Flips image `b` of the batch (left-right or up-down) into `out`.
void FlipOne(const Tensor& image, const ImageDims& d, int64_t b, bool left_right, uint8_t* out) {
  const int64_t pixel = d.channels * static_cast<int64_t>(DTypeSize(image.dtype()));
  const int64_t row = d.width * pixel;
  const uint8_t* src = static_cast<const uint8_t*>(image.raw_data()) + b * d.height * row;
  uint8_t* dst = out + b * d.height * row;
  for (int64_t y = 0; y < d.height; ++y) {
    if (left_right) {
      ReverseAnyRow(src + y * row, d.width, pixel, dst + y * row);
    } else if (row > 0) {
      std::memcpy(dst + y * row, src + (d.height - 1 - y) * row, row);
    }
  }
}

Result<ImageDims> CheckImage(const Tensor& image, std::string_view op) {
  SLUICE_ASSIGN_OR_RETURN(ImageDims d, ops_internal::GetImageDims(image.shape(), op));
  SLUICE_RETURN_IF_ERROR(ops_internal::CheckNumeric(image.dtype(), op));
  return d;
}

Status FlipInto(const Tensor& image, Tensor* out, bool left_right, std::string_view op) {
  SLUICE_ASSIGN_OR_RETURN(ImageDims d, CheckImage(image, op));
  SLUICE_RETURN_IF_ERROR(ops_internal::CheckOutput(image, out, image.dtype(), image.shape(), op));
  for (int64_t b = 0; b < d.batch; ++b) {
    FlipOne(image, d, b, left_right, static_cast<uint8_t*>(out->raw_data()));
  }
  return Status::OK();
}

Result<Tensor> Flip(const Tensor& image, bool left_right, std::string_view op) {
  SLUICE_RETURN_IF_ERROR(CheckImage(image, op));
  SLUICE_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(image.dtype(), image.shape()));
  SLUICE_RETURN_IF_ERROR(FlipInto(image, &out, left_right, op));
  return out;
}

Result<Tensor> RandomFlip(const Tensor& image, Rng& rng, bool left_right, std::string_view op) {
  SLUICE_ASSIGN_OR_RETURN(ImageDims d, CheckImage(image, op));
  if (!d.batched) {
    if (SampleFlip(rng)) return Flip(image, left_right, op);
    return image;
  }
  SLUICE_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(image.dtype(), image.shape()));
  const size_t bytes = image.byte_size() / static_cast<size_t>(d.batch > 0 ? d.batch : 1);
  auto* dst = static_cast<uint8_t*>(out.raw_data());
  const auto* src = static_cast<const uint8_t*>(image.raw_data());
  for (int64_t b = 0; b < d.batch; ++b) {
    if (SampleFlip(rng)) {
      FlipOne(image, d, b, left_right, dst);
    } else if (bytes > 0) {
      std::memcpy(dst + b * bytes, src + b * bytes, bytes);
    }
  }
  return out;
}

// Flips a 3-D image in its own bytes, one row at a time through a row of
// scratch (the row stays in L1: reversing into it and copying back costs
// about what reversing into a new image does, without the new image).
void FlipInPlace(Tensor& image, const ImageDims& d, bool left_right) {
  const int64_t pixel = d.channels * static_cast<int64_t>(DTypeSize(image.dtype()));
  const int64_t row = d.width * pixel;
  auto* base = static_cast<uint8_t*>(image.raw_data());
  std::vector<uint8_t> line(static_cast<size_t>(row));
  if (row == 0) return;
  for (int64_t y = 0; y < (left_right ? d.height : d.height / 2); ++y) {
    uint8_t* a = base + y * row;
    if (left_right) {
      ReverseAnyRow(a, d.width, pixel, line.data());
      std::memcpy(a, line.data(), line.size());
    } else {
      uint8_t* b = base + (d.height - 1 - y) * row;
      std::memcpy(line.data(), a, line.size());
      std::memcpy(a, b, line.size());
      std::memcpy(b, line.data(), line.size());
    }
  }
}

Result<Tensor> RandomFlipOwned(Tensor&& image, Rng& rng, bool left_right, std::string_view op) {
  SLUICE_ASSIGN_OR_RETURN(ImageDims d, CheckImage(image, op));
  if (d.batched || !image.buffer().unique()) return RandomFlip(image, rng, left_right, op);
  if (SampleFlip(rng)) FlipInPlace(image, d, left_right);
  return std::move(image);
}

}  // namespace

Result<Tensor> RandomFlipLeftRight(Tensor&& image, Rng& rng) {
  return RandomFlipOwned(std::move(image), rng, true, "RandomFlipLeftRight");
}
Result<Tensor> RandomFlipUpDown(Tensor&& image, Rng& rng) {
  return RandomFlipOwned(std::move(image), rng, false, "RandomFlipUpDown");
}

Result<Tensor> FlipLeftRight(const Tensor& image) { return Flip(image, true, "FlipLeftRight"); }
Result<Tensor> FlipUpDown(const Tensor& image) { return Flip(image, false, "FlipUpDown"); }
Status FlipLeftRightInto(const Tensor& image, Tensor* out) {
  return FlipInto(image, out, true, "FlipLeftRightInto");
}
Status FlipUpDownInto(const Tensor& image, Tensor* out) {
  return FlipInto(image, out, false, "FlipUpDownInto");
}
Result<Tensor> RandomFlipLeftRight(const Tensor& image, Rng& rng) {
  return RandomFlip(image, rng, true, "RandomFlipLeftRight");
}
Result<Tensor> RandomFlipUpDown(const Tensor& image, Rng& rng) {
  return RandomFlip(image, rng, false, "RandomFlipUpDown");
}

Result<Tensor> Rot90(const Tensor& image, int64_t k) {
  SLUICE_ASSIGN_OR_RETURN(ImageDims d, CheckImage(image, "Rot90"));
  const int turns = static_cast<int>(((k % 4) + 4) % 4);
  if (turns == 0) return image;
  if (turns == 2) {  // a flip both ways
    SLUICE_ASSIGN_OR_RETURN(Tensor lr, FlipLeftRight(image));
    return FlipUpDown(lr);
  }
  const int64_t H = d.height, W = d.width;
  SLUICE_ASSIGN_OR_RETURN(Tensor out,
                          Tensor::Allocate(image.dtype(), d.WithSize(W, H, d.channels)));
  const int64_t P = d.channels * static_cast<int64_t>(DTypeSize(image.dtype()));
  const auto* src = static_cast<const uint8_t*>(image.raw_data());
  auto* dst = static_cast<uint8_t*>(out.raw_data());
  if (P == 0) return out;
  for (int64_t b = 0; b < d.batch; ++b) {
    const uint8_t* in = src + b * H * W * P;
    // Output (i, j), i < W, j < H. Counter-clockwise: in(j, W-1-i);
    // three turns (clockwise): in(H-1-j, i).
    for (int64_t i = 0; i < W; ++i) {
      for (int64_t j = 0; j < H; ++j, dst += P) {
        const int64_t y = turns == 1 ? j : H - 1 - j;
        const int64_t x = turns == 1 ? W - 1 - i : i;
        std::memcpy(dst, in + (y * W + x) * P, P);
      }
    }
  }
  return out;
}

}  // namespace sluice::ops

namespace sluice::ops_internal {

void ReverseRow(const uint8_t* src, int64_t n, int64_t pixel_bytes, uint8_t* dst) {
  ops::ReverseAnyRow(src, n, pixel_bytes, dst);
}

}  // namespace sluice::ops_internal
