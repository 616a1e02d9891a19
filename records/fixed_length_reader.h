// Fixed-length records: files of header_bytes, then records of exactly
// record_bytes each, then footer_bytes (CIFAR-10's binary files, raw
// tensors), as tf.data.FixedLengthRecordDataset reads them.
//
// Uncompressed files have records at computable offsets:
// OpenFixedLengthRecordFile gives random access (an IndexedRecordFile: exact
// count, runs of adjacent records in one read), and the sequential reader
// reads through it (Seek is exact and free). ZLIB and GZIP files are read in
// order only (Seek returns false: the caller reads forward).
//
// What TensorFlow does with a body (the bytes between header and footer)
// that is not a multiple of record_bytes, and so does this reader
// (tests/data/fixed_length/golden.json):
//  - uncompressed: InvalidArgument when the file is opened, no records;
//  - compressed: the whole records first, then DataLoss where the stream
//    ends (the reader stays there: the file ends for the caller).
// A file shorter than header_bytes + footer_bytes is the same error (TF
// reports an underflowed length, or an internal error, for it).
// Errors name the file and the byte offset in the (uncompressed) stream.
//
// Records are views into read buffers of about buffer_size bytes (a record
// larger than that gets a buffer of its own size).
//
// Thread-safety: a reader is used by one thread at a time; the indexed file
// is immutable and its const methods may run concurrently.
#ifndef SLUICE_RECORDS_FIXED_LENGTH_READER_H_
#define SLUICE_RECORDS_FIXED_LENGTH_READER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "sluice/core/file.h"
#include "sluice/records/compression.h"
#include "sluice/records/record_source.h"

namespace sluice {

struct FixedLengthRecordOptions {
  uint64_t record_bytes = 0;  // REQUIRES > 0 (InvalidArgument otherwise)
  uint64_t header_bytes = 0;
  uint64_t footer_bytes = 0;
  // kNone, kZlib or kGzip (as TF, there is no detection: kAuto is
  // InvalidArgument).
  Compression compression = Compression::kNone;
  size_t buffer_size = size_t{1} << 20;
};

Result<std::unique_ptr<RecordReader>> OpenFixedLengthRecordReader(
    std::shared_ptr<ReadableFile> file, const FixedLengthRecordOptions& options);
Result<std::unique_ptr<RecordReader>> OpenFixedLengthRecordReader(
    const std::string& path, const FixedLengthRecordOptions& options);

// Random access to an uncompressed file. InvalidArgument if options say the
// file is compressed, or its body is not a multiple of record_bytes.
Result<std::shared_ptr<const IndexedRecordFile>> OpenFixedLengthRecordFile(
    std::shared_ptr<ReadableFile> file, const FixedLengthRecordOptions& options);
Result<std::shared_ptr<const IndexedRecordFile>> OpenFixedLengthRecordFile(
    const std::string& path, const FixedLengthRecordOptions& options);

}  // namespace sluice

#endif  // SLUICE_RECORDS_FIXED_LENGTH_READER_H_
