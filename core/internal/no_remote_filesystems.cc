// A build without Arrow C++: object-store URIs are a clear error.
#include <string>

#include "sluice/core/internal/remote_filesystems.h"

namespace sluice::internal {

bool RemoteFileSystemsBuilt() { return false; }

Result<std::shared_ptr<FileSystem>> MakeRemoteFileSystem(std::string_view scheme,
                                                         std::string_view uri) {
  if (scheme != "s3" && scheme != "gs" && scheme != "gcs" && scheme != "az" && scheme != "abfs" &&
      scheme != "abfss") {
    return Status::InvalidArgument("unknown URI scheme '" + std::string(scheme) + "' in " +
                                   std::string(uri) + " (sluice reads file, s3, gs, az and abfs)");
  }
  return Status::FailedPrecondition(
      std::string(uri) +
      ": this build of sluice has no object stores (built without Apache Arrow C++; run "
      "scripts/fetch-arrow.sh and reconfigure, or configure with -DSLUICE_WITH_ARROW=ON)");
}

void DropRemoteFileSystems() {}

}  // namespace sluice::internal
