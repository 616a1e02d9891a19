// The JPEG decoder's host-side decisions (jpeg_engine.h): which images
// nvJPEG is given, batch splits, staging layout.
#include <algorithm>
#include <cstdlib>
#include <string>

#include "sluice/ops/cuda/internal/jpeg_engine.h"

namespace sluice::gpu_internal {

std::string NotForNvjpeg(const Result<ops::JpegHeader>& header, int64_t max_pixels) {
  if (!header.ok()) return "header: " + std::string(header.status().message());
  const ops::JpegHeader& h = *header;
  if (h.progressive) return "progressive";
  if (h.arithmetic) return "arithmetic-coded";
  switch (h.color_space) {
    case ops::JpegColorSpace::kGrayscale:
    case ops::JpegColorSpace::kYCbCr: break;
    case ops::JpegColorSpace::kCMYK: return "CMYK";
    case ops::JpegColorSpace::kYCCK: return "YCCK";
    case ops::JpegColorSpace::kRGB: return "RGB-coded";
    case ops::JpegColorSpace::kUnknown: return "unknown color space";
  }
  if (h.subsampling == ops::JpegSubsampling::kOther) return "unusual chroma sampling";
  if (h.width <= 0 || h.height <= 0) return "empty image";
  if (h.width > max_pixels / h.height) return "over max_pixels";
  return "";
}

std::vector<IndexRange> SplitIntoBatches(size_t count, size_t max_batch) {
  std::vector<IndexRange> out;
  if (count == 0) return out;
  const size_t batches = (count + max_batch - 1) / max_batch;
  const size_t base = count / batches, extra = count % batches;
  size_t begin = 0;
  for (size_t b = 0; b < batches; ++b) {
    const size_t size = base + (b < extra ? 1 : 0);
    out.push_back({begin, begin + size});
    begin += size;
  }
  return out;
}

StagingLayout LayOutBitstreams(std::span<const size_t> sizes, size_t alignment) {
  StagingLayout layout;
  layout.offsets.reserve(sizes.size());
  for (size_t size : sizes) {
    layout.total = (layout.total + alignment - 1) & ~(alignment - 1);
    layout.offsets.push_back(layout.total);
    layout.total += size;
  }
  return layout;
}

Result<int> ResolveNvjpegStates(int option, const char* env) {
  if (option >= 1 && option <= kMaxNvjpegStates) return option;
  if (option != 0) {
    return Status::InvalidArgument("JpegDecoderOptions::nvjpeg_states must be in 0..8, not " +
                                   std::to_string(option));
  }
  if (env == nullptr || *env == '\0') return kDefaultNvjpegStates;
  char* end = nullptr;
  const long v = std::strtol(env, &end, 10);
  if (*end != '\0' || v < 1 || v > kMaxNvjpegStates) {
    return Status::InvalidArgument("SLUICE_NVJPEG_STATES must be an integer in 1..8, not \"" +
                                   std::string(env) + "\"");
  }
  return static_cast<int>(v);
}

}  // namespace sluice::gpu_internal
