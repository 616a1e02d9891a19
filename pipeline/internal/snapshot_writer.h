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
};

class SnapshotWriter {
 public:
  // InvalidArgument for num_shards < 1 without a shard_func.
  static Result<std::unique_ptr<SnapshotWriter>> Open(std::string dir,
                                                      SnapshotWriterOptions options);
  ~SnapshotWriter();

  Status Write(const Element& e);
  Status Finish();
  int64_t elements_written() const { return count_; }
  const std::string& dir() const { return dir_; }

 private:
  SnapshotWriter(std::string dir, SnapshotWriterOptions options);
  std::string Where() const;

  std::string dir_;
  SnapshotWriterOptions options_;
  std::map<int64_t, std::pair<std::unique_ptr<TFRecordWriter>, int64_t>> shards_;
  int64_t count_ = 0;
  std::optional<ElementSpec> learnt_;  // when options_.element_spec is unknown
  std::string encoded_;
  bool finished_ = false;
};

// Removes the temporary files in `dir` whose writers are gone (killed).
void RemoveAbandonedSnapshotTemporaries(const std::string& dir);

}  // namespace sluice::pipeline_internal

#endif  // SLUICE_PIPELINE_INTERNAL_SNAPSHOT_WRITER_H_
