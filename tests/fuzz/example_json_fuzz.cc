// libFuzzer target for `sluice write`'s JSON input and `sluice cat --json`'s
// output (tools/example_json.h).
//
// Input: 1 option byte, then the rest. Bit 0 picks Example or
// SequenceExample; bit 1 whether the rest is JSON (what `sluice write`
// reads) or a serialized message (what `sluice cat --json` prints).
//  - JSON: JsonToSerialized is a message or InvalidArgument naming the
//    type; a message must print (SerializedToJson) as JSON that parses
//    back to the same bytes.
//  - bytes: SerializedToJson is JSON or DataLoss; JSON it prints must parse
//    back, and print again the same.
//
// Build with -DSLUICE_FUZZ=ON under clang; run for example
//   ./example_json_fuzz tests/fuzz/corpus/example_json -max_total_time=60
#include <google/protobuf/stubs/logging.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "example_json.h"

namespace {

using sluice::Result;
using sluice::StatusCode;
using sluice::tools::ProtoType;

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "example_json_fuzz: %s\n%s\n", what, detail.c_str());
  std::abort();
}

void FromJson(std::string_view json, ProtoType type) {
  const Result<std::string> bytes = sluice::tools::JsonToSerialized(json, type);
  if (!bytes.ok()) {
    if (bytes.status().code() != StatusCode::kInvalidArgument) {
      Fail("unexpected error code", bytes.status().ToString());
    }
    if (bytes.status().message().find(sluice::tools::ProtoTypeName(type)) ==
        std::string_view::npos) {
      Fail("error without the type", bytes.status().ToString());
    }
    return;
  }
  const Result<std::string> printed = sluice::tools::SerializedToJson(*bytes, type);
  if (!printed.ok()) Fail("a parsed message does not print", printed.status().ToString());
  const Result<std::string> again = sluice::tools::JsonToSerialized(*printed, type);
  if (!again.ok()) Fail("printed JSON does not parse", *printed + "\n" + again.status().ToString());
  if (*again != *bytes) Fail("printed JSON parses to other bytes", *printed);
}

void FromBytes(std::string_view serialized, ProtoType type) {
  const Result<std::string> printed = sluice::tools::SerializedToJson(serialized, type);
  if (!printed.ok()) {
    if (printed.status().code() != StatusCode::kDataLoss) {
      Fail("unexpected error code", printed.status().ToString());
    }
    return;
  }
  const Result<std::string> bytes = sluice::tools::JsonToSerialized(*printed, type);
  if (!bytes.ok()) Fail("printed JSON does not parse", *printed + "\n" + bytes.status().ToString());
  const Result<std::string> again = sluice::tools::SerializedToJson(*bytes, type);
  if (!again.ok() || *again != *printed) Fail("JSON differs after a round trip", *printed);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Serialized messages with keys that are not UTF-8 are expected here;
  // protobuf would log each one.
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const ProtoType type = (data[0] & 1) ? ProtoType::kSequenceExample : ProtoType::kExample;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & 2) {
    FromBytes(rest, type);
  } else {
    FromJson(rest, type);
  }
  return 0;
}
