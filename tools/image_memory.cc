#include "image_memory.h"

#include "sluice/ops/jpeg.h"
#include "sluice/ops/png.h"

namespace sluice::tools {
namespace {

constexpr uint64_t kCodecState = uint64_t{1} << 20;

uint64_t Elements(const Shape& s) {
  uint64_t n = 1;
  for (int i = 0; i < s.rank(); ++i) n *= static_cast<uint64_t>(s.dim(i));
  return n;
}

// libjpeg's whole-image coefficient arrays: 2 bytes per sample of each
// component, over the image padded to whole MCUs (at most 32 pixels).
uint64_t JpegCoefficientBytes(const ops::JpegHeader& h) {
  const uint64_t padded = static_cast<uint64_t>((h.width + 31) / 32 * 32) *
                          static_cast<uint64_t>((h.height + 31) / 32 * 32);
  // Samples per pixel, in halves.
  uint64_t halves = 2 * static_cast<uint64_t>(h.components);
  switch (h.subsampling) {
    case ops::JpegSubsampling::kGray: halves = 2; break;
    case ops::JpegSubsampling::k444: halves = 6; break;
    case ops::JpegSubsampling::k422:
    case ops::JpegSubsampling::k440: halves = 4; break;
    case ops::JpegSubsampling::k420:
    case ops::JpegSubsampling::k411: halves = 3; break;
    case ops::JpegSubsampling::kOther: break;
  }
  return padded * halves;  // 2 bytes a sample, halves / 2 samples a pixel
}

}  // namespace

Result<uint64_t> ImageWorkBytes(std::string_view bytes, ops::ImageFormat format,
                                const ImageWork& work) {
  if (!work.decoded && !work.resized && !work.transcode) return 0;
  uint64_t total = bytes.size() + kCodecState;
  std::optional<ops::JpegHeader> jpeg;
  if (format == ops::ImageFormat::kJpeg) {
    SLUICE_ASSIGN_OR_RETURN(jpeg, ops::ReadJpegHeader(bytes));
    // A few MCU rows of every component, as floats at worst.
    total += static_cast<uint64_t>(jpeg->width + 32) * 32 * 4 * 4;
  }
  if (work.decoded) {
    const Shape& d = *work.decoded;
    total += Elements(d);
    if (jpeg && jpeg->progressive) total += JpegCoefficientBytes(*jpeg);
    if (format == ops::ImageFormat::kPng) {
      SLUICE_ASSIGN_OR_RETURN(ops::PngHeader png, ops::ReadPngHeader(bytes));
      const uint64_t pixels = static_cast<uint64_t>(png.width) * static_cast<uint64_t>(png.height);
      const uint64_t sample = png.bit_depth == 16 ? 2 : 1;
      if (sample == 2 || png.channels != d.dim(2)) total += pixels * png.channels * sample;
      // libspng's rows (the current and previous, 8 bytes a pixel at most).
      total += static_cast<uint64_t>(png.width) * 8 * 2;
    }
  }
  if (work.resized) total += 9 * Elements(*work.resized);
  if (work.transcode && jpeg) total += JpegCoefficientBytes(*jpeg) + 4 * bytes.size();
  return total;
}

}  // namespace sluice::tools
