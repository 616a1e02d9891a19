// CheckExampleJsonShape: the structure protobuf's JSON parser does not check
// in a JSON Example or SequenceExample (`sluice write`'s input): it
// flattens nested arrays ("value":[["1"],["2"]] reads as ["1","2"]) and
// takes a bare value for a list ("value":"1" reads as ["1"]), where
// python's json_format and `sluice cat --json` (the format `write` reads)
// have a list of plain values. This check rejects both before protobuf
// parses the line:
//   - a feature's "value" must be an array, of strings, numbers or literals;
//   - a FeatureList's "feature" must be an array of objects;
//   - no other array may appear, and nesting stops at kMaxJsonDepth.
// Errors are InvalidArgument naming the place as a JSON path
// ($.features.feature["x"].int64List.value[1]). Malformed JSON is left to
// protobuf's parser, which names it. Pure function: thread-safe.
#ifndef SLUICE_TOOLS_EXAMPLE_JSON_SHAPE_H_
#define SLUICE_TOOLS_EXAMPLE_JSON_SHAPE_H_

#include <string_view>

#include "example_json.h"
#include "sluice/core/status.h"

namespace sluice::tools {

// Deeper than any Example or SequenceExample (which nests 8 levels).
inline constexpr int kMaxJsonDepth = 32;

Status CheckExampleJsonShape(std::string_view json, ProtoType type);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_EXAMPLE_JSON_SHAPE_H_
