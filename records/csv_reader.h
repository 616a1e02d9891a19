// CsvReader: the records of one CSV file, in order, as the text of each
// record (tf.data's CsvDataset reading; records/csv.h splits them).
//
// A record ends at a line break ("\n", "\r\n" or a lone "\r") outside a
// quoted field, so with use_quote_delim one record may span several lines;
// a blank line is a record (of one empty field). Record::data is the
// record's text without its line break, a view into a large read buffer;
// Record::line the 1-based line it starts on, Record::number its 0-based
// index among the data records (a header is not counted), Record::offset
// its first byte in the uncompressed stream.
//
// Errors name the file, the line and the byte offset:
//  - a quoted field still open at the end of the file is InvalidArgument
//    naming the line and column where it opened; the file ends there;
//  - a record longer than max_record_size is InvalidArgument, without
//    holding it whole; the reader then goes on after it;
//  - a corrupt or truncated compressed stream is DataLoss; the reader stays.
// next_record_number() grows past a bad record the reader moved past.
//
// Not thread-safe: one reader per thread. Records may be used on any thread.
#ifndef SLUICE_RECORDS_CSV_READER_H_
#define SLUICE_RECORDS_CSV_READER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "sluice/core/file.h"
#include "sluice/core/result.h"
#include "sluice/records/compression.h"
#include "sluice/records/csv.h"
#include "sluice/records/record_source.h"

namespace sluice {

struct CsvReaderOptions {
  Compression compression = Compression::kAuto;
  // Bytes per read (and of inflated stream); at least 4 KiB.
  size_t buffer_size = size_t{1} << 20;
  CsvDialect dialect;
  // Skip the first record (the column names).
  bool header = false;
  // The longest record accepted, in bytes.
  uint64_t max_record_size = uint64_t{256} << 20;
};

// InvalidArgument for a dialect CheckCsvDialect refuses.
Result<std::unique_ptr<RecordReader>> OpenCsvReader(const std::string& path,
                                                    const CsvReaderOptions& options = {});
Result<std::unique_ptr<RecordReader>> OpenCsvReader(std::unique_ptr<ReadableFile> file,
                                                    const CsvReaderOptions& options = {});

}  // namespace sluice

#endif  // SLUICE_RECORDS_CSV_READER_H_
