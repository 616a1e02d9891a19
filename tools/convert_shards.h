// Shard planning and naming for `sluice convert`.
//
// A conversion turns an ordered list of items (images) into shards: each
// shard holds a contiguous run of the list, so the bytes of every shard
// depend only on the list and the plan, never on how the work was spread
// over threads. Shard files are named as TensorFlow's converters name them:
// PREFIX-00003-of-00010.tfrecord (5-digit index, 5-digit count), with ".gz"
// or ".zz" appended for GZIP or ZLIB.
//
// Pure functions, except RemoveStaleTemporaries (touches the file system).
// Thread-safe.
#ifndef SLUICE_TOOLS_CONVERT_SHARDS_H_
#define SLUICE_TOOLS_CONVERT_SHARDS_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "sluice/core/rng.h"
#include "sluice/records/compression.h"

namespace sluice::tools {

// Items [begin, end) of the ordered list.
struct ShardRange {
  size_t begin = 0;
  size_t end = 0;
  size_t size() const { return end - begin; }
  friend bool operator==(const ShardRange&, const ShardRange&) = default;
};

// The largest shard count the 5-digit names can show.
inline constexpr size_t kMaxShards = 99999;

// "PREFIX-00003-of-00010.tfrecord", plus ".gz" (GZIP) or ".zz" (ZLIB).
// REQUIRES: shard < num_shards <= kMaxShards.
std::string ShardPath(const std::string& prefix, size_t shard, size_t num_shards,
                      Compression compression);
// "PREFIX-labels.txt".
std::string LabelsPath(const std::string& prefix);

// `num_shards` contiguous parts whose sizes differ by at most one: shard i
// holds items [i * n / N, (i + 1) * n / N). Shards are empty when
// num_shards > num_items. REQUIRES: num_shards >= 1.
std::vector<ShardRange> PlanShardsByCount(size_t num_items, size_t num_shards);

// Contiguous shards of about `target_bytes` each, given every item's size:
// N = ceil(total / target) shards (at least 1, at most one per item, at
// most kMaxShards), each cut where its bytes come closest to an even share
// of what remains. No shard is empty unless the list is. REQUIRES:
// target_bytes >= 1.
std::vector<ShardRange> PlanShardsBySize(std::span<const uint64_t> item_bytes,
                                         uint64_t target_bytes);

// One task's share of the shards when several processes (tasks) split one
// conversion: task `index` of `count` writes the shards s with
// s % count == index. Every task computes the same list and plan, so the
// shards are the bytes a single process would write.
struct TaskShare {
  size_t count = 1;  // >= 1
  size_t index = 0;  // < count
  bool Owns(size_t shard) const { return shard % count == index; }
  // How many of shards [0, num_shards) it owns.
  size_t ShardsOf(size_t num_shards) const {
    return num_shards > index ? (num_shards - 1 - index) / count + 1 : 0;
  }
};

// The shards of [0, num_shards) that `task` owns, compactly: "shard 2",
// "shards 1, 4, 7", "shards 1, 4, 7, ..., 97 (every 3rd)" (the first three
// and the last when there are more than five; "every Nth" only when
// count > 1), or "no shards".
std::string DescribeTaskShards(const TaskShare& task, size_t num_shards);

// Shuffles `items` with a seeded Fisher-Yates over core/rng.h's Rng: the
// same order for the same seed on every platform (std::shuffle's algorithm
// is the standard library's choice).
template <typename T>
void SeededShuffle(std::vector<T>& items, uint64_t seed) {
  Rng rng(seed);
  for (size_t i = items.size(); i > 1; --i) {
    std::swap(items[i - 1], items[static_cast<size_t>(rng.UniformInt(i))]);
  }
}

// Deletes the hidden temporary files an interrupted run left beside the
// given shard paths: ".NAME.tmp-*" and ".NAME.idx.tmp-*" (the names
// TFRecordWriter and RecordIndex::Save write under), but never one that a
// live writer holds (core/file.h, RemoveIfAbandoned). Returns how many were
// removed. Never touches any other file.
size_t RemoveStaleTemporaries(std::span<const std::string> shard_paths);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_CONVERT_SHARDS_H_
