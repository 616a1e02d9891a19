// bucket_by_sequence_length: group_by_window keyed by the bucket of each
// element's length, each window padded_batch'ed (or batch'ed with
// no_padding) by its bucket's batch size, as tf.data composes it. Bucket i
// holds lengths in [boundaries[i-1], boundaries[i]), the first from -inf,
// the last to +inf; with pad_to_bucket_boundary, unknown dimensions pad to
// boundaries[i] - 1 and a length >= the last boundary is an error (raised
// when the element is read, naming it, rather than when its bucket is
// batched as in tf.data).
#include <algorithm>

#include "sluice/pipeline/internal/node.h"
#include "sluice/pipeline/internal/stages.h"

namespace sluice::pipeline_internal {
namespace {

Status Invalid(const std::string& what) {
  return Status::InvalidArgument("bucket_by_sequence_length: " + what);
}

std::string List(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

Dataset MakeBucketBySequenceLength(const Dataset& input, ElementLengthFn length_fn,
                                   std::vector<int64_t> boundaries, std::vector<int64_t> sizes,
                                   BucketBySequenceLengthOptions o) {
  auto fail = [](const std::string& what) { return Dataset::FromError(Invalid(what)); };
  if (!length_fn) return fail("the element length function is empty");
  if (sizes.size() != boundaries.size() + 1) {
    return fail(
        "bucket_batch_sizes " + List(sizes) + " has " + std::to_string(sizes.size()) +
        " entries; it needs len(bucket_boundaries) + 1 = " + std::to_string(boundaries.size() + 1));
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 1) return fail("bucket_batch_sizes must be >= 1, got " + List(sizes));
  }
  for (size_t i = 0; i < boundaries.size(); ++i) {
    if (i > 0 && boundaries[i] <= boundaries[i - 1]) {
      return fail("bucket_boundaries must increase, got " + List(boundaries));
    }
    if (o.pad_to_bucket_boundary && boundaries[i] < 1) {
      return fail("with pad_to_bucket_boundary, bucket_boundaries must be >= 1, got " +
                  List(boundaries));
    }
  }
  const ElementSpec& in = input.element_spec();
  if (o.pad_to_bucket_boundary && o.padded_shapes.empty() && !in.known()) {
    return fail("pad_to_bucket_boundary needs padded_shapes or a known element_spec");
  }
  // The output spec (and an early check of padded_shapes and padding_values):
  // the batching of an empty window.
  const Dataset empty = MakeFromElements({}, in);
  const Dataset probe = o.no_padding ? MakeBatch(empty, 1, {})
                                     : MakePaddedBatch(empty, 1,
                                                       {.padded_shapes = o.padded_shapes,
                                                        .padding_values = o.padding_values,
                                                        .name = "bucket_by_sequence_length"});
  if (!probe.status().ok()) {
    return Dataset::FromError(Invalid(std::string(probe.status().message())));
  }
  // Per bucket, the padded shapes.
  std::vector<PaddedBatchOptions> batching(sizes.size());
  for (size_t b = 0; b < sizes.size(); ++b) {
    PaddedBatchOptions& p = batching[b];
    p.padding_values = o.padding_values;
    p.drop_remainder = o.drop_remainder;
    p.name = o.name;
    p.padded_shapes = o.padded_shapes;
    if (!o.pad_to_bucket_boundary || b == boundaries.size()) continue;
    if (p.padded_shapes.empty()) {
      for (const ComponentSpec& c : in.components()) p.padded_shapes.push_back(c.shape);
    }
    for (Shape& s : p.padded_shapes) {
      if (s.unknown_rank()) continue;
      for (int d = 0; d < s.rank(); ++d) {
        if (s.dim(d) == Shape::kUnknownDim) s.set_dim(d, boundaries[b] - 1);
      }
    }
  }
  const bool to_boundary = o.pad_to_bucket_boundary;
  KeyFn key = [length_fn, boundaries, to_boundary](const Element& e) -> Result<int64_t> {
    SLUICE_ASSIGN_OR_RETURN(int64_t length, length_fn(e));
    const int64_t bucket =
        std::upper_bound(boundaries.begin(), boundaries.end(), length) - boundaries.begin();
    if (to_boundary && bucket == static_cast<int64_t>(boundaries.size())) {
      return Invalid("length " + std::to_string(length) + " is not below the last bucket " +
                     "boundary " + std::to_string(boundaries.back()) +
                     ", as pad_to_bucket_boundary requires");
    }
    return bucket;
  };
  WindowSizeFn size = [sizes](int64_t bucket) -> Result<int64_t> {
    return sizes[static_cast<size_t>(bucket)];
  };
  const bool no_padding = o.no_padding;
  const bool drop = o.drop_remainder;
  const std::string name = o.name;
  WindowReduceFn reduce = [sizes, batching, no_padding, drop, name](
                              int64_t bucket, const Dataset& window) -> Result<Dataset> {
    const size_t b = static_cast<size_t>(bucket);
    if (no_padding) {
      return MakeBatch(window, sizes[b], {.drop_remainder = drop, .name = name});
    }
    return MakePaddedBatch(window, sizes[b], batching[b]);
  };
  return MakeGroupByWindow(
      input, std::move(key), std::move(reduce), std::move(size),
      {.name = o.name.empty() ? std::string("bucket_by_sequence_length") : o.name},
      probe.element_spec());
}

}  // namespace sluice::pipeline_internal

namespace sluice {

Dataset Dataset::bucket_by_sequence_length(ElementLengthFn element_length_fn,
                                           std::vector<int64_t> bucket_boundaries,
                                           std::vector<int64_t> bucket_batch_sizes,
                                           BucketBySequenceLengthOptions options) const {
  if (!status().ok()) return *this;
  return pipeline_internal::MakeBucketBySequenceLength(
      *this, std::move(element_length_fn), std::move(bucket_boundaries),
      std::move(bucket_batch_sizes), std::move(options));
}

}  // namespace sluice
