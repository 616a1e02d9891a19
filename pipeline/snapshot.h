// Persisting a pipeline's output (tf.data's save, load and snapshot): the
// options of Dataset::save, Dataset::load and Dataset::snapshot
// (dataset.h), and where a snapshot of a pipeline lives.
//
// A saved dataset is a folder: shard files (TFRecord files whose records are
// encoded elements, CRC-checked) and a metadata file written last, which
// marks the save complete. The layout is in docs/formats.md ("Saved
// datasets and snapshots"); the semantics in docs/pipeline.md ("Snapshots,
// save and load").
//
// Functions given here (shard_func, reader_func) are called from the thread
// that runs save() or iterates the dataset, one call at a time; they must
// not throw. Options are values: copy them freely.
#ifndef SLUICE_PIPELINE_SNAPSHOT_H_
#define SLUICE_PIPELINE_SNAPSHOT_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sluice/core/element.h"
#include "sluice/core/result.h"
#include "sluice/pipeline/element_spec.h"
#include "sluice/records/compression.h"

namespace sluice {

class Dataset;

// The shard (a number >= 0) an element is written to.
using ShardFn = std::function<Result<int64_t>(const Element&)>;
// Makes the dataset that reads a save back from its shards: one Dataset
// per shard file, in ascending shard number (tf.data passes a Dataset of
// Datasets; sluice passes a vector).
using ReaderFn = std::function<Result<Dataset>(const std::vector<Dataset>& shards)>;

// Shards of the default shard_func: element i goes to shard i % this.
// (tf.data uses the machine's CPU count, which makes the files depend on
// the machine.)
inline constexpr int64_t kDefaultSnapshotShards = 4;
// At most this many distinct shards per save (each one is an open file
// while writing and while reading).
inline constexpr int64_t kMaxSnapshotShards = 1024;

struct SaveOptions {
  // kNone, kGzip or kZlib (kAuto is kNone).
  Compression compression = Compression::kNone;
  // Empty: round robin over num_shards (element i to shard i % num_shards),
  // which the default reader reads back in the original order.
  ShardFn shard_func;
  int64_t num_shards = kDefaultSnapshotShards;
};

struct LoadOptions {
  // Unset: the spec saved in the metadata. Set: it must be compatible with
  // the saved one (same components and dtypes, compatible shapes), and it
  // becomes the dataset's spec.
  std::optional<ElementSpec> element_spec;
  // kAuto: the one in the metadata; otherwise it must be that one.
  Compression compression = Compression::kAuto;
  // Empty: the shards interleaved one element at a time, in shard order
  // (cycle_length = the number of shards, block_length 1): deterministic,
  // and the saved order for the default shard_func.
  ReaderFn reader_func;
};

struct SnapshotOptions {
  // kAuto (tf.data's "AUTO", which picks Snappy there) is kNone here:
  // sluice has no Snappy, and uncompressed shards read fastest.
  Compression compression = Compression::kAuto;
  // As SaveOptions.
  ShardFn shard_func;
  int64_t num_shards = kDefaultSnapshotShards;
  // As LoadOptions.
  ReaderFn reader_func;
  std::string name;
  // An uncompressed write records its progress (snapshot.progress) at least
  // every this many elements (and every 64 MiB), and whenever its iterator
  // is saved; an interrupted write resumes from the last one.
  int64_t progress_every = 4096;
};

// The folder that input.snapshot(path) writes and reads:
// path/<16 hex digits of the input graph's fingerprint>.
std::string SnapshotRunPath(const Dataset& input, const std::string& path);

}  // namespace sluice

#endif  // SLUICE_PIPELINE_SNAPSHOT_H_
