// OsError: the Status for a failed system call, "<what>: <strerror(err)>",
// its code chosen from errno as core/file.h documents: NotFound (ENOENT),
// ResourceExhausted (ENOSPC, EDQUOT, EFBIG), FailedPrecondition (EACCES,
// EPERM, EROFS, EISDIR), Unavailable (anything else): the one errno-to-code
// mapping of the library (list_files reports glob(3)'s errors with it).
// Thread-safe on glibc (the text of a known errno is a constant string).
#ifndef SLUICE_CORE_OS_ERROR_H_
#define SLUICE_CORE_OS_ERROR_H_

#include <string>

#include "sluice/core/status.h"

namespace sluice {

Status OsError(const std::string& what, int err);

}  // namespace sluice

#endif  // SLUICE_CORE_OS_ERROR_H_
