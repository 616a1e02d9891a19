// Reads a whole LevelDB-format table (TensorFlow's `.index` files) into a
// sorted list of key/value pairs.
//
// Every block's masked CRC32C is verified; every length, offset and block
// handle is checked against the file before it is used, so a corrupt or
// truncated table gives DataLoss naming the file and the byte offset, never
// a crash or an allocation larger than the file justifies (decoded entries
// are capped; see kMaxDecodedBytes). Compressed (Snappy) blocks are
// reported as DataLoss: TensorFlow writes bundle indexes uncompressed.
// Pure functions: thread-safe.
#ifndef SLUICE_RECORDS_INTERNAL_SSTABLE_READER_H_
#define SLUICE_RECORDS_INTERNAL_SSTABLE_READER_H_

#include <string>
#include <string_view>
#include <vector>

#include "sluice/core/file.h"
#include "sluice/core/result.h"

namespace sluice::records_internal {

struct SSTableEntry {
  std::string key;
  std::string value;
};

// Prefix-compressed keys can expand; decoding stops with ResourceExhausted
// once keys and values together pass 64 MiB plus 64 times the table size.
inline constexpr size_t kSSTableExpansionLimit = 64;

// The entries of the table `bytes`, in key order. `name` is used in errors.
Result<std::vector<SSTableEntry>> ParseSSTable(std::string_view bytes, const std::string& name);
// Reads all of `file`, then ParseSSTable().
Result<std::vector<SSTableEntry>> ReadSSTable(ReadableFile& file);

}  // namespace sluice::records_internal

#endif  // SLUICE_RECORDS_INTERNAL_SSTABLE_READER_H_
