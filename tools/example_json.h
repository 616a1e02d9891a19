// Conversions between serialized Examples / SequenceExamples and protobuf's
// canonical JSON mapping (camelCase field names, int64 as strings, bytes as
// base64), for `sluice cat --json` and `sluice write`. Map keys come out
// sorted, so the output is deterministic. Thread-safe.
#ifndef SLUICE_TOOLS_EXAMPLE_JSON_H_
#define SLUICE_TOOLS_EXAMPLE_JSON_H_

#include <string>
#include <string_view>

#include "sluice/core/result.h"

namespace sluice::tools {

enum class ProtoType { kExample, kSequenceExample };

// "example" / "sequence_example".
Result<ProtoType> ParseProtoType(std::string_view name);
std::string_view ProtoTypeName(ProtoType type);

// One line of JSON, no trailing newline. DataLoss if `serialized` is not a
// valid message of `type`.
Result<std::string> SerializedToJson(std::string_view serialized, ProtoType type);

// Parses one JSON object into a serialized message (deterministic bytes,
// as TensorFlow's SerializeToString(deterministic=True)). InvalidArgument
// with protobuf's explanation if the JSON does not describe a `type`, or
// naming the place (a JSON path) where its shape is wrong: a nested list or
// a bare value for a list (example_json_shape.h).
Result<std::string> JsonToSerialized(std::string_view json, ProtoType type);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_EXAMPLE_JSON_H_
