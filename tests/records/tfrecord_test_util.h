// Helpers shared by the TFRecord tests: deterministic payloads (the same
// formula tests/data/make_golden.py uses) and in-memory file writing.
#ifndef SLUICE_TESTS_RECORDS_TFRECORD_TEST_UTIL_H_
#define SLUICE_TESTS_RECORDS_TFRECORD_TEST_UTIL_H_

#include <string>
#include <vector>

#include "sluice/records/compression.h"

namespace sluice::testing {

// Record i of the golden files: byte j is (i * 31 + j * 7) & 0xff.
std::string GoldenPayload(int i, size_t length);
// The lengths make_golden.py used.
const std::vector<size_t>& GoldenLengths();

// Writes `records` with TFRecordWriter to a file under `dir` and returns the
// file's bytes.
std::string WriteRecordsToBytes(const std::string& dir, const std::vector<std::string>& records,
                                Compression compression);

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_RECORDS_TFRECORD_TEST_UTIL_H_
