// OsError: a Status for a failed system call, the code chosen from errno as
// core/file.h documents. Internal to core.
#ifndef SLUICE_CORE_INTERNAL_OS_ERROR_H_
#define SLUICE_CORE_INTERNAL_OS_ERROR_H_

#include <string>

#include "sluice/core/status.h"

namespace sluice::core_internal {

// "<what>: <strerror(err)>" with the code for `err`.
Status OsError(const std::string& what, int err);

}  // namespace sluice::core_internal

#endif  // SLUICE_CORE_INTERNAL_OS_ERROR_H_
