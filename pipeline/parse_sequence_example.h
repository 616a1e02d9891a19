// parse_sequence_example(context_spec, sequence_spec): the map function that
// turns serialized tf.train.SequenceExamples into features (tf.data's
// map(tf.io.parse_single_sequence_example) and, on batched records,
// map(tf.io.parse_sequence_example)).
//
//   auto ds = sluice::TFRecordDataset(files)
//                 .batch(32)
//                 .map(sluice::parse_sequence_example(context, sequence));
//
// Component 0 of each element is the serialized SequenceExample: a string
// scalar gives SequenceExampleParser::Parse's outputs, a string vector
// (records batched first) ParseBatch's padded batch with each feature
// list's "<key>.length"; any other components follow unchanged. One
// Element holds both parts: the context outputs, then the feature-list
// outputs, each named by its feature key as parse_example names them
// (sequence_example_parser.h lists the components). A key in both specs
// would give two components of one name, so it is the map's build error
// (tf.io keeps them apart in two dicts).
//
// Fused with batch only when the results are the same (no sequence
// features, only FixedLen context features): then `.map(fn).batch(n)` is
// built as `.batch(n).map(fn)`. Otherwise batch the records first, as
// tf.data users do, to get padded feature lists and their lengths.
//
// An invalid spec is the map's build error (Dataset::status(): the feature
// named). A value type; copies share the parser; thread-safe.
#ifndef SLUICE_PIPELINE_PARSE_SEQUENCE_EXAMPLE_H_
#define SLUICE_PIPELINE_PARSE_SEQUENCE_EXAMPLE_H_

#include <memory>
#include <string>
#include <vector>

#include "sluice/core/element.h"
#include "sluice/core/result.h"
#include "sluice/pipeline/map_context.h"
#include "sluice/records/feature_spec.h"
#include "sluice/records/sequence_example_parser.h"

namespace sluice {

class ParseSequenceExampleFn {
 public:
  ParseSequenceExampleFn(const ParseSpec& context_spec, const ParseSpec& sequence_spec);
  Result<Element> operator()(Element serialized, const MapContext& context) const;
  // OK, or the specs' error.
  const Status& status() const;
  // REQUIRES: status().ok().
  const SequenceExampleParser& parser() const;

  struct State;

 private:
  std::shared_ptr<const State> state_;
};

ParseSequenceExampleFn parse_sequence_example(const ParseSpec& context_spec,
                                              const ParseSpec& sequence_spec);

}  // namespace sluice

#endif  // SLUICE_PIPELINE_PARSE_SEQUENCE_EXAMPLE_H_
