// Options of a pipeline and of its stages, with tf.data's names and defaults.
//
// Plain structs meant for designated initializers:
//   ds.map(fn, {.parallelism = sluice::kAutotune});
//   ds.with_options({.seed = 7, .cpu_budget = 4});
// Unset optionals mean "inherit": a stage's `deterministic` and `seed` fall
// back to the pipeline's Options, which fall back to the defaults below.
#ifndef SLUICE_PIPELINE_OPTIONS_H_
#define SLUICE_PIPELINE_OPTIONS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sluice/core/element.h"
#include "sluice/core/shape.h"
#include "sluice/pipeline/element_spec.h"
#include "sluice/records/compression.h"

namespace sluice::gpu {
class CachingAllocator;
class Stream;
}  // namespace sluice::gpu

namespace sluice {

// A parameter the autotuner chooses (and re-chooses) while the pipeline runs.
inline constexpr int64_t kAutotune = -1;

// What kAutotune stands for where the count decides the order of the
// elements: InterleaveOptions::cycle_length, and
// TFRecordDatasetOptions::num_parallel_reads (capped at the file count).
// A constant, not the CPU count (tf.data's choice), so that the same
// pipeline and seed give the same elements in the same order on any
// machine, whatever cpu_budget or CPU affinity; the threads that fill the
// open inputs and read ahead in them still follow the cores.
inline constexpr int64_t kAutotuneCycleLength = 16;

// Pipeline-wide options (tf.data.Options), set with Dataset::with_options.
// When several with_options stages are chained, the outermost set field wins.
struct Options {
  // Elements come out in a fixed order whatever the parallelism and timing
  // (default true, as in tf.data). Stages may override it for themselves.
  std::optional<bool> deterministic;
  // Seed of every random stage that was not given its own seed, and of
  // per-element randomness (MapContext::rng). Unset: a fresh random seed
  // for each iterator, as tf.data does without a seed.
  std::optional<uint64_t> seed;
  // Cores the pipeline's computation may keep busy, enforced: a thread holds
  // a share of a core while it computes for the pipeline (a function call,
  // a read-ahead), and no more than cpu_budget cores are held at once; the
  // autotuner keeps its choices within it too. The task arena has 4x as many
  // slots, so functions that wait (I/O) do not hold compute's cores.
  // Default: the CPUs this process may run on (sched_getaffinity).
  std::optional<int> cpu_budget;
  // Threads the pipeline's task arena may run at once, the most any parallel
  // stage may use (default 4 x cpu_budget, so calls that wait on I/O do not
  // hold the cores compute needs). Every arena thread left without work
  // spins, yielding, while the stages' long-lived tasks run, and preempts the
  // threads that compute: a pipeline whose calls all compute (image decode)
  // keeps fewer threads runnable with cpu_budget or cpu_budget + 1 here.
  std::optional<int> max_threads;
  // Bytes the pipeline may hold, a hard ceiling: read-ahead (prefetch,
  // parallel map and interleave buffers) starts only if it fits, and what it
  // must hold (batches being built, shuffle buffers, an in-memory cache(),
  // open files' read buffers) is charged too; a budget too small for that
  // is ResourceExhausted naming the stage and the sizes (docs/pipeline.md,
  // "RAM budget"). Default: half of the memory available to the process
  // (MemAvailable, or the cgroup limit if lower).
  std::optional<int64_t> ram_budget;
  // Run the autotuner (default true). Off: kAutotune parameters stay at
  // their starting values.
  std::optional<bool> autotune;
  // Map-and-batch fusion (default true, as tf.data's
  // experimental_optimization.map_and_batch_fusion): a map directly
  // followed by batch copies its big outputs into the batch's buffer on its
  // own workers, and the batch copies nothing. The results are the same
  // either way; off, batch copies every row itself.
  std::optional<bool> map_and_batch_fusion;
};

struct MapOptions {
  // Concurrent calls of the function: 1 (default: in the caller's thread),
  // N, or kAutotune.
  int64_t parallelism = 1;
  // Order preserved when parallel. Unset: Options::deterministic.
  std::optional<bool> deterministic;
  // The spec of the function's output, if known; checked on every element.
  // Unset: the output spec is unknown until elements flow.
  std::optional<ElementSpec> output_spec;
  // The stage's name in stats, traces and error messages (default "map").
  std::string name;
};

struct FilterOptions {
  std::string name;
};

struct InterleaveOptions {
  // Input elements whose datasets are open at once; it decides the order.
  // Default kAutotune: kAutotuneCycleLength (tf.data uses the CPU count,
  // which makes the order depend on the machine).
  int64_t cycle_length = kAutotune;
  // Consecutive elements taken from each before moving on (default 1).
  int64_t block_length = 1;
  // Threads filling the open datasets' buffers: 1 (default: sequential, in
  // the caller's thread), N, or kAutotune (starts at the CPU budget, at most
  // cycle_length). It never changes the order.
  int64_t parallelism = 1;
  std::optional<bool> deterministic;
  std::string name;
};

struct ShuffleOptions {
  // Unset: derived from Options::seed, or random.
  std::optional<uint64_t> seed;
  // A new order for every iteration (each iterator() and each repeat epoch).
  bool reshuffle_each_iteration = true;
  std::string name;
};

struct BatchOptions {
  bool drop_remainder = false;
  // Copy rows into the batch with several threads (worth it for big rows).
  bool parallel_copy = false;
  std::string name;
};

struct PaddedBatchOptions {
  // Per component, the padded shape (unknown dims pad to the batch's
  // longest). Empty: pad every dimension to the batch's longest.
  std::vector<Shape> padded_shapes;
  // Per component, a scalar padding value of the component's dtype. Empty:
  // zeros (and "" for strings).
  std::vector<Tensor> padding_values;
  bool drop_remainder = false;
  std::string name;
};

struct PrefetchOptions {
  std::string name;
};

// prefetch_to_device's. The stream and allocator are borrowed: they must
// outlive every iterator (and, the allocator, every element handed out).
struct PrefetchToDeviceOptions {
  std::string name;
  // The copy stream, on the stage's device. Null: each iterator makes its own.
  gpu::Stream* stream = nullptr;
  // Device memory. Null: the device's caching allocator.
  gpu::CachingAllocator* device_allocator = nullptr;
};

struct ShardOptions {
  // Every shard the same length: only complete rounds count, so each of the
  // num_shards shards gets floor(n / num_shards) elements and the n mod
  // num_shards of an incomplete last round are dropped. Over an input read
  // in order (unknown cardinality) a shard reads each round to its end
  // before returning its element.
  bool equal = false;
  // Every shard gets ceil(n / num_shards) elements (implies equal): a shard
  // whose element of the last round does not exist gets a copy of that
  // round's first element instead. Every element gains a float32 scalar
  // component `weight_name`: 1, and 0 for the copies, so losses and metrics
  // weighted by it count each real element exactly once (evaluation).
  bool pad = false;
  std::string weight_name = "sample_weight";
};

struct GlobalShuffleOptions {
  std::optional<uint64_t> seed;
  bool reshuffle_each_iteration = true;
  std::string name;
};

struct ListFilesOptions {
  // Shuffle the matched names, in a new order each iteration (default false
  // here; tf.data's default is true, which surprises people: sluice lists in
  // sorted order unless asked). `seed` unset: the pipeline's seed.
  bool shuffle = false;
  std::optional<uint64_t> seed;
};

struct TFRecordDatasetOptions {
  Compression compression = Compression::kAuto;
  // Bytes read per system call (default 1 MiB; tf.data's 256 KiB is slower).
  int64_t buffer_size = 1 << 20;
  // Files read at once, interleaved record by record (1: one after another);
  // it decides the order. kAutotune: kAutotuneCycleLength, capped at the
  // file count (tf.data uses the CPU count, which makes the order depend on
  // the machine). More than 1 also reads in parallel: each open file's next
  // buffer_size of records is read (checked, inflated) ahead in a task of
  // the pipeline, charged to the RAM budget, as many at once as the CPU
  // budget allows; 1 reads in the thread that pulls the records.
  int64_t num_parallel_reads = 1;
  bool verify_checksums = true;
  // Use FILE.idx where present: exact cardinality, random access (global
  // shuffle, record-level shard). Files without one are read sequentially.
  bool use_index = true;
  // The longest record accepted, in bytes (default 256 MiB): a longer one is
  // DataLoss naming the file and offset, before anything is allocated for
  // it, so that a small compressed file cannot claim gigabytes (a record's
  // length is only known to be real as its bytes inflate). Raise it for
  // larger records; TFRecord's own limit is 2^64, protobuf's 2 GiB.
  int64_t max_record_size = int64_t{256} << 20;
  std::string name;
};

// Dataset::sample_from_datasets (tf.data's sample_from_datasets).
struct SampleFromDatasetsOptions {
  // Seed of the draws. Unset: derived from Options::seed, or random.
  std::optional<uint64_t> seed;
  // End the mixture the first time an exhausted input is drawn (tf.data's
  // default false: drop that input and renormalize the others' weights).
  bool stop_on_empty_dataset = false;
  // A new interleaving each iteration (each iterator() and repeat epoch).
  bool rerandomize_each_iteration = false;
  std::string name;
};

// Dataset::choose_from_datasets (tf.data's choose_from_datasets).
struct ChooseFromDatasetsOptions {
  // End the mixture the first time an exhausted input is chosen (tf.data's
  // default true); false: skip the choices of exhausted inputs.
  bool stop_on_empty_dataset = true;
  std::string name;
};

// ---- Scans, uniques and other small stages (docs/pipeline.md) -------------

// Dataset::scan and Dataset::take_while.
struct ScanOptions {
  std::string name;
};
struct TakeWhileOptions {
  std::string name;
};

// Dataset::rebatch (tf.data's Dataset.rebatch).
struct RebatchOptions {
  // Drop a last batch smaller than its size (default false, as tf.data).
  bool drop_remainder = false;
  std::string name;
};

// Dataset::random (tf.data's Dataset.random).
struct RandomOptions {
  // Unset: the pipeline's seed (Options::seed), else a fresh one per
  // iterator, as tf.data does without a seed.
  std::optional<uint64_t> seed;
  // A new sequence for every iteration (repeat epoch, iterator() call);
  // default false, as tf.data's.
  bool rerandomize_each_iteration = false;
  std::string name;
};

// Dataset::rejection_resample (tf.data's Dataset.rejection_resample).
struct RejectionResampleOptions {
  // The input's class distribution; empty: estimated from the classes seen
  // so far (as tf.data does).
  std::vector<double> initial_dist;
  // Unset: the pipeline's seed.
  std::optional<uint64_t> seed;
  std::string name;
};

}  // namespace sluice

#endif  // SLUICE_PIPELINE_OPTIONS_H_
