// A slow, obviously-correct reference for ExampleParser and
// SequenceExampleParser, written on top of protobuf message objects: given
// what protobuf's ParseFromString made of the bytes, it computes the output
// (or the error) the fast parsers must produce. Used by the randomized tests
// and the fuzzer. Assumes the specs are valid (the fast parser's Create
// checks them). Test-only; thread-safe (pure functions).
#ifndef SLUICE_TESTS_RECORDS_EXAMPLE_REFERENCE_H_
#define SLUICE_TESTS_RECORDS_EXAMPLE_REFERENCE_H_

#include <span>
#include <string>

#include "sluice/core/element.h"
#include "sluice/core/result.h"
#include "sluice/records/example_proto.h"
#include "sluice/records/feature_spec.h"
#include "sluice/records/sequence_example_parser.h"

namespace sluice::testing {

// tf.io.parse_single_example semantics, ExampleParser::ParseSingle layout.
Result<Element> ReferenceParseSingle(const proto::Example& example, const ParseSpec& spec);

// tf.io.parse_example semantics, ExampleParser::ParseBatch layout.
Result<Element> ReferenceParseBatch(std::span<const proto::Example> examples,
                                    const ParseSpec& spec);

// tf.io.parse_single_sequence_example semantics, SequenceExampleParser layout.
Result<ParsedSequenceExample> ReferenceParseSequence(const proto::SequenceExample& example,
                                                     const ParseSpec& context_spec,
                                                     const ParseSpec& sequence_spec);

// "" if `a` and `b` have the same names and Identical() components, else a
// description of the first difference.
std::string DescribeDifference(const Element& a, const Element& b);

// "" if a fast result agrees with the reference: both OK with equal
// elements, or both errors with the same code that name the same feature
// (and, in a batch, the same example). Else what differs.
std::string CompareWithReference(const Result<Element>& fast, const Result<Element>& reference);
std::string CompareWithReference(const Result<ParsedSequenceExample>& fast,
                                 const Result<ParsedSequenceExample>& reference);

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_RECORDS_EXAMPLE_REFERENCE_H_
