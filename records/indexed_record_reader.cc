#include "sluice/records/indexed_record_reader.h"

#include <fmt/format.h>

#include <vector>

namespace sluice {
namespace {

class IndexedRecordReader final : public RecordReader {
 public:
  IndexedRecordReader(std::shared_ptr<const IndexedRecordFile> file, size_t buffer_size)
      : file_(std::move(file)), buffer_size_(buffer_size) {}

  Result<std::optional<Record>> Next() override {
    if (pos_ == run_.size()) {
      run_.clear();
      pos_ = 0;
      if (next_ >= file_->num_records()) return std::optional<Record>();
      SLUICE_ASSIGN_OR_RETURN(run_, file_->ReadRun(next_, buffer_size_));
    }
    ++next_;
    return std::optional<Record>(std::move(run_[pos_++]));
  }
  uint64_t next_record_number() const override { return next_; }
  Result<bool> Seek(uint64_t number) override {
    if (number > file_->num_records()) {
      return Status::OutOfRange(fmt::format("{}: cannot seek to record {}: the file has {}",
                                            file_->path(), number, file_->num_records()));
    }
    run_.clear();
    pos_ = 0;
    next_ = number;
    return true;
  }
  size_t buffer_bytes() const override { return pos_ < run_.size() ? run_[pos_].owner.size() : 0; }
  const std::string& filename() const override { return file_->path(); }

 private:
  std::shared_ptr<const IndexedRecordFile> file_;
  size_t buffer_size_;
  std::vector<Record> run_;
  size_t pos_ = 0;
  uint64_t next_ = 0;
};

}  // namespace

std::unique_ptr<RecordReader> NewIndexedRecordReader(std::shared_ptr<const IndexedRecordFile> file,
                                                     size_t buffer_size) {
  return std::make_unique<IndexedRecordReader>(std::move(file), buffer_size);
}

}  // namespace sluice
