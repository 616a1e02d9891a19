// The object-store file systems behind FileSystemFor(): built from Arrow
// C++ (arrow_filesystems.cc) or, in a build without it, a stand-in that
// says so (no_remote_filesystems.cc). Exactly one of the two is compiled.
#ifndef SLUICE_CORE_INTERNAL_REMOTE_FILESYSTEMS_H_
#define SLUICE_CORE_INTERNAL_REMOTE_FILESYSTEMS_H_

#include <memory>
#include <string_view>

#include "sluice/core/filesystem.h"

namespace sluice::internal {

// True when the build has them.
bool RemoteFileSystemsBuilt();

// The file system for `scheme` (lower case, not "file"), made on first use
// and shared after. `uri` is the path that asked, for error messages (and
// for settings it carries, such as ?endpoint_override=). InvalidArgument for
// an unknown scheme, FailedPrecondition when the build has no object stores.
Result<std::shared_ptr<FileSystem>> MakeRemoteFileSystem(std::string_view scheme,
                                                         std::string_view uri);

// Forgets the shared file systems made so far (SetRemoteOptions: the next
// MakeRemoteFileSystem makes new ones with the new settings). Open files
// keep theirs.
void DropRemoteFileSystems();

}  // namespace sluice::internal

#endif  // SLUICE_CORE_INTERNAL_REMOTE_FILESYSTEMS_H_
