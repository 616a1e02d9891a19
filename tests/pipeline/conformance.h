// The shared conformance suite every pipeline stage passes.
//
// A case gives a way to build a dataset containing the stage under test
// (with a parallelism knob where the stage has one) and, optionally, the
// elements it must produce. RunConformance() then checks, with gtest
// assertions:
//   - elements: the output equals `expected` (or, if empty, the output at
//     parallelism 1), in order unless `ordered` is false;
//   - cardinality: a known cardinality() equals the number of elements;
//   - save/restore at every position: reading k elements, saving, and
//     restoring into a fresh iterator yields exactly the remaining ones, and
//     the saved iterator itself continues unchanged;
//   - determinism: with a fixed seed, parallelism 1..8 and cpu budgets 1..4
//     give the same sequence;
//   - cancellation: destroying an iterator mid-flight returns within 100 ms,
//     also with a map call above the stage blocked (not returning);
//   - error propagation (if `make_failing` is set): the error reaches next()
//     naming `error_substring`.
#ifndef SLUICE_TESTS_PIPELINE_CONFORMANCE_H_
#define SLUICE_TESTS_PIPELINE_CONFORMANCE_H_

#include <functional>
#include <string>
#include <vector>

#include "sluice/pipeline/dataset.h"

namespace sluice::testing {

struct ConformanceCase {
  std::string name;
  // The dataset under test; `parallelism` is 1..8 (stages without a knob
  // ignore it). Seeds must be fixed (with_options is applied on top).
  std::function<Dataset(int parallelism)> make;
  // Expected elements as Element::DebugString(1000); empty: use parallelism 1.
  std::vector<std::string> expected;
  bool ordered = true;
  // Save/restore positions are checked at every position up to this many.
  int max_save_positions = 64;
  bool check_save_restore = true;
  // A dataset whose production fails somewhere; the error must contain this.
  std::function<Dataset()> make_failing;
  std::string error_substring;
};

void RunConformance(const ConformanceCase& c);

// Reads everything (asserting no error) as DebugString(1000) strings.
std::vector<std::string> ReadAll(const Dataset& ds);
// Element i of an int64-scalar dataset, for short expectations.
std::vector<std::string> Int64Elements(const std::vector<int64_t>& values);

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_PIPELINE_CONFORMANCE_H_
