// The local disk as a FileSystem (local_filesystem.cc): OpenReadableFile and
// OutputFile underneath, std::filesystem for the rest.
#ifndef SLUICE_CORE_INTERNAL_LOCAL_FILESYSTEM_H_
#define SLUICE_CORE_INTERNAL_LOCAL_FILESYSTEM_H_

#include <memory>

#include "sluice/core/filesystem.h"

namespace sluice::internal {

std::shared_ptr<FileSystem> LocalFileSystem();

// `path` without a leading "file://" (a plain path is returned as is).
std::string_view StripFileScheme(std::string_view path);

}  // namespace sluice::internal

#endif  // SLUICE_CORE_INTERNAL_LOCAL_FILESYSTEM_H_
