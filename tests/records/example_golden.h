// Helpers for the Example golden files in tests/data/tf (made with
// TensorFlow 2.21; see tests/data/README.md for their JSON conventions).
// Test-only.
#ifndef SLUICE_TESTS_RECORDS_EXAMPLE_GOLDEN_H_
#define SLUICE_TESTS_RECORDS_EXAMPLE_GOLDEN_H_

#include <string>
#include <string_view>
#include <vector>

#include "internal_json.h"
#include "sluice/core/element.h"
#include "sluice/core/tensor.h"
#include "sluice/records/feature_spec.h"

namespace sluice::testing {

// The payloads of an uncompressed TFRecord file, read by walking the
// framing (length, length CRC, payload, payload CRC) without checking CRCs.
std::vector<std::string> ReadTFRecordPayloads(const std::string& path);

std::string FromHex(std::string_view hex);
std::string ToHex(std::string_view bytes);

// The golden JSON file tests/data/tf/<name>.
Json ReadGoldenJson(const std::string& name);

// A ParseSpec from the golden {"key": {"type", "dtype", "shape",
// "allow_missing", "default_value"}} object, in the object's key order.
ParseSpec GoldenSpec(const Json& spec);

// A dense golden tensor {"dtype", "shape", "values"}.
Tensor GoldenTensor(const Json& t);

// "" if `actual` (a component of ours) equals the golden output `golden`
// (dense, or sparse {"sparse": true, "indices", "values", "dense_shape"}
// compared against our values plus `row_lengths`, which is null for a
// single example's VarLen output), else what differs. `batch` says whether
// the sparse indices have a batch column.
std::string CompareGolden(const Json& golden, const Tensor& actual, const Tensor* row_lengths,
                          bool batch);

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_RECORDS_EXAMPLE_GOLDEN_H_
