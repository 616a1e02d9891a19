// libFuzzer target for the restart-marker transcoder (ops/jpeg_restart.h).
//
// Input: 1 option byte, then the JPEG. The option byte picks the interval,
// optimize_huffman, copy_markers and the decode options of the checks.
// Every outcome must be a JPEG or InvalidArgument / ResourceExhausted
// naming the input. A transcoded JPEG must have row-aligned restarts and
// come out the same when transcoded again; when the input decodes (as TF
// does, leniently), the output must decode to the same pixels, strictly
// unless the input's markers were copied.
//
// Build with -DSLUICE_FUZZ=ON under clang; run for example
//   ./jpeg_restart_fuzz tests/fuzz/corpus/jpeg_restart -max_total_time=60
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "sluice/ops/jpeg.h"
#include "sluice/ops/jpeg_restart.h"

namespace {

constexpr std::string_view kName = "fuzz.jpg";

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "jpeg_restart_fuzz: %s\n%s\n", what, detail.c_str());
  std::abort();
}

void CheckError(const sluice::Status& s) {
  if (s.code() != sluice::StatusCode::kInvalidArgument &&
      s.code() != sluice::StatusCode::kResourceExhausted) {
    Fail("unexpected error code", s.ToString());
  }
  if (s.message().find(kName) == std::string_view::npos) {
    Fail("error without the name", s.ToString());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string_view jpeg(reinterpret_cast<const char*>(data) + 1, size - 1);
  static constexpr int kIntervals[] = {1, 2, 3, 4, 5, 8, 16, 65535};
  sluice::ops::JpegRestartOptions o;
  o.interval = kIntervals[data[0] & 7];
  o.optimize_huffman = (data[0] & 8) == 0;
  o.copy_markers = (data[0] & 16) == 0;
  o.max_pixels = 1 << 22;  // keep each run small and fast
  o.name = kName;

  const sluice::Result<std::string> out = sluice::ops::AddJpegRestartMarkers(jpeg, o);
  if (!out.ok()) {
    CheckError(out.status());
    return 0;
  }
  const sluice::Result<bool> aligned = sluice::ops::HasRowAlignedRestarts(*out, kName);
  if (!aligned.ok() || !*aligned) {
    Fail("the output has no row-aligned restarts", aligned.ok() ? "" : aligned.status().ToString());
  }
  const sluice::Result<std::string> again = sluice::ops::AddJpegRestartMarkers(jpeg, o);
  if (!again.ok() || *again != *out) Fail("not deterministic", "");

  sluice::ops::DecodeJpegOptions d;
  d.dct_method = (data[0] & 32) ? sluice::ops::JpegDctMethod::kIntegerAccurate
                                : sluice::ops::JpegDctMethod::kIntegerFast;
  d.ratio = (data[0] & 64) ? 2 : 1;
  d.fancy_upscaling = (data[0] & 128) == 0;
  d.max_pixels = o.max_pixels;
  d.name = kName;
  // The input as TF would decode it (leniently). Failing that (sampling the
  // decoder does not implement, say, which the transcoder copies as it is),
  // there is nothing to compare.
  const sluice::Result<sluice::Tensor> lenient = sluice::ops::DecodeJpeg(jpeg, d);
  if (!lenient.ok()) return 0;
  // libjpeg wrote the output's scan, so it decodes without a warning, but
  // the APPn markers it copied may hold what the input's did (a JFIF
  // version 33.01, an unknown Adobe transform).
  d.strict = !o.copy_markers;
  const sluice::Result<sluice::Tensor> got = sluice::ops::DecodeJpeg(*out, d);
  if (!got.ok()) Fail("the output does not decode", got.status().ToString());
  if (got->shape() != lenient->shape()) Fail("the output's shape differs from the input's", "");
  // The transcoder accepts only warnings that make nothing up (extra bytes
  // between markers, say), so even a lenient decode of the input has the
  // output's pixels.
  if (!sluice::Identical(*got, *lenient)) Fail("the output decodes to other pixels", "");
  return 0;
}
