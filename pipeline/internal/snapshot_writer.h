// SnapshotWriter: writes one save folder (snapshot_format.h) element by
// element, for Dataset::save and the snapshot stage's writing pass.
//
// Open() makes the folder, removes what an earlier writer left behind
// (an old metadata file first, so the folder never claims to be complete
// while its shards change; temporary files whose writer is gone) and
// writes the metadata with "complete": false. Each shard is a
// TFRecordWriter under a hidden temporary name; Finish() publishes every
// shard, removes shard files an earlier save left that this one does not
// have, and writes the metadata with "complete": true, last. A writer
// destroyed before Finish() removes its temporary files: the folder is then
// incomplete, never half-read as complete.
//
// Resumable writers (`resumable`: snapshot, uncompressed) instead write each
// shard in place as ".shard-N.tfrecord.partial" (renamed at Finish()) and
// keep it when destroyed; Checkpoint() (also every `progress_every`
// elements or `progress_bytes` bytes) flushes the shards and writes
// snapshot.progress (snapshot_format.h). Open() with `resume` truncates the
// partial shards to the lengths it records and appends from there.
//
// Not thread-safe: one thread drives it.
#ifndef SLUICE_PIPELINE_INTERNAL_SNAPSHOT_WRITER_H_
#define SLUICE_PIPELINE_INTERNAL_SNAPSHOT_WRITER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "sluice/core/element.h"
#include "sluice/core/result.h"
#include "sluice/pipeline/element_spec.h"
#include "sluice/pipeline/internal/snapshot_format.h"
#include "sluice/pipeline/snapshot.h"
#include "sluice/records/tfrecord_writer.h"

namespace sluice::pipeline_internal {

struct SnapshotWriterOptions {
  Compression compression = Compression::kNone;  // kAuto: kNone
  ShardFn shard_func;                            // empty: index % num_shards
  int64_t num_shards = kDefaultSnapshotShards;
  uint64_t fingerprint = 0;
  ElementSpec element_spec;    // Unknown: learnt from the elements
  std::string stage = "save";  // for messages
  bool resumable = false;      // needs compression kNone
  int64_t progress_every = 4096;
  int64_t progress_bytes = int64_t{64} << 20;
};

class SnapshotWriter {
 public:
  // InvalidArgument for num_shards < 1 without a shard_func.
  // With `resume` (a resumable writer): goes on from that progress (its
  // fingerprint and sharding must be this writer's; DataLoss if a partial
  // shard is shorter than it says). Without: starts afresh, removing any
  // partial shards and progress file.
  static Result<std::unique_ptr<SnapshotWriter>> Open(std::string dir,
                                                      SnapshotWriterOptions options,
                                                      const SnapshotProgress* resume = nullptr);
  ~SnapshotWriter();

  Status Write(const Element& e);
  Status Finish();
  // Flushes every shard and writes snapshot.progress (resumable writers).
  Result<SnapshotProgress> Checkpoint();
  bool resumable() const { return options_.resumable; }
  // What snapshot.progress's "sharding" records: num_shards, or 0 for a
  // shard_func.
  int64_t sharding() const { return options_.shard_func ? 0 : options_.num_shards; }
  int64_t elements_written() const { return count_; }
  const std::string& dir() const { return dir_; }

 private:
  SnapshotWriter(std::string dir, SnapshotWriterOptions options);
  std::string Where() const;
  Status Resume(const SnapshotProgress& p);

  std::string dir_;
  SnapshotWriterOptions options_;
  struct Shard {
    std::unique_ptr<TFRecordWriter> writer;
    int64_t records = 0;
    int64_t base_bytes = 0;  // the file's bytes before this writer appended
  };
  std::map<int64_t, Shard> shards_;
  int64_t count_ = 0;
  uint64_t run_ = 0;
  int64_t last_checkpoint_ = 0;
  int64_t bytes_since_checkpoint_ = 0;
  std::optional<ElementSpec> learnt_;  // when options_.element_spec is unknown
  std::string encoded_;
  bool finished_ = false;
};

// Removes the temporary files in `dir` whose writers are gone (killed).
void RemoveAbandonedSnapshotTemporaries(const std::string& dir);

}  // namespace sluice::pipeline_internal

#endif  // SLUICE_PIPELINE_INTERNAL_SNAPSHOT_WRITER_H_
