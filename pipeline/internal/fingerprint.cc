#include "sluice/pipeline/internal/fingerprint.h"

#include <cstdio>

namespace sluice::pipeline_internal {

uint64_t GraphFingerprint(const DatasetNode& node) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a over the text, then mixed
  auto add = [&h](std::string_view s) {
    for (char c : s) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ULL;
    h = (h ^ 0xff) * 0x100000001b3ULL;
  };
  add(node.kind());
  add(node.Describe());
  add(node.spec().DebugString());
  add(std::to_string(node.cardinality()));
  for (const auto& in : node.inputs()) h = MixSeed(h, GraphFingerprint(*in));
  return h;
}

std::string FingerprintHex(uint64_t fingerprint) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(fingerprint));
  return buf;
}

}  // namespace sluice::pipeline_internal
