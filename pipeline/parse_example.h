// parse_example(spec): the map function that turns serialized
// tf.train.Examples into features (tf.data's map(tf.io.parse_example)).
//
//   auto ds = sluice::TFRecordDataset(files)
//                 .map(sluice::parse_example(spec), {.parallelism = sluice::kAutotune})
//                 .batch(128);
//
// Component 0 of each element is the serialized Example: a string scalar
// gives ExampleParser::ParseSingle's features, a string vector (records
// batched first) ParseBatch's; any other components follow the features
// unchanged (a distribute() weight, say). Strings stay views into the
// records' read buffers.
//
// Fused with batch: `.map(parse_example(spec), options).batch(n, b)` is
// built as `.batch(n, b).map(parse_example(spec), options)` when every
// feature is FixedLen (the results are then the same): the records are
// batched as views (no element per record; a TFRecordDataset hands them out
// stacked) and each batch is parsed at once, tf.data's parse-after-batch
// pattern. DebugString shows the fused order.
//
// An invalid spec is the map's build error (Dataset::status(): the feature
// named). A value type; copies share the parser; thread-safe.
#ifndef SLUICE_PIPELINE_PARSE_EXAMPLE_H_
#define SLUICE_PIPELINE_PARSE_EXAMPLE_H_

#include <memory>

#include "sluice/core/element.h"
#include "sluice/core/result.h"
#include "sluice/pipeline/map_context.h"
#include "sluice/records/example_parser.h"
#include "sluice/records/feature_spec.h"

namespace sluice {

class ParseExampleFn {
 public:
  explicit ParseExampleFn(const ParseSpec& spec);
  Result<Element> operator()(Element serialized, const MapContext& context) const;
  // OK, or the spec's error.
  const Status& status() const;
  // REQUIRES: status().ok().
  const ExampleParser& parser() const;

 private:
  std::shared_ptr<const Result<ExampleParser>> parser_;
};

ParseExampleFn parse_example(const ParseSpec& spec);

}  // namespace sluice

#endif  // SLUICE_PIPELINE_PARSE_EXAMPLE_H_
