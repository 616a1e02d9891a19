// RecordFiles: the TFRecord files a glob names, for `sluice bench`.
//
// A glob such as 'data/train-*' or 'data/*' also matches the files that
// `sluice convert` and the TFRecord writer put next to the shards: record
// indexes (FILE.tfrecord.idx), the labels file (PREFIX-labels.txt) and the
// manifest (PREFIX-manifest.json). Those are skipped by name. Every other file must start with a readable TFRecord
// record (uncompressed, ZLIB or GZIP; an empty file is an empty TFRecord
// file): one that does not is skipped too, unless its name says it is a
// TFRecord file ("*.tfrecord*"), which is an error (DataLoss naming it)
// rather than silently measuring fewer shards.
//
// Functions of the file system only; thread-safe.
#ifndef SLUICE_TOOLS_RECORD_FILES_H_
#define SLUICE_TOOLS_RECORD_FILES_H_

#include <string>
#include <vector>

#include "sluice/core/result.h"

namespace sluice::tools {

struct SkippedFile {
  std::string path;
  std::string why;  // "record index", "labels file", "not a TFRecord file: ..."
};

struct RecordFileMatch {
  std::vector<std::string> files;    // sorted
  std::vector<SkippedFile> skipped;  // sorted by path
  // "skipped 3 files that are not TFRecords: a.idx (record index), ..."
  // (at most `max_listed` named); empty if nothing was skipped.
  std::string SkippedNote(size_t max_listed = 4) const;
};

// NotFound naming `pattern` if it matches nothing; InvalidArgument naming
// it and the skipped files if none of them is a TFRecord file; DataLoss
// naming the file for a "*.tfrecord*" file whose first record is corrupt.
Result<RecordFileMatch> MatchRecordFiles(const std::string& pattern);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_RECORD_FILES_H_
