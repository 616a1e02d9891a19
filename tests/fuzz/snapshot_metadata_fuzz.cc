// libFuzzer target for the metadata file of save() / snapshot
// (pipeline/internal/snapshot_format.h, docs/formats.md "Saved datasets and
// snapshots").
//
// Each input is also parsed as a progress file (snapshot.progress).
//
// Every outcome must be metadata or DataLoss: never a crash, a hang or an
// exception out of the JSON parser. Metadata that parses must hold what the
// parser promises (shard names that are plain "shard-N.tfrecord" names in
// ascending order, counts that add up) and must encode to text that parses
// back to the same metadata.
//
// Build with -DSLUICE_FUZZ=ON under clang; run for example
//   ./snapshot_metadata_fuzz tests/fuzz/corpus/snapshot_metadata -max_total_time=60
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "sluice/pipeline/internal/snapshot_format.h"

namespace {

namespace pi = sluice::pipeline_internal;

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "snapshot_metadata_fuzz: %s\n%s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

// The progress file of a resumable snapshot write (snapshot.progress): the
// same promises.
void CheckProgress(std::string_view text) {
  const sluice::Result<pi::SnapshotProgress> p = pi::ParseSnapshotProgress(text, "fuzz.progress");
  if (!p.ok()) {
    if (p.status().code() != sluice::StatusCode::kDataLoss) {
      Fail("progress error is not DataLoss", p.status().ToString());
    }
    if (p.status().ToString().find("fuzz.progress") == std::string::npos) {
      Fail("progress error does not name the file", p.status().ToString());
    }
    return;
  }
  int64_t total = 0;
  for (size_t i = 0; i < p->shards.size(); ++i) {
    const pi::SnapshotProgressShard& s = p->shards[i];
    if (s.file != pi::SnapshotPartialFileName(s.id) || s.file.find('/') != std::string::npos) {
      Fail("bad partial shard file name accepted", s.file);
    }
    if (i > 0 && s.id <= p->shards[i - 1].id) Fail("progress shard ids out of order", s.file);
    if (s.bytes < 0 || s.num_elements < 0) Fail("negative progress counts", s.file);
    total += s.num_elements;
  }
  if (total != p->num_elements) Fail("progress counts do not add up", std::string(text));
  const std::string again = pi::EncodeSnapshotProgress(*p);
  const sluice::Result<pi::SnapshotProgress> back = pi::ParseSnapshotProgress(again, "again");
  if (!back.ok()) Fail("encoded progress does not parse", again + back.status().ToString());
  if (pi::EncodeSnapshotProgress(*back) != again) Fail("progress encoding is not stable", again);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  CheckProgress(text);
  const sluice::Result<pi::SnapshotMetadata> m = pi::ParseSnapshotMetadata(text, "fuzz.metadata");
  if (!m.ok()) {
    if (m.status().code() != sluice::StatusCode::kDataLoss) {
      Fail("error is not DataLoss", m.status().ToString());
    }
    if (m.status().ToString().find("fuzz.metadata") == std::string::npos) {
      Fail("error does not name the file", m.status().ToString());
    }
    return 0;
  }
  int64_t total = 0;
  for (size_t i = 0; i < m->shards.size(); ++i) {
    const pi::SnapshotShard& s = m->shards[i];
    if (s.file != pi::SnapshotShardFileName(s.id) || s.file.find('/') != std::string::npos) {
      Fail("bad shard file name accepted", s.file);
    }
    if (i > 0 && s.id <= m->shards[i - 1].id) Fail("shard ids out of order", s.file);
    total += s.num_elements;
  }
  if (total != m->num_elements) Fail("counts do not add up", std::string(text));
  const std::string again = pi::EncodeSnapshotMetadata(*m);
  const sluice::Result<pi::SnapshotMetadata> back = pi::ParseSnapshotMetadata(again, "again");
  // Component names that are not UTF-8 do not survive JSON; save() refuses
  // them, and a parsed name is always valid UTF-8, so this must hold.
  if (!back.ok()) Fail("encoded metadata does not parse", again + back.status().ToString());
  if (pi::EncodeSnapshotMetadata(*back) != again) Fail("encoding is not stable", again);
  return 0;
}
