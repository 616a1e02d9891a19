// SSTableBuilder: writes a LevelDB-format table (TensorFlow's `.index`
// files) into memory.
//
// Keys are added in strictly increasing bytewise order; the builder groups
// entries into data blocks of about `block_size` bytes with prefix-compressed
// keys and a restart point every `restart_interval` keys, then appends an
// empty metaindex block, the index block and the 48-byte footer. Blocks are
// stored uncompressed, as TensorFlow writes them. The layout is described in
// docs/formats.md. Not thread-safe.
#ifndef SLUICE_RECORDS_INTERNAL_SSTABLE_BUILDER_H_
#define SLUICE_RECORDS_INTERNAL_SSTABLE_BUILDER_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/core/status.h"
#include "sluice/records/internal/sstable_format.h"

namespace sluice::records_internal {

struct SSTableOptions {
  size_t block_size = sstable::kDefaultBlockSize;
  int restart_interval = sstable::kDefaultRestartInterval;  // REQUIRES: >= 1
};

class SSTableBuilder {
 public:
  explicit SSTableBuilder(SSTableOptions options = {});

  // InvalidArgument unless `key` sorts after every key added before, or if
  // called after Finish().
  Status Add(std::string_view key, std::string_view value);
  // Completes the table and returns its bytes. Further calls return "".
  std::string Finish();

 private:
  // Block assembly, shared by data and index blocks.
  struct Block {
    std::string buffer;
    std::vector<uint32_t> restarts{0};
    int since_restart = 0;
    std::string last_key;
    bool empty() const { return buffer.empty(); }
    size_t SizeEstimate() const { return buffer.size() + 4 * restarts.size() + 4; }
  };
  void AddToBlock(Block* block, int restart_interval, std::string_view key, std::string_view value);
  // Appends the block (its restarts, trailer) to out_, resets it.
  sstable::BlockHandle WriteBlock(Block* block);
  void FlushDataBlock();

  SSTableOptions options_;
  std::string out_;
  Block data_;
  Block index_;
  std::string last_key_;
  bool has_key_ = false;
  bool pending_index_entry_ = false;
  sstable::BlockHandle pending_handle_;
  bool finished_ = false;
};

}  // namespace sluice::records_internal

#endif  // SLUICE_RECORDS_INTERNAL_SSTABLE_BUILDER_H_
