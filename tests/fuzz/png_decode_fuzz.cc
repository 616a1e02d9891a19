// libFuzzer target for the PNG decoder and encoder (ops/png.h).
//
// Input: 1 option byte (channels, 8 or 16 bits), then the PNG. Every outcome
// must be an image or InvalidArgument / ResourceExhausted naming the input;
// a decoded image must have PngOutputShape(), and must survive EncodePng and
// DecodePng unchanged.
//
// Build with -DSLUICE_FUZZ=ON under clang; run for example
//   ./png_decode_fuzz tests/fuzz/corpus/png_decode -max_total_time=60
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "sluice/ops/png.h"

namespace {

constexpr std::string_view kName = "fuzz.png";

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "png_decode_fuzz: %s\n%s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string_view png(reinterpret_cast<const char*>(data) + 1, size - 1);
  sluice::ops::DecodePngOptions o;
  static constexpr int kChannels[] = {0, 1, 3, 4};
  o.channels = kChannels[data[0] & 3];
  o.bits = (data[0] & 4) ? 16 : 8;
  o.max_pixels = 1 << 22;
  o.name = kName;
  (void)sluice::ops::ReadPngHeader(png, kName);
  const sluice::Result<sluice::Shape> shape = sluice::ops::PngOutputShape(png, o);
  const sluice::Result<sluice::Tensor> image = sluice::ops::DecodePng(png, o);
  if (!image.ok()) {
    const sluice::Status& s = image.status();
    if (s.code() != sluice::StatusCode::kInvalidArgument &&
        s.code() != sluice::StatusCode::kResourceExhausted) {
      Fail("unexpected error code", s.ToString());
    }
    if (s.message().find(kName) == std::string_view::npos)
      Fail("error without the name", s.ToString());
    return 0;
  }
  if (!shape.ok() || *shape != image->shape()) Fail("shape differs from PngOutputShape", "");
  const sluice::Result<std::string> again = sluice::ops::EncodePng(*image);
  if (!again.ok()) Fail("cannot encode a decoded image", again.status().ToString());
  sluice::ops::DecodePngOptions plain;
  plain.bits = o.bits;
  const sluice::Result<sluice::Tensor> back = sluice::ops::DecodePng(*again, plain);
  if (!back.ok() || !sluice::Identical(*back, *image)) Fail("round trip changed the image", "");
  return 0;
}
