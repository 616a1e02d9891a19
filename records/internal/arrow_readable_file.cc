#include "sluice/records/internal/arrow_readable_file.h"

#include <arrow/buffer.h>

#include <algorithm>
#include <string>

namespace sluice::records_internal {
namespace {

arrow::Status ToArrow(const Status& s) { return arrow::Status::IOError(s.ToString()); }

}  // namespace

ArrowReadableFile::ArrowReadableFile(std::shared_ptr<ReadableFile> file) : file_(std::move(file)) {}

arrow::Status ArrowReadableFile::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  return arrow::Status::OK();
}

bool ArrowReadableFile::closed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_;
}

arrow::Result<int64_t> ArrowReadableFile::Tell() const {
  std::lock_guard<std::mutex> lock(mu_);
  return position_;
}

arrow::Status ArrowReadableFile::Seek(int64_t position) {
  if (position < 0) return arrow::Status::Invalid(file_->name(), ": seek to a negative offset");
  std::lock_guard<std::mutex> lock(mu_);
  position_ = position;
  return arrow::Status::OK();
}

arrow::Result<int64_t> ArrowReadableFile::Read(int64_t nbytes, void* out) {
  std::lock_guard<std::mutex> lock(mu_);
  ARROW_ASSIGN_OR_RAISE(int64_t n, DoReadAt(position_, nbytes, out));
  position_ += n;
  return n;
}

arrow::Result<std::shared_ptr<arrow::Buffer>> ArrowReadableFile::Read(int64_t nbytes) {
  std::lock_guard<std::mutex> lock(mu_);
  ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::Buffer> b, ReadAt(position_, nbytes));
  position_ += b->size();
  return b;
}

arrow::Result<int64_t> ArrowReadableFile::GetSize() {
  Result<uint64_t> size = file_->Size();
  if (!size.ok()) return ToArrow(size.status());
  return static_cast<int64_t>(*size);
}

arrow::Result<int64_t> ArrowReadableFile::DoReadAt(int64_t position, int64_t nbytes, void* out) {
  if (position < 0 || nbytes < 0) {
    return arrow::Status::Invalid(file_->name(), ": read of ", nbytes, " bytes at offset ",
                                  position);
  }
  int64_t done = 0;
  auto* dst = static_cast<uint8_t*>(out);
  while (done < nbytes) {
    Result<size_t> n = file_->ReadAt(static_cast<uint64_t>(position + done), dst + done,
                                     static_cast<size_t>(nbytes - done));
    if (!n.ok()) return ToArrow(n.status());
    if (*n == 0) break;  // the end of the file
    done += static_cast<int64_t>(*n);
  }
  return done;
}

arrow::Result<int64_t> ArrowReadableFile::ReadAt(int64_t position, int64_t nbytes, void* out) {
  return DoReadAt(position, nbytes, out);
}

arrow::Result<int64_t> ArrowReadableFile::ReadAt(int64_t position, int64_t nbytes,
                                                 bool allow_short_read, void* out) {
  ARROW_ASSIGN_OR_RAISE(int64_t n, DoReadAt(position, nbytes, out));
  if (n < nbytes && !allow_short_read) {
    return arrow::Status::IOError(file_->name(), ": ", nbytes, " bytes at offset ", position,
                                  " asked, the file ends after ", n);
  }
  return n;
}

arrow::Result<std::shared_ptr<arrow::Buffer>> ArrowReadableFile::ReadAt(int64_t position,
                                                                        int64_t nbytes) {
  return ReadAt(position, nbytes, /*allow_short_read=*/true);
}

arrow::Result<std::shared_ptr<arrow::Buffer>> ArrowReadableFile::ReadAt(int64_t position,
                                                                        int64_t nbytes,
                                                                        bool allow_short_read) {
  if (position < 0 || nbytes < 0) {
    return arrow::Status::Invalid(file_->name(), ": read of ", nbytes, " bytes at offset ",
                                  position);
  }
  // Never allocate more than the file can hold (a hostile footer may ask
  // for any length).
  ARROW_ASSIGN_OR_RAISE(int64_t size, GetSize());
  const int64_t want = std::min(nbytes, std::max<int64_t>(0, size - position));
  if (want < nbytes && !allow_short_read) {
    return arrow::Status::IOError(file_->name(), ": ", nbytes, " bytes at offset ", position,
                                  " asked, the file is ", size, " bytes");
  }
  ARROW_ASSIGN_OR_RAISE(std::unique_ptr<arrow::ResizableBuffer> buf,
                        arrow::AllocateResizableBuffer(want));
  ARROW_ASSIGN_OR_RAISE(int64_t n, DoReadAt(position, want, buf->mutable_data()));
  if (n < want) ARROW_RETURN_NOT_OK(buf->Resize(n, /*shrink_to_fit=*/false));
  return std::shared_ptr<arrow::Buffer>(std::move(buf));
}

}  // namespace sluice::records_internal
