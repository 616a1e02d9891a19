// POSIX tar constants (ustar, pax; see docs/formats.md, "Tar shards").
//
// An archive is a sequence of 512-byte blocks: each member is a header block
// followed by its payload padded to a whole block; a zero block (or the end
// of the file) ends the archive. A pax extended header ('x') or a GNU long
// name ('L') is a member of its own whose payload renames (and, for pax,
// resizes) the member after it. Constants only: thread-safe.
#ifndef SLUICE_RECORDS_TAR_FORMAT_H_
#define SLUICE_RECORDS_TAR_FORMAT_H_

#include <cstddef>
#include <cstdint>

namespace sluice::tar {

inline constexpr size_t kBlockSize = 512;

// Header fields: offset and length.
inline constexpr size_t kNameOffset = 0, kNameSize = 100;
inline constexpr size_t kModeOffset = 100, kModeSize = 8;
inline constexpr size_t kUidOffset = 108, kGidOffset = 116, kIdSize = 8;
inline constexpr size_t kSizeOffset = 124, kSizeSize = 12;
inline constexpr size_t kMtimeOffset = 136, kMtimeSize = 12;
inline constexpr size_t kChecksumOffset = 148, kChecksumSize = 8;
inline constexpr size_t kTypeOffset = 156;
inline constexpr size_t kMagicOffset = 257, kMagicSize = 6;
inline constexpr size_t kVersionOffset = 263;
inline constexpr size_t kPrefixOffset = 345, kPrefixSize = 155;

// "ustar\0" + "00": POSIX ustar / pax. GNU tar writes "ustar " + " \0",
// whose prefix field holds other things.
inline constexpr char kUstarMagic[] = "ustar";

// Type flags.
inline constexpr char kRegular = '0';
inline constexpr char kRegularOld = '\0';
inline constexpr char kContiguous = '7';
inline constexpr char kHardLink = '1';
inline constexpr char kSymLink = '2';
inline constexpr char kCharDevice = '3';
inline constexpr char kBlockDevice = '4';
inline constexpr char kDirectory = '5';
inline constexpr char kFifo = '6';
inline constexpr char kPaxHeader = 'x';
inline constexpr char kPaxGlobal = 'g';
inline constexpr char kSolarisPax = 'X';
inline constexpr char kGnuLongName = 'L';
inline constexpr char kGnuLongLink = 'K';
inline constexpr char kGnuSparse = 'S';

// Largest size an octal size field holds (11 digits); larger sizes need a
// pax "size" record (or GNU's base-256 field).
inline constexpr uint64_t kMaxOctalSize = (uint64_t{1} << 33) - 1;

// Bytes `size` takes padded to whole blocks.
constexpr uint64_t Padded(uint64_t size) { return (size + kBlockSize - 1) / kBlockSize * kBlockSize; }

}  // namespace sluice::tar

#endif  // SLUICE_RECORDS_TAR_FORMAT_H_
