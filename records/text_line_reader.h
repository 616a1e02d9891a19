// TextLineReader: the lines of one text file as records, in order
// (tf.data.TextLineDataset's semantics).
//
// A line is the bytes up to a "\n", without it; every "\r" in a line is
// dropped (so "\r\n" endings read as "\n" ones), as TensorFlow's buffered
// line reader does. A last line without "\n" is still a line unless it is
// empty after that; an empty file has no lines. The file may be
// uncompressed, GZIP or ZLIB (kAuto: told apart by the first bytes).
//
// Records are views into large read buffers (Record::owner keeps them
// alive); Record::number is the 0-based line index, Record::line the 1-based
// line number, Record::offset the line's first byte in the uncompressed
// stream. A line longer than max_line_size is InvalidArgument naming the
// file, line and offset, without holding it whole; the reader then goes on
// after it (next_record_number() grew). A corrupt or truncated compressed
// stream is DataLoss naming the file and offsets, and the reader stays.
//
// Not thread-safe: one reader per thread. Records may be used on any thread.
#ifndef SLUICE_RECORDS_TEXT_LINE_READER_H_
#define SLUICE_RECORDS_TEXT_LINE_READER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "sluice/core/file.h"
#include "sluice/core/result.h"
#include "sluice/records/compression.h"
#include "sluice/records/record_source.h"

namespace sluice {

struct TextLineReaderOptions {
  // TensorFlow's compression_type is "" (kNone), "GZIP" or "ZLIB"; kAuto
  // tells them apart from the first bytes.
  Compression compression = Compression::kAuto;
  // Bytes per read (and of inflated stream); at least 4 KiB.
  size_t buffer_size = size_t{1} << 20;
  // The longest line accepted, in bytes.
  uint64_t max_line_size = uint64_t{256} << 20;
};

Result<std::unique_ptr<RecordReader>> OpenTextLineReader(const std::string& path,
                                                         const TextLineReaderOptions& options = {});
Result<std::unique_ptr<RecordReader>> OpenTextLineReader(std::unique_ptr<ReadableFile> file,
                                                         const TextLineReaderOptions& options = {});

}  // namespace sluice

#endif  // SLUICE_RECORDS_TEXT_LINE_READER_H_
