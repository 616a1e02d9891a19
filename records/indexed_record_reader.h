// NewIndexedRecordReader: a RecordReader over an IndexedRecordFile, for
// formats whose records lie at computable offsets (fixed-length records,
// NumPy rows): records are read in runs of up to buffer_size bytes (one
// read per run, IndexedRecordFile::ReadRun) and handed out as views into
// the run's buffer. Seek is exact and costs nothing until the next read.
//
// Errors: a run that cannot be read (an I/O error, a file that shrank) is
// returned and the reader stays where it was (the caller ends the file).
//
// Ownership: the reader shares `file`. Thread-safety: as RecordReader (one
// thread at a time).
#ifndef SLUICE_RECORDS_INDEXED_RECORD_READER_H_
#define SLUICE_RECORDS_INDEXED_RECORD_READER_H_

#include <cstddef>
#include <memory>

#include "sluice/records/record_source.h"

namespace sluice {

// REQUIRES: file != nullptr.
std::unique_ptr<RecordReader> NewIndexedRecordReader(std::shared_ptr<const IndexedRecordFile> file,
                                                     size_t buffer_size);

}  // namespace sluice

#endif  // SLUICE_RECORDS_INDEXED_RECORD_READER_H_
