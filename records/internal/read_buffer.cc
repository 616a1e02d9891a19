#include "sluice/records/internal/read_buffer.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace sluice::records_internal {

ReadBuffer::ReadBuffer(ByteSource* source, std::string name, Options options)
    : source_(source), name_(std::move(name)), opts_(options) {}

Status ReadBuffer::Reserve(size_t capacity) {
  const size_t tail = end_ - pos_;
  if (buf_ && buf_.unique() && buf_.size() >= capacity &&
      (!opts_.shrink || buf_.size() <= std::max(capacity, opts_.buffer_size))) {
    if (pos_ > 0) std::memmove(buf_.data(), buf_.data() + pos_, tail);
  } else {
    Buffer next;
    for (auto it = spares_.begin(); it != spares_.end(); ++it) {
      if (it->unique() && it->size() >= capacity) {
        next = std::move(*it);
        spares_.erase(it);
        break;
      }
    }
    if (!next) {
      Result<Buffer> fresh = Buffer::Allocate(std::max(capacity, opts_.buffer_size));
      if (!fresh.ok()) {
        if (name_.empty()) return fresh.status();
        return fresh.status().WithContext("reading " + name_);
      }
      next = std::move(fresh).value();
    }
    if (tail > 0) std::memcpy(next.data(), buf_.data() + pos_, tail);
    // Only buffers of the reader's own size are kept to recycle (unshared
    // ones too: the next read takes one instead of allocating): a bigger one
    // belongs to the records in it, and the process's buffer pool recycles
    // it once they are gone.
    if (buf_ && buf_.size() <= opts_.buffer_size && opts_.max_spares > 0) {
      if (spares_.size() >= opts_.max_spares) spares_.erase(spares_.begin());
      spares_.push_back(std::move(buf_));
    }
    buf_ = std::move(next);
  }
  base_ += pos_;
  end_ = tail;
  pos_ = 0;
  return Status::OK();
}

Result<size_t> ReadBuffer::ReadSome() {
  SLUICE_ASSIGN_OR_RETURN(size_t got, source_->Read(buf_.data() + end_, buf_.size() - end_));
  end_ += got;
  return got;
}

Result<size_t> ReadBuffer::EnsureSlow(uint64_t need, bool trusted) {
  const size_t floor = opts_.buffer_size;
  SLUICE_RETURN_IF_ERROR(
      Reserve(trusted ? static_cast<size_t>(std::max<uint64_t>(floor, need)) : floor));
  while (end_ - pos_ < need) {
    if (full()) {
      // Full of real bytes and still short: double, up to what is needed.
      SLUICE_RETURN_IF_ERROR(Reserve(
          static_cast<size_t>(std::min<uint64_t>(need, std::max<size_t>(2 * buf_.size(), floor)))));
    }
    SLUICE_ASSIGN_OR_RETURN(size_t got, ReadSome());
    if (got == 0) break;
  }
  return end_ - pos_;
}

Status ReadBuffer::SeekTo(uint64_t offset) {
  if (offset >= base_ && offset <= base_ + end_) {
    pos_ = static_cast<size_t>(offset - base_);
    return Status::OK();
  }
  SLUICE_RETURN_IF_ERROR(source_->SeekTo(offset));
  base_ = offset;
  pos_ = end_ = 0;
  return Status::OK();
}

size_t ReadBuffer::buffer_bytes() const {
  size_t n = 0;
  if (buf_ && (buf_.size() <= opts_.buffer_size || buf_.unique())) n += buf_.size();
  for (const Buffer& b : spares_) n += b.size();
  return n;
}

}  // namespace sluice::records_internal
