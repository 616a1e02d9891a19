// Windows and groups: the types of Dataset::window, Dataset::group_by_window,
// Dataset::bucket_by_sequence_length and sluice::group_by_reducer (tf.data's
// window, group_by_window, bucket_by_sequence_length and
// tf.data.experimental.group_by_reducer).
//
// A window travels as one ordinary Element: each component holds the
// window's rows stacked along a new first dimension ([n, ...], n <= size),
// as batch would stack them. Dataset::from_window(w) turns it back into a
// dataset of its rows (tf.data yields a dataset per window instead; sluice
// has no dataset-valued tensors). from_window(w).batch(k) hands out views
// of w's rows, so ds.window(n).flat_map(from_window(w).batch(n)) copies
// each row once, as batch(n) does.
//
// The functions below are called by the pipeline on the consumer's thread
// (one call at a time per iterator) and must not throw. Plain structs and
// aliases; nothing here holds state.
#ifndef SLUICE_PIPELINE_GROUPING_H_
#define SLUICE_PIPELINE_GROUPING_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sluice/core/element.h"
#include "sluice/core/result.h"
#include "sluice/core/shape.h"
#include "sluice/core/tensor.h"

namespace sluice {

class Dataset;

struct WindowOptions {
  // Input elements between the starts of two windows; unset: the size.
  std::optional<int64_t> shift;
  // Input elements between two rows of a window (1: consecutive).
  int64_t stride = 1;
  // Drop the last windows when they have fewer than size rows.
  bool drop_remainder = false;
  std::string name;
};

// The group of an element: any int64 (tf.data's key_func).
using KeyFn = std::function<Result<int64_t>(const Element&)>;
// The dataset a full (or, at the end of the input, partial) group turns
// into; `window` is a dataset of the group's elements, in input order.
using WindowReduceFn = std::function<Result<Dataset>(int64_t key, const Dataset& window)>;
// The window size of a key (>= 1), asked once when a group of that key
// starts.
using WindowSizeFn = std::function<Result<int64_t>(int64_t key)>;

struct GroupByWindowOptions {
  std::string name;
};

// tf.data.experimental.Reducer: a state per key, made by init(key), folded
// with reduce(state, element) over the key's elements (the state must
// keep its components and dtypes), turned into the output element by
// finalize(state).
struct Reducer {
  std::function<Result<Element>(int64_t key)> init;
  std::function<Result<Element>(Element state, Element element)> reduce;
  std::function<Result<Element>(Element state)> finalize;
};

struct GroupByReducerOptions {
  std::string name;
};

// The length of a sequence element (tf.data's element_length_func).
using ElementLengthFn = std::function<Result<int64_t>(const Element&)>;

struct BucketBySequenceLengthOptions {
  // As padded_batch's: per component, the padded shape (unknown dims: the
  // batch's longest, or bucket boundary - 1 with pad_to_bucket_boundary).
  // Empty: every dimension unknown.
  std::vector<Shape> padded_shapes;
  // Per component, a scalar of its dtype; empty: zeros.
  std::vector<Tensor> padding_values;
  // Pad unknown dims to the bucket's boundary - 1 rather than the batch's
  // longest; an element of length >= the last boundary is then an error.
  bool pad_to_bucket_boundary = false;
  // batch, not padded_batch (elements of a bucket must have equal shapes).
  bool no_padding = false;
  bool drop_remainder = false;
  std::string name;
};

// True if `ds`'s elements are windows: made by window(), then passed only
// through stages that keep elements as they are (take, skip, shuffle,
// filter, repeat, prefetch, cache, shard, ignore_errors, with_options,
// concatenate of such). The Python package uses it to hand each window to
// flat_map's and interleave's functions as datasets, as tf.data does.
bool ElementsAreWindows(const Dataset& ds);

// A transformation for Dataset::apply: groups elements by key_fn and folds
// each group with `reducer`; at the end of the input, one element per key,
// in increasing key order (tf.data.experimental.group_by_reducer). Memory:
// one state per key seen.
std::function<Dataset(const Dataset&)> group_by_reducer(KeyFn key_fn, Reducer reducer,
                                                        GroupByReducerOptions options = {});

}  // namespace sluice

#endif  // SLUICE_PIPELINE_GROUPING_H_
