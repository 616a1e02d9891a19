// What a pipeline under ignore_errors() gives, for the corrupt-input tests
// of the read paths (corrupt_records_test, corrupt_compressed_test).
#ifndef SLUICE_TESTS_PIPELINE_IGNORE_ERRORS_UTIL_H_
#define SLUICE_TESTS_PIPELINE_IGNORE_ERRORS_UTIL_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "sluice/pipeline/dataset.h"

namespace sluice::testing {

struct IgnoredErrors {
  std::vector<std::string> records;  // the first component of each element, in order of arrival
  int64_t skipped = -1;              // ignore_errors' count
  std::vector<std::string> errors;   // the errors it kept
};

// Reads `ds.ignore_errors()` to its end.
inline IgnoredErrors ReadIgnoringErrors(const Dataset& ds) {
  IgnoredErrors o;
  auto it = ds.ignore_errors().iterator();
  EXPECT_TRUE(it.ok()) << it.status();
  if (!it.ok()) return o;
  for (;;) {
    auto e = it->next();
    EXPECT_TRUE(e.ok()) << e.status();
    if (!e.ok() || !e->has_value()) break;
    o.records.emplace_back((**e)[0].scalar<std::string_view>());
  }
  for (const StageStats& s : it->stats().stages) {
    if (s.kind == "ignore_errors") o.skipped = s.errors_ignored, o.errors = s.errors;
  }
  return o;
}

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_PIPELINE_IGNORE_ERRORS_UTIL_H_
