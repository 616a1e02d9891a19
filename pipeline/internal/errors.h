// How stages word errors: "stage 'map' failed on element 12 (train.tfrecord
// record 12): <the cause>".
#ifndef SLUICE_PIPELINE_INTERNAL_ERRORS_H_
#define SLUICE_PIPELINE_INTERNAL_ERRORS_H_

#include <memory>
#include <string>

#include "sluice/core/status.h"

namespace sluice::pipeline_internal {

inline Status StageError(const Status& cause, const std::string& stage, int64_t index,
                         const std::shared_ptr<const std::string>& origin_source,
                         int64_t origin_index) {
  std::string where = "stage '" + stage + "'";
  if (index >= 0) where += " failed on element " + std::to_string(index);
  std::string origin;
  if (origin_source) origin = *origin_source;
  if (origin_index >= 0)
    origin += (origin.empty() ? "" : " ") + std::string("record ") + std::to_string(origin_index);
  if (!origin.empty()) where += " (" + origin + ")";
  return cause.WithContext(where);
}

// A RAM budget error (TooBigForBudget, MemoryBudget::CheckRequired, a
// shuffle buffer or in-memory cache that cannot fit): the pipeline's
// configuration, not a bad element, so ignore_errors does not skip it. Every
// such message names the ram_budget.
inline bool IsBudgetError(const Status& s) {
  return s.code() == StatusCode::kResourceExhausted &&
         s.message().find("ram_budget") != std::string_view::npos;
}

}  // namespace sluice::pipeline_internal

#endif  // SLUICE_PIPELINE_INTERNAL_ERRORS_H_
