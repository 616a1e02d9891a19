#include "sluice/records/internal/sstable_reader.h"

#include "sluice/records/crc32c.h"
#include "sluice/records/internal/sstable_format.h"

namespace sluice::records_internal {
namespace {

class TableParser {
 public:
  TableParser(std::string_view bytes, const std::string& name)
      : bytes_(bytes),
        name_(name),
        budget_(size_t{64} << 20),
        data_end_(bytes.size() >= sstable::kFooterSize ? bytes.size() - sstable::kFooterSize : 0) {
    budget_ += kSSTableExpansionLimit * bytes.size();
  }

  Result<std::vector<SSTableEntry>> Parse() {
    if (bytes_.size() < sstable::kFooterSize) {
      return Corrupt(0, "file of " + std::to_string(bytes_.size()) +
                            " bytes is too short for a table footer (48 bytes)");
    }
    const char* footer = bytes_.data() + data_end_;
    if (sstable::LoadFixed64(footer + 2 * sstable::kMaxBlockHandleSize) != sstable::kTableMagic) {
      return Corrupt(data_end_ + 2 * sstable::kMaxBlockHandleSize,
                     "bad table magic number (not a LevelDB table)");
    }
    std::string_view handles(footer, 2 * sstable::kMaxBlockHandleSize);
    sstable::BlockHandle meta, index;
    if (!sstable::GetBlockHandle(&handles, &meta) || !sstable::GetBlockHandle(&handles, &index)) {
      return Corrupt(data_end_, "malformed block handles in the footer");
    }
    SLUICE_ASSIGN_OR_RETURN(std::string_view meta_block, ReadBlock(meta, "metaindex"));
    (void)meta_block;  // no filters or other meta blocks are used
    SLUICE_ASSIGN_OR_RETURN(std::string_view index_block, ReadBlock(index, "index"));

    std::vector<SSTableEntry> entries;
    std::vector<SSTableEntry> index_entries;
    SLUICE_RETURN_IF_ERROR(DecodeBlock(index_block, index.offset, &index_entries));
    for (const SSTableEntry& ie : index_entries) {
      std::string_view v = ie.value;
      sstable::BlockHandle h;
      if (!sstable::GetBlockHandle(&v, &h)) {
        return Corrupt(index.offset, "malformed block handle in the index block");
      }
      SLUICE_ASSIGN_OR_RETURN(std::string_view block, ReadBlock(h, "data"));
      const size_t first = entries.size();
      SLUICE_RETURN_IF_ERROR(DecodeBlock(block, h.offset, &entries));
      for (size_t i = first; i < entries.size(); ++i) {
        if (i > 0 && entries[i].key <= entries[i - 1].key) {
          return Corrupt(h.offset, "keys out of order in data block (\"" + entries[i].key +
                                       "\" after \"" + entries[i - 1].key + "\")");
        }
        if (entries[i].key > ie.key) {
          return Corrupt(h.offset, "key \"" + entries[i].key + "\" is past its index entry \"" +
                                       ie.key + "\"");
        }
      }
    }
    return entries;
  }

 private:
  Status Corrupt(uint64_t offset, const std::string& what) const {
    return Status::DataLoss(name_ + ": corrupt table at offset " + std::to_string(offset) + ": " +
                            what);
  }

  // The contents of the block at `h` after checking bounds, type and CRC.
  Result<std::string_view> ReadBlock(const sstable::BlockHandle& h, const char* what) {
    if (h.offset > data_end_ || h.size > data_end_ - h.offset ||
        data_end_ - h.offset - h.size < sstable::kBlockTrailerSize) {
      return Corrupt(h.offset, std::string(what) + " block (size " + std::to_string(h.size) +
                                   ") extends past the end of the table data (" +
                                   std::to_string(data_end_) + " bytes)");
    }
    const char* p = bytes_.data() + h.offset;
    const auto type = static_cast<uint8_t>(p[h.size]);
    uint32_t crc = crc32c::Extend(crc32c::Value(p, h.size), p + h.size, 1);
    const uint32_t stored = crc32c::Unmask(sstable::LoadFixed32(p + h.size + 1));
    if (crc != stored) {
      return Corrupt(h.offset, std::string(what) + " block checksum mismatch");
    }
    if (type != sstable::kNoCompression) {
      return Corrupt(h.offset, std::string(what) + " block has compression type " +
                                   std::to_string(type) + ", which is not supported");
    }
    return std::string_view(p, h.size);
  }

  Status DecodeBlock(std::string_view block, uint64_t offset, std::vector<SSTableEntry>* out) {
    if (block.size() < 4)
      return Corrupt(offset,
                     "block of " + std::to_string(block.size()) + " bytes has no restart count");
    const uint32_t num_restarts = sstable::LoadFixed32(block.data() + block.size() - 4);
    if (num_restarts == 0 || num_restarts > (block.size() - 4) / 4) {
      return Corrupt(offset, "bad restart count " + std::to_string(num_restarts));
    }
    const size_t entries_end = block.size() - 4 - 4 * size_t{num_restarts};
    for (uint32_t i = 0; i < num_restarts; ++i) {
      const uint32_t r = sstable::LoadFixed32(block.data() + entries_end + 4 * size_t{i});
      if (r > entries_end || (entries_end > 0 && r == entries_end)) {
        return Corrupt(offset, "restart point " + std::to_string(r) + " past the entries");
      }
    }
    std::string_view in = block.substr(0, entries_end);
    std::string key;
    while (!in.empty()) {
      const uint64_t at = offset + (entries_end - in.size());
      uint32_t shared, non_shared, value_len;
      if (!sstable::GetVarint32(&in, &shared) || !sstable::GetVarint32(&in, &non_shared) ||
          !sstable::GetVarint32(&in, &value_len)) {
        return Corrupt(at, "truncated entry header");
      }
      if (shared > key.size()) {
        return Corrupt(at, "entry shares " + std::to_string(shared) + " bytes of a " +
                               std::to_string(key.size()) + "-byte previous key");
      }
      if (uint64_t{non_shared} + value_len > in.size()) {
        return Corrupt(at, "entry of " + std::to_string(uint64_t{non_shared} + value_len) +
                               " bytes overruns its block");
      }
      const size_t decoded = size_t{shared} + non_shared + value_len;
      if (decoded > budget_) {
        return Status::ResourceExhausted(name_ + ": table entries at offset " + std::to_string(at) +
                                         " decode to more bytes than the limit");
      }
      budget_ -= decoded;
      key.resize(shared);
      key.append(in.substr(0, non_shared));
      out->push_back({key, std::string(in.substr(non_shared, value_len))});
      in.remove_prefix(size_t{non_shared} + value_len);
    }
    return Status::OK();
  }

  std::string_view bytes_;
  const std::string& name_;
  size_t budget_;
  uint64_t data_end_;
};

}  // namespace

Result<std::vector<SSTableEntry>> ParseSSTable(std::string_view bytes, const std::string& name) {
  return TableParser(bytes, name).Parse();
}

Result<std::vector<SSTableEntry>> ReadSSTable(ReadableFile& file) {
  SLUICE_ASSIGN_OR_RETURN(uint64_t size, file.Size());
  if (size > (uint64_t{1} << 40)) {
    return Status::ResourceExhausted(file.name() + ": table of " + std::to_string(size) +
                                     " bytes is too large");
  }
  std::string bytes(static_cast<size_t>(size), '\0');
  size_t got = 0;
  while (got < bytes.size()) {
    SLUICE_ASSIGN_OR_RETURN(size_t n, file.ReadAt(got, bytes.data() + got, bytes.size() - got));
    if (n == 0) break;
    got += n;
  }
  bytes.resize(got);
  return ParseSSTable(bytes, file.name());
}

}  // namespace sluice::records_internal
