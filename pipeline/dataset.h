// Dataset: a lazy, immutable description of an input pipeline (tf.data's
// Dataset), built by chaining sources and transformations:
//
//   auto ds = sluice::TFRecordDataset(files)
//                 .map(parse, {.parallelism = sluice::kAutotune})
//                 .shuffle(10'000, {.seed = 7})
//                 .batch(128, {.drop_remainder = true})
//                 .prefetch(sluice::kAutotune);
//   for (const sluice::Element& batch : ds) train_step(batch);
//
// A Dataset is a cheap value (a shared pointer to an immutable node): copy
// it freely, from any thread. Nothing runs until iterator() is called; each
// iterator is independent.
//
// Errors in building (mismatched shapes, a bad argument) do not throw: the
// Dataset carries the first one (status()), every later transformation keeps
// it, and iterator() returns it. Check status() right after building to
// report it at once. The range-for is the one place that throws: Error,
// carrying the Status that next() returned.
//
// Functions given to map, filter, flat_map, interleave and from_generator
// may be called from several threads at once (with parallelism > 1) and
// must be thread-safe; they must not throw.
#ifndef SLUICE_PIPELINE_DATASET_H_
#define SLUICE_PIPELINE_DATASET_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "sluice/core/device.h"
#include "sluice/core/element.h"
#include "sluice/core/error.h"
#include "sluice/core/result.h"
#include "sluice/core/tensor.h"
#include "sluice/pipeline/element_spec.h"
#include "sluice/pipeline/grouping.h"
#include "sluice/pipeline/iterator.h"
#include "sluice/pipeline/map_context.h"
#include "sluice/pipeline/options.h"
#include "sluice/pipeline/snapshot.h"

namespace sluice {

namespace pipeline_internal {
class DatasetNode;
}  // namespace pipeline_internal

class Dataset;
class FileFormat;  // file_source.h

using MapFn = std::function<Result<Element>(Element, const MapContext&)>;
using PredicateFn = std::function<Result<bool>(const Element&)>;
using DatasetFn = std::function<Result<Dataset>(const Element&)>;
using ReduceFn = std::function<Result<Element>(Element state, Element element)>;
// Returns the next element, nullopt at the end, or an error.
using GeneratorFn = std::function<Result<std::optional<Element>>()>;
// scan's function: (state, element) -> (new state, output element).
using ScanFn = std::function<Result<std::pair<Element, Element>>(Element state, Element element)>;
// rejection_resample's class function: an element's class, in [0, classes).
using ClassFn = std::function<Result<int64_t>(const Element&)>;

class Dataset {
 public:
  // ---- Sources ----------------------------------------------------------
  // int64 scalars start, start+step, ... below stop (above, for step < 0).
  static Dataset range(int64_t stop);
  static Dataset range(int64_t start, int64_t stop, int64_t step = 1);
  // Slices every tensor along its first dimension: element i holds row i of
  // each. InvalidArgument (naming the shapes) if the first dimensions differ
  // or a tensor is a scalar. `names` names the components.
  static Dataset from_tensor_slices(std::vector<Tensor> tensors,
                                    std::vector<std::string> names = {});
  // One element.
  static Dataset from_tensors(Element element);
  // Calls `make` once per iterator to get a generator, then the generator
  // until it returns nullopt. `spec` is the elements' spec (each is checked
  // against it when known). save()/restore() replay: restore calls a fresh
  // generator and skips the elements already produced, so the generator
  // must be deterministic for checkpoints to be exact.
  static Dataset from_generator(std::function<GeneratorFn()> make,
                                ElementSpec spec = ElementSpec::Unknown());
  // File names matching the glob pattern(s), as string scalars, in sorted
  // order (or shuffled with options.seed). NotFound if nothing matches; a
  // folder a pattern needs that cannot be read (EACCES, EIO, ELOOP...) is an
  // error (code from errno) naming the pattern, the folder and the cause.
  static Dataset list_files(const std::string& pattern, ListFilesOptions options = {});
  static Dataset list_files(const std::vector<std::string>& patterns,
                            ListFilesOptions options = {});
  // Element i is the components of element i of every input, in order; ends
  // with the shortest input. Names are kept.
  static Dataset zip(const std::vector<Dataset>& datasets);
  // A random mixture of `datasets` (tf.data's sample_from_datasets): each
  // element comes from input j with probability weights[j] / sum(weights)
  // (default: uniform). An exhausted input is dropped and the others'
  // weights renormalized, or with stop_on_empty_dataset the mixture ends.
  // Draw k is a pure function of (seed, epoch, k, the inputs still live), so
  // the interleaving is the same on any machine; the iterator state is each
  // input's state plus the draw counter, not the weights: a state restores
  // into a mixture built with other weights, every input continuing from its
  // saved position. Over random-access inputs of known cardinality the
  // mixture is random access itself (shard, global_shuffle, distribute read
  // only their own elements). InvalidArgument for no datasets, a weight
  // count that differs, a negative, NaN or infinite weight, all-zero
  // weights, or incompatible element specs.
  static Dataset sample_from_datasets(std::vector<Dataset> datasets,
                                      std::vector<double> weights = {},
                                      SampleFromDatasetsOptions options = {});
  // Weights from a dataset: one float32/float64 vector of len(datasets)
  // weights per draw (the mixture ends with it).
  static Dataset sample_from_datasets(std::vector<Dataset> datasets, Dataset weights,
                                      SampleFromDatasetsOptions options = {});
  // Element k comes from datasets[c_k], c_k the k-th element of
  // choice_dataset (int64 scalars in [0, len(datasets)); another value is
  // InvalidArgument naming it and its position). tf.data's
  // choose_from_datasets.
  static Dataset choose_from_datasets(std::vector<Dataset> datasets, Dataset choice_dataset,
                                      ChooseFromDatasetsOptions options = {});

  // ---- Transformations --------------------------------------------------
  Dataset map(MapFn fn, MapOptions options = {}) const;
  // Also accepts f(Element) and functions returning Element instead of Result.
  template <typename F>
  requires(!std::is_convertible_v<F, MapFn> ||
           !std::is_invocable_v<F, Element, const MapContext&>) Dataset
      map(F&& f, MapOptions options = {})
  const;

  Dataset filter(PredicateFn predicate, FilterOptions options = {}) const;
  // fn maps each element to a dataset; their elements follow one another.
  Dataset flat_map(DatasetFn fn) const;
  // fn maps each element to a dataset; cycle_length of them are read at
  // once, block_length elements from each in turn (tf.data's interleave).
  Dataset interleave(DatasetFn fn, InterleaveOptions options = {}) const;
  // A buffer of buffer_size elements from which each output is drawn at
  // random (tf.data's shuffle). Memory: buffer_size elements.
  Dataset shuffle(int64_t buffer_size, ShuffleOptions options = {}) const;
  // A uniform random permutation of the whole dataset that holds no
  // elements: the input must allow random access (range, from_tensor_slices,
  // indexed TFRecord files, and maps, take, skip, shard over them);
  // FailedPrecondition otherwise.
  Dataset global_shuffle(GlobalShuffleOptions options = {}) const;
  // Stacks batch_size consecutive elements into one (a new first dimension).
  // Components must have equal shapes within a batch (InvalidArgument naming
  // the element and the shapes otherwise; see padded_batch).
  Dataset batch(int64_t batch_size, BatchOptions options = {}) const;
  Dataset padded_batch(int64_t batch_size, PaddedBatchOptions options = {}) const;
  // Splits each element along its first dimension into rows.
  Dataset unbatch() const;
  // Produces up to buffer_size elements ahead in the background.
  Dataset prefetch(int64_t buffer_size = kAutotune, PrefetchOptions options = {}) const;
  // The last stage on a GPU machine (tf.data.experimental.prefetch_to_device):
  // elements copied into `device`'s memory ahead of the consumer, at most
  // `buffer_size` at a time (kAutotune: 2), the copy of element N+1
  // overlapping the consumer's work on N. The output's tensors are device
  // memory (Tensor::device() == device; on "cpu:0", the device runtime's
  // host backend, host memory): hand them to device code (a DeviceTensor,
  // gpu:: ops, the nn GPU backend), never read them on the host. Their
  // blocks belong to the copy stream: work queued on another stream must
  // gpu::RecordUse them (device/device_memory.h) before they are dropped.
  // String components are an error (they stay on the host). Saves and
  // restores exactly: buffered elements are replayed from host copies.
  Dataset prefetch_to_device(const Device& device, int64_t buffer_size = kAutotune,
                             PrefetchToDeviceOptions options = {}) const;
  // `device` as Device::Parse reads it: "gpu:0", "/device:GPU:0", "cpu:0".
  Dataset prefetch_to_device(std::string_view device, int64_t buffer_size = kAutotune,
                             PrefetchToDeviceOptions options = {}) const;
  // count epochs (-1: forever).
  Dataset repeat(int64_t count = -1) const;
  Dataset take(int64_t count) const;  // -1: all
  Dataset skip(int64_t count) const;  // -1: all
  // Element `index` of every round of num_shards consecutive elements
  // (elements index, index + num_shards, ...). On a positional input (range,
  // indexed TFRecord files, global_shuffle, maps over them) it reads only its
  // own elements. ShardOptions makes every shard the same length (equal,
  // pad), as distributed training needs; see also sluice/distribute.
  Dataset shard(int64_t num_shards, int64_t index, ShardOptions options = {}) const;
  // The first iteration's elements are kept (in memory if filename is
  // empty, else in that file, written under a temporary name and renamed
  // when the pass completes) and later iterations read them back.
  Dataset cache(std::string filename = "") const;
  // tf.data's snapshot: the first iteration runs the input and writes its
  // elements under path/<fingerprint of the input graph> while passing them
  // on; iterations after that (in this process or another) read them back
  // instead. See docs/pipeline.md, "Snapshots, save and load".
  Dataset snapshot(const std::string& path, SnapshotOptions options = {}) const;
  // This dataset's elements, then other's. InvalidArgument if their specs
  // are incompatible.
  Dataset concatenate(const Dataset& other) const;
  // Prepends an int64 index component named "index" (start, start+1...).
  Dataset enumerate(int64_t start = 0) const;
  // Skips elements whose production failed (counted in stats) instead of
  // ending the pipeline. Cancellation and RAM budget errors (a budget too
  // small for an element, a batch or what the pipeline must hold) are never
  // ignored.
  Dataset ignore_errors() const;
  Dataset with_options(Options options) const;
  // The input unchanged, reporting `expected` (a count or
  // kInfiniteCardinality) as its cardinality
  // (tf.data.experimental.assert_cardinality). Reading checks it: an input
  // that ends early or runs past it is FailedPrecondition ("expected to
  // contain 10 elements but contained only 7 elements"); an input whose
  // cardinality is known when built and differs is the build error.
  Dataset assert_cardinality(int64_t expected) const;

  // ---- Scans, uniques and other small stages (docs/pipeline.md) ----------
  // tf.data's scan: fn(state, element) -> (new_state, output), from
  // initial_state; the outputs are the elements. The state must keep the
  // initial state's components and dtypes (shapes may change): otherwise
  // InvalidArgument naming the stage and the element. The state is saved
  // with the iterator, so restore continues exactly. fn is called in order,
  // from one thread at a time.
  Dataset scan(Element initial_state, ScanFn fn, ScanOptions options = {}) const;
  // tf.data's take_while: the elements up to (not including) the first one
  // for which predicate returns false; the input is not read further.
  Dataset take_while(PredicateFn predicate, TakeWhileOptions options = {}) const;
  // tf.data's unique: each distinct element once, in order of first
  // appearance. Elements must have one int32, int64 or string component
  // (InvalidArgument otherwise, at once when the spec is known). The values
  // seen are kept (saved with the iterator, charged to the RAM budget).
  Dataset unique() const;
  // tf.data's rebatch: the rows of the input's batches regrouped into
  // batches of batch_size (unbatch().batch(batch_size), without making the
  // rows: a batch within one input batch is a view of it, one across input
  // batches one copy). The list form uses the sizes in turn, cyclically.
  Dataset rebatch(int64_t batch_size, RebatchOptions options = {}) const;
  Dataset rebatch(std::vector<int64_t> batch_sizes, RebatchOptions options = {}) const;
  // tf.data's rejection_resample: (class, element) pairs whose classes
  // follow target_dist (one probability per class, summing to 1). The
  // output's first component is "class" (int32 scalar), then the element's.
  // Mixes the input as it is (probability m = min_i t_i/p_i) with the input
  // filtered by rejection (class i accepted with probability
  // (t_i/p_i - m) / (max_i t_i/p_i - m)), the two read as two passes over the
  // input as tf.data does; p is options.initial_dist or estimated from the
  // classes seen so far. Deterministic with a seed.
  Dataset rejection_resample(ClassFn class_fn, std::vector<double> target_dist,
                             RejectionResampleOptions options = {}) const;
  // tf.data's Dataset.random: infinite uniform int64 scalars in [0, 2^32)
  // (tf.data's range). Element i of iteration e is the first 32-bit word of
  // Philox4x32-10 (core/rng.h) at stream i of seed mix(seed, e) (e = 0 unless
  // rerandomize_each_iteration): a pure function of (seed, epoch, i), so the
  // dataset allows random access and is positional.
  static Dataset random(RandomOptions options = {});
  // tf.data's Dataset.counter: start, start + step, ... forever, of `dtype`
  // (int32, int64, float32 or float64). Random access, positional.
  static Dataset counter(int64_t start = 0, int64_t step = 1, DType dtype = DType::kInt64);
  // transformation(*this): a reusable piece of pipeline written as a
  // function, applied in the chain (tf.data's apply), e.g.
  //   ds.apply(sluice::distribute(input_context)).map(...)
  // A dataset that carries an error returns it without calling the function.
  Dataset apply(const std::function<Dataset(const Dataset&)>& transformation) const;

  // ---- Windows and groups (grouping.h) -----------------------------------
  // Windows of `size` rows (tf.data's window): window k holds input
  // elements k*shift + i*stride for i < size, as one element whose
  // components are those rows stacked ([n, ...], n <= size; rows must have
  // equal shapes, as for batch). The last windows are partial unless
  // drop_remainder. Memory: (size - 1) * stride + 1 elements.
  Dataset window(int64_t size, WindowOptions options = {}) const;
  // The rows of a window (or of any element whose components share a first
  // dimension): from_tensor_slices keeping the names, whose batch(k) hands
  // out views of the window's rows instead of copying them.
  static Dataset from_window(const Element& window);
  // Groups elements by key_fn into windows of window_size; each full window
  // (and, at the end of the input, each partial one, in increasing key
  // order) becomes the elements of reduce_fn(key, window) (tf.data's
  // group_by_window). Memory: the elements of the open windows.
  Dataset group_by_window(KeyFn key_fn, WindowReduceFn reduce_fn, int64_t window_size,
                          GroupByWindowOptions options = {}) const;
  Dataset group_by_window(KeyFn key_fn, WindowReduceFn reduce_fn, WindowSizeFn window_size_fn,
                          GroupByWindowOptions options = {}) const;
  // Batches elements of similar length (tf.data's bucket_by_sequence_length):
  // bucket i holds lengths in [boundaries[i-1], boundaries[i]) (bucket 0
  // from -inf, the last to +inf) and is padded_batch'ed by
  // bucket_batch_sizes[i]; bucket_batch_sizes has one more entry than
  // bucket_boundaries, which must increase.
  Dataset bucket_by_sequence_length(ElementLengthFn element_length_fn,
                                    std::vector<int64_t> bucket_boundaries,
                                    std::vector<int64_t> bucket_batch_sizes,
                                    BucketBySequenceLengthOptions options = {}) const;

  // ---- Consuming -------------------------------------------------------
  // Folds fn over every element, in order, from `initial` (the dataset's
  // own iterator, read to its end); an empty dataset returns `initial`.
  // InvalidArgument for an empty fn, an infinite dataset, or a state that
  // fn returns with other components or dtypes than `initial` (shapes may
  // change). The first error ends it: the pipeline's (naming the stage) or
  // fn's (its code, with "reduce: the function failed on element N").
  Result<Element> reduce(Element initial, ReduceFn fn) const;
  // Writes every element to the folder `path` (shard files, then a
  // metadata file that marks the save complete; tf.data's save). Runs the
  // dataset to its end in the calling thread. InvalidArgument for an
  // infinite dataset; the first error (the pipeline's, shard_func's, the
  // file system's) ends it and leaves no complete save.
  Status save(const std::string& path, SaveOptions options = {}) const;
  // The elements a save() (or snapshot) wrote to `path`, with its spec and
  // cardinality. A missing, incomplete or corrupt metadata file makes a
  // Dataset carrying the error (status()), naming the file; a corrupt or
  // truncated shard is DataLoss from next(), naming the file and offset.
  static Dataset load(const std::string& path, LoadOptions options = {});
  // A new, independent iterator, or the build error.
  Result<Iterator> iterator() const;
  // Element `index` of a random-access dataset (tf.data.experimental.at),
  // computed alone. FailedPrecondition if !random_access(), OutOfRange past
  // the end. Each call makes a short-lived iterator: for many elements,
  // iterate (or global_shuffle) instead.
  Result<Element> at(int64_t index) const;

  class RangeIterator;
  // Range-for support: begin() makes an iterator; throws Error on failure.
  RangeIterator begin() const;
  std::default_sentinel_t end() const { return {}; }

  // ---- Introspection ---------------------------------------------------
  const Status& status() const;
  const ElementSpec& element_spec() const;
  // A count, kInfiniteCardinality or kUnknownCardinality.
  int64_t cardinality() const;
  // Element i can be computed without reading the others (range,
  // from_tensor_slices, list_files, indexed TFRecord files, and maps, take,
  // skip, shard, global_shuffle over them): what global_shuffle needs.
  bool random_access() const;
  // "range(10) -> map -> batch(4)".
  std::string DebugString() const;
  // A file source (TFRecordDataset): the files it reads, in order; empty for
  // any other dataset.
  std::vector<std::string> source_files() const;
  // The same source over `files` instead (how file-level sharding gives each
  // rank its files). FailedPrecondition if this is not a file source.
  Dataset with_source_files(std::vector<std::string> files) const;

  // For stage implementations.
  explicit Dataset(std::shared_ptr<const pipeline_internal::DatasetNode> node);
  static Dataset FromError(Status status);
  const std::shared_ptr<const pipeline_internal::DatasetNode>& node() const { return node_; }

 private:
  std::shared_ptr<const pipeline_internal::DatasetNode> node_;
  Status status_;
};

// Records of TFRecord files, as string scalars, one file after another (or
// num_parallel_reads at once). With indexes (FILE.idx) the cardinality is
// exact and the dataset allows random access.
Dataset TFRecordDataset(std::vector<std::string> filenames, TFRecordDatasetOptions options = {});
// For interleave over list_files: maps a file name element to its records.
DatasetFn tfrecords(TFRecordDatasetOptions options = {});
// The TFRecord format for FileSourceDataset (file_source.h); TFRecordDataset
// is FileSourceDataset over it.
std::shared_ptr<const FileFormat> TFRecordFormat(TFRecordDatasetOptions options = {});

// The range-for iterator: an input iterator whose ++ calls next() and throws
// Error on failure.
class Dataset::RangeIterator {
 public:
  using value_type = Element;
  using difference_type = std::ptrdiff_t;
  RangeIterator() = default;
  const Element& operator*() const { return *current_; }
  const Element* operator->() const { return &*current_; }
  RangeIterator& operator++();
  void operator++(int) { ++*this; }
  friend bool operator==(const RangeIterator& it, std::default_sentinel_t) {
    return !it.current_.has_value();
  }

 private:
  friend class Dataset;
  explicit RangeIterator(Iterator it);
  std::shared_ptr<Iterator> it_;
  std::optional<Element> current_;
};

// ---------------------------------------------------------------------------

template <typename F>
requires(!std::is_convertible_v<F, MapFn> || !std::is_invocable_v<F, Element, const MapContext&>)
    Dataset Dataset::map(F&& f, MapOptions options)
const {
  using Fn = std::decay_t<F>;
  if constexpr (std::is_invocable_v<Fn&, Element, const MapContext&>) {
    return map(
        MapFn([g = Fn(std::forward<F>(f))](Element e, const MapContext& c) -> Result<Element> {
          return g(std::move(e), c);
        }),
        std::move(options));
  } else {
    static_assert(std::is_invocable_v<Fn&, Element>,
                  "map takes f(Element) or f(Element, const MapContext&)");
    return map(MapFn([g = Fn(std::forward<F>(f))](Element e, const MapContext&) -> Result<Element> {
                 return g(std::move(e));
               }),
               std::move(options));
  }
}

}  // namespace sluice

#endif  // SLUICE_PIPELINE_DATASET_H_
