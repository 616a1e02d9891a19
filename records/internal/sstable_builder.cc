#include "sluice/records/internal/sstable_builder.h"

#include <algorithm>
#include <utility>

#include "sluice/records/crc32c.h"

namespace sluice::records_internal {
namespace {

// A short key k with a <= k < b, to separate two blocks in the index: bump
// the first differing byte of `a` when that keeps it below `b`.
std::string Separator(std::string a, std::string_view b) {
  const size_t common = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < common && a[i] == b[i]) ++i;
  if (i >= common) return a;  // one is a prefix of the other: keep `a`
  const auto byte = static_cast<uint8_t>(a[i]);
  if (byte < 0xff && byte + 1 < static_cast<uint8_t>(b[i])) {
    a[i] = static_cast<char>(byte + 1);
    a.resize(i + 1);
  }
  return a;
}

// A short key k >= a, for the last block: the first byte that is not 0xff,
// incremented, ends the key.
std::string Successor(std::string a) {
  for (size_t i = 0; i < a.size(); ++i) {
    const auto byte = static_cast<uint8_t>(a[i]);
    if (byte != 0xff) {
      a[i] = static_cast<char>(byte + 1);
      a.resize(i + 1);
      return a;
    }
  }
  return a;  // all 0xff (or empty): keep it
}

}  // namespace

SSTableBuilder::SSTableBuilder(SSTableOptions options) : options_(options) {
  options_.restart_interval = std::max(options_.restart_interval, 1);
}

void SSTableBuilder::AddToBlock(Block* block, int restart_interval, std::string_view key,
                                std::string_view value) {
  size_t shared = 0;
  if (block->since_restart < restart_interval) {
    const size_t limit = std::min(block->last_key.size(), key.size());
    while (shared < limit && block->last_key[shared] == key[shared]) ++shared;
  } else {
    block->restarts.push_back(static_cast<uint32_t>(block->buffer.size()));
    block->since_restart = 0;
  }
  sstable::PutVarint64(&block->buffer, shared);
  sstable::PutVarint64(&block->buffer, key.size() - shared);
  sstable::PutVarint64(&block->buffer, value.size());
  block->buffer.append(key.substr(shared));
  block->buffer.append(value);
  block->last_key.assign(key);
  ++block->since_restart;
}

sstable::BlockHandle SSTableBuilder::WriteBlock(Block* block) {
  for (uint32_t r : block->restarts) sstable::PutFixed32(&block->buffer, r);
  sstable::PutFixed32(&block->buffer, static_cast<uint32_t>(block->restarts.size()));
  sstable::BlockHandle handle{out_.size(), block->buffer.size()};
  out_.append(block->buffer);
  const char type = static_cast<char>(sstable::kNoCompression);
  uint32_t crc = crc32c::Value(block->buffer);
  crc = crc32c::Extend(crc, &type, 1);
  out_.push_back(type);
  sstable::PutFixed32(&out_, crc32c::Mask(crc));
  *block = Block();
  return handle;
}

void SSTableBuilder::FlushDataBlock() {
  if (data_.empty()) return;
  pending_handle_ = WriteBlock(&data_);
  pending_index_entry_ = true;
}

Status SSTableBuilder::Add(std::string_view key, std::string_view value) {
  if (finished_) return Status::InvalidArgument("SSTableBuilder::Add after Finish");
  if (has_key_ && key <= std::string_view(last_key_)) {
    return Status::InvalidArgument("SSTableBuilder: keys must be added in increasing order; \"" +
                                   std::string(key) + "\" after \"" + last_key_ + "\"");
  }
  if (pending_index_entry_) {
    std::string handle;
    sstable::PutBlockHandle(&handle, pending_handle_);
    AddToBlock(&index_, 1, Separator(last_key_, key), handle);
    pending_index_entry_ = false;
  }
  AddToBlock(&data_, options_.restart_interval, key, value);
  last_key_.assign(key);
  has_key_ = true;
  if (data_.SizeEstimate() >= options_.block_size) FlushDataBlock();
  return Status::OK();
}

std::string SSTableBuilder::Finish() {
  if (finished_) return {};
  finished_ = true;
  FlushDataBlock();
  Block meta;
  const sstable::BlockHandle meta_handle = WriteBlock(&meta);
  if (pending_index_entry_) {
    std::string handle;
    sstable::PutBlockHandle(&handle, pending_handle_);
    AddToBlock(&index_, 1, Successor(last_key_), handle);
    pending_index_entry_ = false;
  }
  const sstable::BlockHandle index_handle = WriteBlock(&index_);
  std::string footer;
  sstable::PutBlockHandle(&footer, meta_handle);
  sstable::PutBlockHandle(&footer, index_handle);
  footer.resize(2 * sstable::kMaxBlockHandleSize, '\0');
  sstable::PutFixed64(&footer, sstable::kTableMagic);
  out_.append(footer);
  return std::move(out_);
}

}  // namespace sluice::records_internal
