// Parsing one tar entry (its pax / GNU long-name headers and its own header)
// from bytes in memory, and WebDataset's split of a member name into a key
// and an extension. Used by the tar reader (records/tar_reader.cc), the
// sample walker and the index. Pure functions: thread-safe.
#ifndef SLUICE_RECORDS_INTERNAL_TAR_HEADER_H_
#define SLUICE_RECORDS_INTERNAL_TAR_HEADER_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "sluice/core/result.h"

namespace sluice::records_internal {

// One logical member: the headers that describe it and its payload.
struct TarEntry {
  // Bytes from the entry's first header to the end of its padded payload.
  uint64_t length = 0;
  // Where the payload starts, from the entry's first header.
  uint64_t data_start = 0;
  uint64_t size = 0;  // payload bytes
  char type = 0;
  // A regular file (a member of a sample); anything else is skipped.
  bool regular = false;
  // The member's path: a view into the parsed bytes or into `scratch`.
  std::string_view name;
};

struct TarParse {
  enum Kind { kEntry, kEnd, kNeedMore };
  Kind kind = kEnd;
  // kNeedMore: bytes (from the entry's start) needed to parse its headers.
  uint64_t need = 0;
  TarEntry entry;
};

// Parses the entry at bytes[0], which lies at stream offset `offset` of
// `filename`. A zero block where an entry starts is kEnd. Needs only the
// headers, not the payload. DataLoss (naming the file and the header's
// offset) for a checksum that fails, a malformed number or pax record, a
// pax or long-name payload over `max_meta_size`, a zero block after an
// extended header.
Result<TarParse> ParseTarEntry(std::string_view bytes, uint64_t offset, uint64_t max_meta_size,
                               const std::string& filename, std::string* scratch);

// True if `block` is 512 bytes of zeros or a header whose checksum holds.
bool IsTarHeaderBlock(std::string_view block);

// WebDataset's split (webdataset's base_plus_ext): the key is the path up to
// the first dot of its base name (folders kept), the extension the rest.
// False when the name has none (no dot in the base name; a base name that
// starts with a dot, unless the folder before it has no dot).
bool SplitTarName(std::string_view name, std::string_view* key, std::string_view* extension);

// Names webdataset skips as metadata: "__...__" at the top, or a path whose
// first component is "__...__".
bool IsTarMetaName(std::string_view name);

}  // namespace sluice::records_internal

#endif  // SLUICE_RECORDS_INTERNAL_TAR_HEADER_H_
