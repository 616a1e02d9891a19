// Factories of every stage, one .cc per stage (or family) under pipeline/.
// Dataset's methods call these; they validate arguments and return a
// Dataset carrying an error when something is wrong.
#ifndef SLUICE_PIPELINE_INTERNAL_STAGES_H_
#define SLUICE_PIPELINE_INTERNAL_STAGES_H_

#include "sluice/pipeline/dataset.h"

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
// ignore_errors.cc, with_options.cc
Dataset MakeIgnoreErrors(const Dataset& input);
Dataset MakeWithOptions(const Dataset& input, Options options);

}  // namespace sluice::pipeline_internal

#endif  // SLUICE_PIPELINE_INTERNAL_STAGES_H_
