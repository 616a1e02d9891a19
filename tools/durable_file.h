// Making a small file written through a temporary name durable: what
// `sluice convert --sync` does for the labels file and for the images of
// `convert idx --to-folder` (shards and their .idx use TFRecordWriter's
// sync_on_close). After a power loss a file that was renamed into place then
// holds its complete bytes, and the rename itself is not lost.
// Thread-safe (no shared state).
#ifndef SLUICE_TOOLS_DURABLE_FILE_H_
#define SLUICE_TOOLS_DURABLE_FILE_H_

#include <cstdio>
#include <string>

#include "sluice/core/status.h"

namespace sluice::tools {

// Flushes `f` and fsyncs it; `name` is used in errors. Before fclose and the
// rename.
Status SyncFile(std::FILE* f, const std::string& name);

// fsyncs the folder holding `path` ("." if it has none), after the rename
// that put `path` in place.
Status SyncParentFolder(const std::string& path);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_DURABLE_FILE_H_
