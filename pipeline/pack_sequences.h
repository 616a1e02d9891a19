// pack_sequences: variable-length token sequences packed into fixed-length
// rows, as Grain's FirstFitPackIterDataset and BestFitPackIterDataset do
// (the layout MaxText trains on).
//
//   // {"inputs": int32[?], "targets": int32[?]} -> rows of 2048 tokens
//   auto packed = ds.apply(sluice::pack_sequences(
//       2048, {.algorithm = sluice::PackAlgorithm::kBestFit, .num_packing_bins = 64}));
//
// The input's elements are dicts of 1-D tensors (any dtype but string; a
// sequence's components may have different lengths). Each output element is
// one row: per component `c`, `c` of shape [length_c] (the packed values,
// then the padding value), `c_segment_ids` (int32: 1, 2, 3... for the
// first, second, third sequence of the row, 0 for padding) and
// `c_positions` (int32: 0..n-1 within each sequence, 0 for padding), in
// the order c1, c2, ..., c1_segment_ids, c1_positions, c2_segment_ids...
//
// The algorithm (Grain's): num_packing_bins rows are open at once; each
// sequence goes into the first open row where every component fits
// (kFirstFit), or the row that fits it with the most tokens already in it,
// summed over components, the lowest such row on a tie (kBestFit). When no
// open row has room, every non-empty open row is emitted (in row order, or
// in a permutation drawn from `seed` and the number of rows emitted before
// when shuffle_bins), and the sequence starts a fresh set of rows. At the
// end of the input the open rows are emitted the same way. A sequence longer
// than its length is an error, as in Grain (InvalidArgument naming the
// stage, element and component), unless `truncate` keeps its first
// length_c tokens.
//
// The open rows are the iterator's state, saved and restored exactly
// (at most num_packing_bins rows). Emitted rows report their tokens and
// padding in Iterator::stats() (StageStats::tokens, padding_tokens).
//
// Thread-safety: the functions may be called from any thread; datasets are
// values (dataset.h).
#ifndef SLUICE_PIPELINE_PACK_SEQUENCES_H_
#define SLUICE_PIPELINE_PACK_SEQUENCES_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "sluice/pipeline/dataset.h"

namespace sluice {

enum class PackAlgorithm {
  kFirstFit,  // Grain's FirstFitPackIterDataset
  kBestFit,   // Grain's BestFitPackIterDataset
};

struct PackOptions {
  PackAlgorithm algorithm = PackAlgorithm::kFirstFit;
  // Rows open at once (Grain's num_packing_bins): more rows, less padding,
  // and rows mixing sequences from further apart in the input. >= 1.
  int64_t num_packing_bins = 16;
  // Emit each set of rows in a random order (Grain's default), drawn from
  // `seed` and the rows emitted before: the same on every machine.
  bool shuffle_bins = true;
  uint64_t seed = 0;
  // Per component name, its row length instead of `length` (Grain's
  // length_struct). Every name must be a component of the input.
  std::map<std::string, int64_t> feature_lengths;
  // The value of padding cells (converted to each component's dtype), and
  // per component name, another one (Grain's padding_struct).
  int64_t padding_value = 0;
  std::map<std::string, int64_t> padding_values;
  // Longer sequences keep their first length_c tokens instead of being an
  // error (Grain requires them truncated before packing).
  bool truncate = false;
  std::string name;
};

// `input` packed into rows of `length` tokens per component (see above).
// REQUIRES nothing: bad arguments give a Dataset carrying InvalidArgument.
Dataset pack_sequences(const Dataset& input, int64_t length, PackOptions options = {});
// The same as a transformation for Dataset::apply.
std::function<Dataset(const Dataset&)> pack_sequences(int64_t length, PackOptions options = {});

}  // namespace sluice

#endif  // SLUICE_PIPELINE_PACK_SEQUENCES_H_
