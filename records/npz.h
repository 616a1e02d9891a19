// The .npz format: a zip archive of .npy members ("x.npy"), as np.savez
// (stored, uncompressed) and np.savez_compressed (deflated) write them.
//
// ListNpzMembers reads the zip's central directory (zip64 records
// included, as np.savez writes every member with force_zip64). A stored
// member's .npy lies as is in the archive: OpenNpzMember gives a view of it
// at its offset, read in place with no copy. A deflated member is inflated
// into memory, once, when it is opened: its declared size is checked
// against `max_inflated_bytes` before anything is allocated, and the
// inflated bytes against the declared size and CRC-32. Other compression
// methods, encrypted members and split archives are InvalidArgument.
//
// Errors name the archive, the member and the byte offset: a directory
// that does not fit the file, offsets and sizes past it are DataLoss.
//
// Thread-safety: free functions; the returned files allow concurrent reads.
#ifndef SLUICE_RECORDS_NPZ_H_
#define SLUICE_RECORDS_NPZ_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sluice/core/file.h"
#include "sluice/core/result.h"

namespace sluice {

// Largest central directory read (entries * ~80 bytes).
inline constexpr uint64_t kMaxZipDirectoryBytes = uint64_t{64} << 20;
// Default cap on a deflated member's inflated size.
inline constexpr uint64_t kDefaultMaxInflatedBytes = uint64_t{2} << 30;

struct NpzMember {
  std::string name;  // without ".npy": the key np.load gives it
  bool deflated = false;
  uint64_t local_header_offset = 0;
  uint64_t compressed_size = 0;
  uint64_t size = 0;  // uncompressed
  uint32_t crc32 = 0;
};

// The members of the archive in `file`, in directory order. Members whose
// names do not end in ".npy" are listed with their full name.
Result<std::vector<NpzMember>> ListNpzMembers(ReadableFile& file);

// Where member's .npy bytes lie, as a file and an offset in it.
struct NpzMemberData {
  std::shared_ptr<ReadableFile> file;  // the archive (stored) or memory (deflated)
  uint64_t offset = 0;
  uint64_t size = 0;
  std::string name;  // "archive.npz:x.npy", for errors
};

// Locates (stored) or inflates (deflated) `member` of `archive`.
Result<NpzMemberData> OpenNpzMember(std::shared_ptr<ReadableFile> archive, const NpzMember& member,
                                    uint64_t max_inflated_bytes = kDefaultMaxInflatedBytes);

}  // namespace sluice

#endif  // SLUICE_RECORDS_NPZ_H_
