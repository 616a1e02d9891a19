// ImageWorkBytes: how many bytes converting one image holds at its peak,
// from its header alone, for the MemoryGate of `sluice convert images`
// (memory_gate.h), which each worker passes before decoding.
//
// An upper estimate, the sum of what the steps hold (the file's bytes, kept
// throughout, and the steps in `ImageWork`):
// - decode: the uint8 pixels; a progressive JPEG adds libjpeg's whole-image
//   DCT coefficients (2 bytes a sample, MCU-padded), a PNG whose samples
//   must be converted (16-bit, or other channels) adds libspng's scratch
//   image;
// - resize: 9 bytes an output sample (the float32 resize, its uint8 copy,
//   up to 4 for the JPEG being written and its record);
// - transcode (AddJpegRestartMarkers): the coefficients as above, and 4
//   times the file (the output buffer growing, its copy, the record);
// plus row buffers and 1 MiB of codec state. A file's bytes with no step
// (stored as it is) count 0: nothing to gate.
//
// Pure functions; thread-safe.
#ifndef SLUICE_TOOLS_IMAGE_MEMORY_H_
#define SLUICE_TOOLS_IMAGE_MEMORY_H_

#include <cstdint>
#include <optional>
#include <string_view>

#include "sluice/core/result.h"
#include "sluice/core/shape.h"
#include "sluice/ops/decode_image.h"

namespace sluice::tools {

struct ImageWork {
  // The decoded shape [h, w, c] when the image is decoded (DecodeImage with
  // the channels it will use); nullopt: not decoded.
  std::optional<Shape> decoded;
  // The uint8 shape after --resize; nullopt: not resized.
  std::optional<Shape> resized;
  bool transcode = false;  // restart markers added to the stored JPEG
};

// REQUIRES: format is kJpeg or kPng and `bytes` its header parses
// (ImageOutputShape succeeded); errors are the header parsers'.
Result<uint64_t> ImageWorkBytes(std::string_view bytes, ops::ImageFormat format,
                                const ImageWork& work);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_IMAGE_MEMORY_H_
