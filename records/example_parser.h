// ExampleParser: turns serialized tf.train.Example protos into tensors, as
// tf.io.parse_single_example and tf.io.parse_example do, by walking the
// protobuf wire format directly (no message objects, no per-feature heap
// allocation besides the output tensors).
//
// Create() checks and compiles a ParseSpec (feature_spec.h) once. Outputs are
// Element components named by feature key, in spec order:
//
//   spec entry                ParseSingle            ParseBatch (B examples)
//   FixedLen(shape)           shape                  [B, shape...]
//   VarLen                    [n] (all values)       "<key>": [total] values of all
//                                                    examples, concatenated, and
//                                                    "<key>.row_lengths": int64 [B]
//   FixedLenSequence(item)    [n_items, item...]     [B, max_items, item...], padded
//                                                    with the default (else 0 / "")
//   Sparse (rank r)           "<key>.indices" [nnz, r], "<key>" [nnz], "<key>.dense_shape"
//                             [r]; a batch adds the example as index column 0
//   Ragged (k ragged dims)    "<key>" flat values, "<key>.row_splits_<i>" (i < k; a
//                             batch adds the examples' splits as row_splits_0)
//
// A VarLen batch is ragged (values plus row lengths, as
// tf.RaggedTensor.from_row_lengths) because its lists differ in length; one
// example's list is dense already (docs/example.md).
//
// Semantics are protobuf's on every input protobuf accepts: a repeated map
// key keeps its last entry, repeated messages merge, packed and unpacked
// lists both work, unknown fields are skipped, and a Feature with no list
// set counts as absent. Input protobuf rejects (truncated, bad wire type,
// ...) is DataLoss "malformed Example at byte N: ...". Wrong data for the
// spec is InvalidArgument naming the key, the expected and found dtype or
// count and, in a batch, the example's index. docs/example.md has details,
// TensorFlow's error texts and the differences from TensorFlow.
//
// Strings are zero-copy: string elements are views into the serialized
// bytes, and the `owner` Buffer holding those bytes is added to the
// tensor's string owners so they stay alive (REQUIRES: `serialized` lies
// inside `owner`, checked). With no owner, string bytes are copied into one
// buffer the output tensors own, so a result never dangles.
//
// Thread-safety: an ExampleParser is immutable and cheap to copy (copies
// share the compiled spec); its const methods may run concurrently. An
// ExampleBatchWriter is described below.
#ifndef SLUICE_RECORDS_EXAMPLE_PARSER_H_
#define SLUICE_RECORDS_EXAMPLE_PARSER_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/core/buffer.h"
#include "sluice/core/element.h"
#include "sluice/core/result.h"
#include "sluice/records/feature_spec.h"

namespace sluice {

class ExampleBatchWriter;

class ExampleParser {
 public:
  // InvalidArgument (naming the key) if the spec is invalid; see
  // feature_spec.h for the rules.
  static Result<ExampleParser> Create(const ParseSpec& spec);

  // One Example, as tf.io.parse_single_example.
  Result<Element> ParseSingle(std::string_view serialized, const Buffer& owner = {}) const;
  // The Example in a string scalar (a record of TFRecordDataset, say): its
  // bytes stay owned by the tensor's string owners, not copied.
  // InvalidArgument for another dtype or shape.
  Result<Element> ParseSingle(const Tensor& serialized) const;

  // A batch, as tf.io.parse_example. `owners` is empty or has one Buffer
  // per example (a null Buffer: that example's strings are copied).
  Result<Element> ParseBatch(std::span<const std::string_view> serialized,
                             std::span<const Buffer> owners = {}) const;
  // The Examples of a string vector [B] (a batch of records), zero-copy as
  // ParseSingle(const Tensor&). InvalidArgument for another dtype or shape.
  Result<Element> ParseBatch(const Tensor& serialized) const;
  // True when every feature is FixedLen (no Sparse / Ragged either): ParseBatch's outputs are then
  // ParseSingle's stacked (batch(n) of parsed Examples may parse after
  // batching instead).
  bool fixed_length_only() const;

  // The batch parser underneath ParseBatch, for fusing parse and batch: see
  // ExampleBatchWriter. OutOfRange if batch_size < 0.
  Result<ExampleBatchWriter> StartBatch(int64_t batch_size) const;

  // Output names of ParseBatch, in order (ParseSingle's are the spec keys).
  const std::vector<std::string>& batch_output_names() const;

  struct Impl;

 private:
  explicit ExampleParser(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

// ExampleBatchWriter: builds one batch of ParseBatch's layout example by
// example. FixedLen outputs are allocated up front and each ParseInto writes
// its row in place; VarLen and FixedLenSequence values, whose sizes depend
// on every example, are located during ParseInto and copied once, straight
// into their final tensors, by Finish.
//
// REQUIRES: the bytes passed to ParseInto stay valid until Finish returns
// (they are kept alive by `owner` when one is given).
//
// Thread-safety: ParseInto calls for different rows may run concurrently;
// nothing may run concurrently with Finish or with a ParseInto of the same
// row. Single use: after Finish the writer is spent.
class ExampleBatchWriter {
 public:
  ExampleBatchWriter(ExampleBatchWriter&&) noexcept;
  ExampleBatchWriter& operator=(ExampleBatchWriter&&) noexcept;
  ~ExampleBatchWriter();

  int64_t batch_size() const;

  // Parses one Example into row `row` (0 <= row < batch_size; OutOfRange
  // otherwise). Errors name the row as "example <row> of the batch"; a
  // failed row stays unparsed and may be parsed again.
  Status ParseInto(int64_t row, std::string_view serialized, const Buffer& owner = {});

  // The batch of rows [0, num_rows), each of which must have been parsed
  // (FailedPrecondition otherwise). Finish() is Finish(batch_size()).
  Result<Element> Finish(int64_t num_rows);
  Result<Element> Finish();

  struct State;

 private:
  friend class ExampleParser;
  explicit ExampleBatchWriter(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace sluice

#endif  // SLUICE_RECORDS_EXAMPLE_PARSER_H_
