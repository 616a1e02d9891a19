// Factories of every stage, one .cc per stage (or family) under pipeline/.
// Dataset's methods call these; they validate arguments and return a
// Dataset carrying an error when something is wrong.
#ifndef SLUICE_PIPELINE_INTERNAL_STAGES_H_
#define SLUICE_PIPELINE_INTERNAL_STAGES_H_

#include "sluice/pipeline/dataset.h"
#include "sluice/pipeline/pack_sequences.h"

namespace sluice::pipeline_internal {

// sources.cc
Dataset MakeRange(int64_t start, int64_t stop, int64_t step);
Dataset MakeFromTensorSlices(std::vector<Tensor> tensors, std::vector<std::string> names);
Dataset MakeFromTensors(Element element);
// generator.cc
Dataset MakeFromGenerator(std::function<GeneratorFn()> make, ElementSpec spec);
// list_files.cc
Dataset MakeListFiles(const std::vector<std::string>& patterns, ListFilesOptions options);
// tfrecord_dataset.cc
Dataset MakeTFRecordDataset(std::vector<std::string> files, TFRecordDatasetOptions options);

// map.cc (map and prefetch share AsyncMapIterator)
Dataset MakeMap(const Dataset& input, MapFn fn, MapOptions options);
Dataset MakePrefetch(const Dataset& input, int64_t buffer_size, PrefetchOptions options);
// prefetch_to_device_stage.cc
Dataset MakePrefetchToDevice(const Dataset& input, const Device& device, int64_t buffer_size,
                             PrefetchToDeviceOptions options);
// filter.cc
Dataset MakeFilter(const Dataset& input, PredicateFn pred, FilterOptions options);
// flat_map.cc / interleave.cc
Dataset MakeFlatMap(const Dataset& input, DatasetFn fn);
Dataset MakeInterleave(const Dataset& input, DatasetFn fn, InterleaveOptions options);
// shuffle.cc / global_shuffle.cc
Dataset MakeShuffle(const Dataset& input, int64_t buffer_size, ShuffleOptions options);
Dataset MakeGlobalShuffle(const Dataset& input, GlobalShuffleOptions options);
// batch.cc, padded_batch.cc, unbatch.cc
Dataset MakeBatch(const Dataset& input, int64_t batch_size, BatchOptions options);
Dataset MakePaddedBatch(const Dataset& input, int64_t batch_size, PaddedBatchOptions options);
Dataset MakeUnbatch(const Dataset& input);
// repeat.cc, take_skip.cc, shard.cc
Dataset MakeRepeat(const Dataset& input, int64_t count);
Dataset MakeTake(const Dataset& input, int64_t count);
Dataset MakeSkip(const Dataset& input, int64_t count);
Dataset MakeShard(const Dataset& input, int64_t num_shards, int64_t index, ShardOptions options);
// cache.cc
Dataset MakeCache(const Dataset& input, std::string filename);
// save_load.cc, snapshot.cc (the folder format: internal/snapshot_format.h)
struct SnapshotMetadata;
Dataset MakeLoad(const std::string& path, LoadOptions options);
Status RunSave(const Dataset& ds, const std::string& path, SaveOptions options);
// The dataset reading the complete save in `dir` described by `m`.
Result<Dataset> LoadSnapshotFolder(const std::string& dir, const SnapshotMetadata& m,
                                   const LoadOptions& options);
Dataset MakeSnapshot(const Dataset& input, std::string path, SnapshotOptions options);
// zip.cc, concatenate.cc, enumerate.cc
Dataset MakeZip(const std::vector<Dataset>& inputs);
Dataset MakeConcatenate(const Dataset& a, const Dataset& b);
Dataset MakeEnumerate(const Dataset& input, int64_t start);
// sample_from_datasets.cc, choose_from_datasets.cc (internal/mixing.h)
Dataset MakeSampleFromDatasets(std::vector<Dataset> inputs, std::vector<double> weights,
                               SampleFromDatasetsOptions options);
Dataset MakeSampleFromDatasets(std::vector<Dataset> inputs, Dataset weights,
                               SampleFromDatasetsOptions options);
Dataset MakeChooseFromDatasets(std::vector<Dataset> inputs, Dataset choice,
                               ChooseFromDatasetsOptions options);
// ignore_errors.cc, with_options.cc
Dataset MakeIgnoreErrors(const Dataset& input);
Dataset MakeWithOptions(const Dataset& input, Options options);
// assert_cardinality.cc
Dataset MakeAssertCardinality(const Dataset& input, int64_t expected);
// window.cc, group_by_window.cc, group_by_reducer.cc, bucket_by_sequence_length.cc
Dataset MakeWindow(const Dataset& input, int64_t size, WindowOptions options);
Dataset MakeFromWindow(const Element& window);
// A random-access dataset of these elements (a group's window).
Dataset MakeFromElements(std::vector<Element> elements, ElementSpec spec);
// `spec`: the output's, if the caller knows it (else Unknown).
Dataset MakeGroupByWindow(const Dataset& input, KeyFn key_fn, WindowReduceFn reduce_fn,
                          WindowSizeFn size_fn, GroupByWindowOptions options, ElementSpec spec);
Dataset MakeGroupByReducer(const Dataset& input, KeyFn key_fn, Reducer reducer,
                           GroupByReducerOptions options);
Dataset MakeBucketBySequenceLength(const Dataset& input, ElementLengthFn length_fn,
                                   std::vector<int64_t> boundaries, std::vector<int64_t> sizes,
                                   BucketBySequenceLengthOptions options);
// scan.cc, take_while.cc, unique.cc, rebatch.cc, random_counter.cc,
// rejection_resample.cc (docs/pipeline.md, "Scans, uniques and other small
// stages")
Dataset MakeScan(const Dataset& input, Element initial_state, ScanFn fn, ScanOptions options);
Dataset MakeTakeWhile(const Dataset& input, PredicateFn pred, TakeWhileOptions options);
Dataset MakeUnique(const Dataset& input);
Dataset MakeRebatch(const Dataset& input, std::vector<int64_t> batch_sizes, RebatchOptions options);
Dataset MakeRandom(RandomOptions options);
Dataset MakeCounter(int64_t start, int64_t step, DType dtype);
Dataset MakeRejectionResample(const Dataset& input, ClassFn class_fn,
                              std::vector<double> target_dist, RejectionResampleOptions options);
// pack_sequences.cc
Dataset MakePackSequences(const Dataset& input, int64_t length, PackOptions options);

}  // namespace sluice::pipeline_internal

#endif  // SLUICE_PIPELINE_INTERNAL_STAGES_H_
