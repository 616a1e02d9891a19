// libFuzzer target for the Element codec (core/element_codec.h).
//
// The input is decoded as a sequence of concatenated elements, as an
// iterator checkpoint or a cache file holds them. Every outcome must be an
// element or DataLoss: never a crash, a hang or an allocation larger than the
// input can justify. The encoding is canonical, so a decoded element must
// encode back to exactly the bytes it was decoded from; an error must name
// the source and leave the input where it was.
//
// Build with -DSLUICE_FUZZ=ON under clang; run for example
//   ./element_codec_fuzz tests/fuzz/corpus/element_codec -max_total_time=60
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "sluice/core/element_codec.h"

namespace {

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "element_codec_fuzz: %s\n%s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::string_view in = bytes;
  // Each element consumes at least 5 bytes, so this ends.
  while (!in.empty()) {
    const std::string_view before = in;
    const sluice::Result<sluice::Element> e = sluice::DecodeElement(&in, "fuzz.bin");
    if (!e.ok()) {
      if (e.status().code() != sluice::StatusCode::kDataLoss) {
        Fail("error is not DataLoss", e.status().ToString());
      }
      if (e.status().message().find("fuzz.bin") == std::string_view::npos) {
        Fail("error does not name the source", e.status().ToString());
      }
      if (in.data() != before.data() || in.size() != before.size()) {
        Fail("input advanced on error", e.status().ToString());
      }
      break;
    }
    const size_t consumed = before.size() - in.size();
    if (consumed == 0) Fail("decoded an element from zero bytes", e->DebugString());
    std::string again;
    const sluice::Status s = sluice::EncodeElement(*e, &again);
    if (!s.ok()) Fail("cannot re-encode a decoded element", s.ToString());
    if (again != before.substr(0, consumed)) {
      Fail("re-encoding differs from the decoded bytes", e->DebugString());
    }
    if (sluice::EncodedElementSize(*e) != consumed) {
      Fail("EncodedElementSize differs from the decoded bytes", e->DebugString());
    }
  }
  return 0;
}
