// SequenceExampleParser: turns a serialized tf.train.SequenceExample into
// tensors, as tf.io.parse_single_sequence_example does, by walking the wire
// format directly.
//
// Two specs (feature_spec.h): the context spec (FixedLenFeature,
// VarLenFeature and RaggedFeature) reads SequenceExample.context exactly as
// ExampleParser's ParseSingle reads an Example's features; the sequence
// spec (FixedLenSequenceFeature, VarLenFeature and RaggedFeature) reads
// SequenceExample.feature_lists, one Feature per step:
//
//   sequence spec entry            output components
//   FixedLenSequence(item shape)   "<key>": [steps, item...]; every step must
//                                  hold exactly one item
//   VarLen                         "<key>": [total] values of all steps, and
//                                  "<key>.row_lengths": int64 [steps]
//   Ragged (value and partition    "<key>": flat values; "<key>.row_splits_0" over
//   keys are feature lists)        the steps, then one per ragged partition,
//                                  applied within each step (as tf.io)
//
// A missing feature list is an error unless allow_missing is set (then it
// has 0 steps; VarLen lists may always be missing). Sequence features take
// no default value, as in TensorFlow. Malformed input is DataLoss, data that
// does not fit the spec InvalidArgument naming the feature list and step;
// see docs/example.md. Strings are zero-copy views kept alive by `owner`,
// or copied into tensor-owned memory when no owner is given.
//
// ParseBatch parses B SequenceExamples, as tf.io.parse_sequence_example:
//
//   context FixedLen(shape)        "<key>": [B, shape...]
//   context VarLen                 "<key>": [total] values, "<key>.row_lengths": int64 [B]
//   sequence FixedLenSequence(item) "<key>": [B, max_steps, item...], padded with 0 / "";
//                                  "<key>.length": int64 [B], each example's steps
//   sequence VarLen                "<key>": [total] values of all steps of all examples,
//                                  "<key>.row_lengths": int64 [total steps] (values per
//                                  step), "<key>.length": int64 [B] (steps per example)
//   Ragged (either spec)           "<key>" flat values, "<key>.row_splits_0" over the
//                                  examples, then the single form's splits, joined
//
// tf.io returns SparseTensors for VarLen features and the FixedLenSequence
// lengths in a third dict; sluice's ragged layout carries the same
// information (docs/example.md). Errors name "example N of the batch".
//
// Thread-safety: immutable and cheap to copy; Parse may run concurrently.
#ifndef SLUICE_RECORDS_SEQUENCE_EXAMPLE_PARSER_H_
#define SLUICE_RECORDS_SEQUENCE_EXAMPLE_PARSER_H_

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

// tf.io.parse_single_sequence_example's (context, feature_lists) pair.
struct ParsedSequenceExample {
  Element context;        // one component per context spec entry
  Element feature_lists;  // per sequence spec entry, as in the table above
};

class SequenceExampleParser {
 public:
  // InvalidArgument (naming the key) for an invalid spec: a kind the role
  // does not take, a sequence feature with a default value, ... A key may
  // appear in both specs (the outputs are separate Elements).
  static Result<SequenceExampleParser> Create(const ParseSpec& context_spec,
                                              const ParseSpec& sequence_spec);

  Result<ParsedSequenceExample> Parse(std::string_view serialized, const Buffer& owner = {}) const;
  // The SequenceExample in a string scalar, zero-copy (its bytes stay owned
  // by the tensor's string owners). InvalidArgument for another dtype/shape.
  Result<ParsedSequenceExample> Parse(const Tensor& serialized) const;

  // A batch (see above). `owners` is empty or one Buffer per example.
  Result<ParsedSequenceExample> ParseBatch(std::span<const std::string_view> serialized,
                                           std::span<const Buffer> owners = {}) const;
  // The SequenceExamples of a string vector [B], zero-copy.
  Result<ParsedSequenceExample> ParseBatch(const Tensor& serialized) const;

  // Output names of Parse and ParseBatch, in order.
  const std::vector<std::string>& context_names() const;
  const std::vector<std::string>& feature_list_names() const;
  const std::vector<std::string>& batch_context_names() const;
  const std::vector<std::string>& batch_feature_list_names() const;
  // True when ParseBatch's outputs are Parse's stacked: no sequence
  // features and only FixedLen context features.
  bool batch_is_stacked() const;

  struct Impl;

 private:
  // Parse without assembling context RaggedFeatures.
  static Result<ParsedSequenceExample> ParseRaw(const Impl& im, std::string_view serialized,
                                                const Buffer& owner);
  explicit SequenceExampleParser(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

}  // namespace sluice

#endif  // SLUICE_RECORDS_SEQUENCE_EXAMPLE_PARSER_H_
