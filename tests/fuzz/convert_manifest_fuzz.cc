// libFuzzer target for `sluice convert`'s manifest (tools/convert_manifest.h),
// the one file convert reads back from its output folder, which a user may
// have edited or damaged: ParseManifest is a manifest or DataLoss naming the
// file, never a crash; a manifest it accepts writes (ManifestText) as text
// that parses back to the same manifest.
//
// Build with -DSLUICE_FUZZ=ON under clang; run for example
//   ./convert_manifest_fuzz tests/fuzz/corpus/convert_manifest -max_total_time=60
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "convert_manifest.h"

namespace {

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "convert_manifest_fuzz: %s\n%s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using sluice::tools::ConvertManifest;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const sluice::Result<ConvertManifest> m = sluice::tools::ParseManifest(text, "m.json");
  if (!m.ok()) {
    if (m.status().code() != sluice::StatusCode::kDataLoss) {
      Fail("unexpected error code", m.status().ToString());
    }
    if (m.status().message().find("m.json") == std::string_view::npos) {
      Fail("an error that does not name the file", m.status().ToString());
    }
    return 0;
  }
  const std::string written = sluice::tools::ManifestText(*m);
  const sluice::Result<ConvertManifest> again = sluice::tools::ParseManifest(written, "m.json");
  if (!again.ok()) Fail("a written manifest does not parse", written);
  // Text that is not UTF-8 is written replaced (U+FFFD), so compare what
  // survives a second round exactly.
  const std::string twice = sluice::tools::ManifestText(*again);
  if (twice != written) Fail("the manifest changes on a second round trip", written + twice);
  if (again->shards != m->shards || again->complete.size() != m->complete.size()) {
    Fail("the plan or the shards changed", written);
  }
  return 0;
}
