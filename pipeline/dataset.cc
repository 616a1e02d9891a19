#include "sluice/pipeline/dataset.h"

#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/node.h"
#include "sluice/pipeline/internal/stages.h"

namespace sluice {

namespace pi = pipeline_internal;

Dataset::Dataset(std::shared_ptr<const pi::DatasetNode> node) : node_(std::move(node)) {
  if (!node_) status_ = Status::Internal("Dataset made from a null node");
}

Dataset Dataset::FromError(Status status) {
  Dataset d(nullptr);
  d.status_ = std::move(status);
  return d;
}

const Status& Dataset::status() const { return status_; }

const ElementSpec& Dataset::element_spec() const {
  static const ElementSpec kUnknown;
  return node_ ? node_->spec() : kUnknown;
}

int64_t Dataset::cardinality() const { return node_ ? node_->cardinality() : kUnknownCardinality; }
bool Dataset::random_access() const { return node_ && node_->random_access(); }

std::string Dataset::DebugString() const {
  if (!node_) return "<error: " + status_.ToString() + ">";
  std::string out;
  const pi::DatasetNode* n = node_.get();
  std::vector<std::string> parts;
  while (n) {
    std::string d = n->Describe();
    if (n->inputs().size() > 1) {
      d += "(";
      for (size_t i = 1; i < n->inputs().size(); ++i) {
        if (i > 1) d += ", ";
        d += Dataset(n->inputs()[i]).DebugString();
      }
      d += ")";
    }
    parts.push_back(d);
    n = n->inputs().empty() ? nullptr : n->inputs()[0].get();
  }
  for (size_t i = parts.size(); i-- > 0;) {
    out += parts[i];
    if (i) out += " -> ";
  }
  return out;
}

std::vector<std::string> Dataset::source_files() const {
  const std::vector<std::string>* files = node_ ? node_->source_files() : nullptr;
  return files ? *files : std::vector<std::string>();
}

Dataset Dataset::with_source_files(std::vector<std::string> files) const {
  if (!status_.ok()) return *this;
  Result<std::shared_ptr<const pi::DatasetNode>> n = node_->WithSourceFiles(std::move(files));
  if (!n.ok()) return FromError(n.status());
  return Dataset(std::move(n).value());
}

// Keeps the first error of a chain.
#define SLUICE_CHAIN(expr)           \
  do {                               \
    if (!status_.ok()) return *this; \
    return (expr);                   \
  } while (0)

Dataset Dataset::range(int64_t stop) { return pi::MakeRange(0, stop, 1); }
Dataset Dataset::range(int64_t start, int64_t stop, int64_t step) {
  return pi::MakeRange(start, stop, step);
}
Dataset Dataset::from_tensor_slices(std::vector<Tensor> tensors, std::vector<std::string> names) {
  return pi::MakeFromTensorSlices(std::move(tensors), std::move(names));
}
Dataset Dataset::from_tensors(Element element) { return pi::MakeFromTensors(std::move(element)); }
Dataset Dataset::from_generator(std::function<GeneratorFn()> make, ElementSpec spec) {
  return pi::MakeFromGenerator(std::move(make), std::move(spec));
}
Dataset Dataset::list_files(const std::string& pattern, ListFilesOptions options) {
  return pi::MakeListFiles({pattern}, std::move(options));
}
Dataset Dataset::list_files(const std::vector<std::string>& patterns, ListFilesOptions options) {
  return pi::MakeListFiles(patterns, std::move(options));
}
Dataset Dataset::zip(const std::vector<Dataset>& datasets) {
  for (const Dataset& d : datasets) {
    if (!d.status().ok()) return d;
  }
  return pi::MakeZip(datasets);
}
Dataset Dataset::sample_from_datasets(std::vector<Dataset> datasets, std::vector<double> weights,
                                      SampleFromDatasetsOptions options) {
  return pi::MakeSampleFromDatasets(std::move(datasets), std::move(weights), std::move(options));
}
Dataset Dataset::sample_from_datasets(std::vector<Dataset> datasets, Dataset weights,
                                      SampleFromDatasetsOptions options) {
  return pi::MakeSampleFromDatasets(std::move(datasets), std::move(weights), std::move(options));
}
Dataset Dataset::choose_from_datasets(std::vector<Dataset> datasets, Dataset choice_dataset,
                                      ChooseFromDatasetsOptions options) {
  return pi::MakeChooseFromDatasets(std::move(datasets), std::move(choice_dataset),
                                    std::move(options));
}

Dataset Dataset::map(MapFn fn, MapOptions options) const {
  SLUICE_CHAIN(pi::MakeMap(*this, std::move(fn), std::move(options)));
}
Dataset Dataset::filter(PredicateFn predicate, FilterOptions options) const {
  SLUICE_CHAIN(pi::MakeFilter(*this, std::move(predicate), std::move(options)));
}
Dataset Dataset::flat_map(DatasetFn fn) const {
  SLUICE_CHAIN(pi::MakeFlatMap(*this, std::move(fn)));
}
Dataset Dataset::interleave(DatasetFn fn, InterleaveOptions options) const {
  SLUICE_CHAIN(pi::MakeInterleave(*this, std::move(fn), std::move(options)));
}
Dataset Dataset::shuffle(int64_t buffer_size, ShuffleOptions options) const {
  SLUICE_CHAIN(pi::MakeShuffle(*this, buffer_size, std::move(options)));
}
Dataset Dataset::global_shuffle(GlobalShuffleOptions options) const {
  SLUICE_CHAIN(pi::MakeGlobalShuffle(*this, std::move(options)));
}
Dataset Dataset::batch(int64_t batch_size, BatchOptions options) const {
  SLUICE_CHAIN(pi::MakeBatch(*this, batch_size, std::move(options)));
}
Dataset Dataset::padded_batch(int64_t batch_size, PaddedBatchOptions options) const {
  SLUICE_CHAIN(pi::MakePaddedBatch(*this, batch_size, std::move(options)));
}
Dataset Dataset::unbatch() const { SLUICE_CHAIN(pi::MakeUnbatch(*this)); }
Dataset Dataset::prefetch(int64_t buffer_size, PrefetchOptions options) const {
  SLUICE_CHAIN(pi::MakePrefetch(*this, buffer_size, std::move(options)));
}

Dataset Dataset::prefetch_to_device(const Device& device, int64_t buffer_size,
                                    PrefetchToDeviceOptions options) const {
  SLUICE_CHAIN(pi::MakePrefetchToDevice(*this, device, buffer_size, std::move(options)));
}

Dataset Dataset::prefetch_to_device(std::string_view device, int64_t buffer_size,
                                    PrefetchToDeviceOptions options) const {
  Result<Device> d = Device::Parse(device);
  if (!d.ok()) return FromError(d.status().WithContext("prefetch_to_device"));
  return prefetch_to_device(*d, buffer_size, std::move(options));
}
Dataset Dataset::repeat(int64_t count) const { SLUICE_CHAIN(pi::MakeRepeat(*this, count)); }
Dataset Dataset::take(int64_t count) const { SLUICE_CHAIN(pi::MakeTake(*this, count)); }
Dataset Dataset::skip(int64_t count) const { SLUICE_CHAIN(pi::MakeSkip(*this, count)); }
Dataset Dataset::shard(int64_t num_shards, int64_t index, ShardOptions options) const {
  SLUICE_CHAIN(pi::MakeShard(*this, num_shards, index, std::move(options)));
}
Dataset Dataset::apply(const std::function<Dataset(const Dataset&)>& transformation) const {
  if (!status_.ok()) return *this;
  if (!transformation) return FromError(Status::InvalidArgument("apply: no transformation"));
  return transformation(*this);
}
Dataset Dataset::cache(std::string filename) const {
  SLUICE_CHAIN(pi::MakeCache(*this, std::move(filename)));
}
Dataset Dataset::concatenate(const Dataset& other) const {
  if (!other.status().ok() && status_.ok()) return other;
  SLUICE_CHAIN(pi::MakeConcatenate(*this, other));
}
Dataset Dataset::enumerate(int64_t start) const { SLUICE_CHAIN(pi::MakeEnumerate(*this, start)); }
Dataset Dataset::ignore_errors() const { SLUICE_CHAIN(pi::MakeIgnoreErrors(*this)); }
Dataset Dataset::with_options(Options options) const {
  SLUICE_CHAIN(pi::MakeWithOptions(*this, std::move(options)));
}

Dataset Dataset::assert_cardinality(int64_t expected) const {
  SLUICE_CHAIN(pi::MakeAssertCardinality(*this, expected));
}

#undef SLUICE_CHAIN

namespace {
// The outermost with_options wins, field by field.
void MergeOptions(const pi::DatasetNode& n, Options& o) {
  if (const Options* own = n.options()) {
    if (!o.deterministic) o.deterministic = own->deterministic;
    if (!o.seed) o.seed = own->seed;
    if (!o.cpu_budget) o.cpu_budget = own->cpu_budget;
    if (!o.max_threads) o.max_threads = own->max_threads;
    if (!o.ram_budget) o.ram_budget = own->ram_budget;
    if (!o.autotune) o.autotune = own->autotune;
    if (!o.map_and_batch_fusion) o.map_and_batch_fusion = own->map_and_batch_fusion;
  }
  for (const auto& in : n.inputs()) MergeOptions(*in, o);
}
}  // namespace

Result<Iterator> Dataset::iterator() const {
  if (!status_.ok()) return status_;
  Options options;
  MergeOptions(*node_, options);
  if (options.cpu_budget && *options.cpu_budget < 1) {
    return Status::InvalidArgument("cpu_budget must be at least 1, got " +
                                   std::to_string(*options.cpu_budget));
  }
  if (options.max_threads && *options.max_threads < 1) {
    return Status::InvalidArgument("max_threads must be at least 1, got " +
                                   std::to_string(*options.max_threads));
  }
  if (options.ram_budget && *options.ram_budget < 1) {
    return Status::InvalidArgument("ram_budget must be positive, got " +
                                   std::to_string(*options.ram_budget));
  }
  auto ctx = std::make_shared<pi::IteratorContext>(options);
  pi::IteratorParams params;
  params.iteration = node_->NextIterationNumber();
  ctx->RegisterTree(*node_, /*scope=*/0);
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<pi::IteratorNode> root,
                          pi::MakeIteratorOf(*node_, *ctx, params));
  return Iterator(node_, std::move(ctx), std::move(root));
}

Result<Element> Dataset::at(int64_t index) const {
  if (!status_.ok()) return status_;
  if (!random_access()) {
    return Status::FailedPrecondition("at: " + DebugString() +
                                      " does not allow random access (see Dataset::random_access)");
  }
  const int64_t n = cardinality();
  if (index < 0 || (n >= 0 && index >= n)) {
    return Status::OutOfRange("at: index " + std::to_string(index) +
                              " is out of range for a dataset of " + std::to_string(n) +
                              " elements");
  }
  SLUICE_ASSIGN_OR_RETURN(Iterator it, skip(index).take(1).iterator());
  SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, it.next());
  if (!e) return Status::OutOfRange("at: index " + std::to_string(index) + " is past the end");
  return std::move(*e);
}

Dataset::RangeIterator Dataset::begin() const {
  Result<Iterator> it = iterator();
  if (!it.ok()) throw Error(it.status());
  return RangeIterator(std::move(it).value());
}

Dataset::RangeIterator::RangeIterator(Iterator it)
    : it_(std::make_shared<Iterator>(std::move(it))) {
  ++*this;
}

Dataset::RangeIterator& Dataset::RangeIterator::operator++() {
  Result<std::optional<Element>> r = it_->next();
  if (!r.ok()) {
    current_.reset();
    throw Error(r.status());
  }
  current_ = std::move(r).value();
  return *this;
}

}  // namespace sluice

namespace sluice {

Dataset TFRecordDataset(std::vector<std::string> filenames, TFRecordDatasetOptions options) {
  return pipeline_internal::MakeTFRecordDataset(std::move(filenames), std::move(options));
}

DatasetFn tfrecords(TFRecordDatasetOptions options) {
  return [options](const Element& e) -> Result<Dataset> {
    if (e.size() != 1 || e[0].dtype() != DType::kString || e[0].num_elements() != 1) {
      return Status::InvalidArgument("tfrecords(): expected a file name (string scalar), got " +
                                     e.DebugString());
    }
    return TFRecordDataset({std::string(e[0].flat<std::string_view>()[0])}, options);
  };
}

}  // namespace sluice
