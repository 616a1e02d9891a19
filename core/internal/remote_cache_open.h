// OpenReadableFile's remote branch (remote_cache.cc).
#ifndef SLUICE_CORE_INTERNAL_REMOTE_CACHE_OPEN_H_
#define SLUICE_CORE_INTERNAL_REMOTE_CACHE_OPEN_H_

#include <memory>
#include <string>

#include "sluice/core/filesystem.h"

namespace sluice::internal {

// `uri` of `fs` through the process's remote cache (core/remote_cache.h),
// or straight from `fs` when there is none.
Result<std::unique_ptr<ReadableFile>> OpenRemoteReadable(FileSystem& fs, const std::string& uri);

}  // namespace sluice::internal

#endif  // SLUICE_CORE_INTERNAL_REMOTE_CACHE_OPEN_H_
