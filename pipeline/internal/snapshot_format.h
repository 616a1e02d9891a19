// The on-disk format of save() / snapshot (docs/formats.md, "Saved datasets
// and snapshots"): its constants, the metadata file and its parser.
//
// A save folder holds shard files, "shard-NNNNN.tfrecord" (the shard
// number, at least 5 digits), each a TFRecord file (none/ZLIB/GZIP) whose
// records are EncodeElement() bytes, and "snapshot.metadata", a JSON object
// written atomically (OutputFile) first with "complete": false and, after
// every shard file is in place, with "complete": true.
//
// ParseSnapshotMetadata treats its input as hostile (it is fuzzed): any
// malformed text is DataLoss naming `what`, never a crash; shard file names
// are checked to be plain names in the folder. Pure functions: thread-safe.
#ifndef SLUICE_PIPELINE_INTERNAL_SNAPSHOT_FORMAT_H_
#define SLUICE_PIPELINE_INTERNAL_SNAPSHOT_FORMAT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/core/result.h"
#include "sluice/pipeline/element_spec.h"
#include "sluice/records/compression.h"

namespace sluice::pipeline_internal {

inline constexpr std::string_view kSnapshotMetadataFile = "snapshot.metadata";
inline constexpr std::string_view kSnapshotFormat = "sluice.snapshot";
inline constexpr int64_t kSnapshotVersion = 1;
inline constexpr std::string_view kSnapshotShardPrefix = "shard-";
inline constexpr std::string_view kSnapshotShardSuffix = ".tfrecord";
// A snapshot writer holds flock(LOCK_EX) on this file in its folder.
inline constexpr std::string_view kSnapshotLockFile = ".writer.lock";
// Metadata files larger than this are refused before reading.
inline constexpr int64_t kMaxSnapshotMetadataBytes = int64_t{16} << 20;

struct SnapshotShard {
  int64_t id = 0;
  std::string file;  // a name in the folder
  int64_t num_elements = 0;
};

struct SnapshotMetadata {
  bool complete = false;
  uint64_t fingerprint = 0;
  Compression compression = Compression::kNone;
  int64_t num_elements = 0;
  ElementSpec element_spec;           // Unknown: no element to learn it from
  std::vector<SnapshotShard> shards;  // ascending id
};

// "shard-00007.tfrecord".
std::string SnapshotShardFileName(int64_t id);

// ------------------------------------------------------------ progress
//
// A resumable (uncompressed) snapshot write keeps each shard under
// ".shard-NNNNN.tfrecord.partial" until it finishes, and at every progress
// checkpoint flushes the shards and writes "snapshot.progress" atomically:
// how many elements the run has written and each shard's length in bytes
// and records at that point. The next writer of the same fingerprint
// truncates the partial shards to those lengths and goes on from there.
inline constexpr std::string_view kSnapshotProgressFile = "snapshot.progress";
inline constexpr std::string_view kSnapshotProgressFormat = "sluice.snapshot.progress";
inline constexpr std::string_view kSnapshotPartialSuffix = ".partial";

struct SnapshotProgressShard {
  int64_t id = 0;
  std::string file;  // SnapshotPartialFileName(id)
  int64_t bytes = 0;
  int64_t num_elements = 0;
};

struct SnapshotProgress {
  uint64_t fingerprint = 0;
  uint64_t run = 0;      // names one write (kept by its resumptions)
  int64_t sharding = 0;  // num_shards of the default sharding; 0: a shard_func
  int64_t num_elements = 0;
  ElementSpec element_spec;                   // of the elements so far (Unknown: none yet)
  std::vector<SnapshotProgressShard> shards;  // ascending id
};

// ".shard-00007.tfrecord.partial".
std::string SnapshotPartialFileName(int64_t id);
std::string EncodeSnapshotProgress(const SnapshotProgress& p);
// DataLoss naming `what` for anything malformed (as ParseSnapshotMetadata;
// fuzzed by the same target).
Result<SnapshotProgress> ParseSnapshotProgress(std::string_view text, std::string_view what);
// DIR/snapshot.progress: NotFound if it does not exist.
Result<SnapshotProgress> ReadSnapshotProgress(const std::string& dir);
Status WriteSnapshotProgress(const std::string& dir, const SnapshotProgress& p);

// The JSON text (indented, one key per line).
std::string EncodeSnapshotMetadata(const SnapshotMetadata& m);
// The inverse; DataLoss naming `what` for anything malformed: not JSON, a
// missing or mistyped key, another format or version, a shard file name
// that is not "shard-N.tfrecord", counts that do not add up, ids out of
// order, more than kMaxSnapshotShards shards.
Result<SnapshotMetadata> ParseSnapshotMetadata(std::string_view text, std::string_view what);

// DIR/snapshot.metadata: NotFound (naming it) if it does not exist.
Result<SnapshotMetadata> ReadSnapshotMetadata(const std::string& dir);
// Writes DIR/snapshot.metadata atomically.
Status WriteSnapshotMetadata(const std::string& dir, const SnapshotMetadata& m);

// `stage` ("save", "load", "snapshot") on the object-store URI `path`:
// FailedPrecondition saying that snapshot folders live on local disks.
Status RemoteSnapshotError(std::string_view stage, const std::string& path);

}  // namespace sluice::pipeline_internal

#endif  // SLUICE_PIPELINE_INTERNAL_SNAPSHOT_FORMAT_H_
