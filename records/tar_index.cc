#include "sluice/records/tar_index.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

namespace sluice {
namespace {

class IndexedTarFile final : public IndexedRecordFile {
 public:
  IndexedTarFile(std::unique_ptr<ReadableFile> file, RecordIndex index, uint64_t file_size,
                 TarReaderOptions options)
      : file_(std::move(file)),
        index_(std::move(index)),
        file_size_(file_size),
        opts_(std::move(options)) {}

  uint64_t num_records() const override { return index_.size(); }
  const std::string& path() const override { return file_->name(); }
  RecordExtent extent(uint64_t i) const override {
    return {index_[i].offset, index_[i].length};
  }

  Result<std::vector<Record>> ReadRun(uint64_t first, size_t max_bytes,
                                      uint64_t stride) const override {
    stride = std::max<uint64_t>(stride, 1);
    SLUICE_RETURN_IF_ERROR(CheckEntry(first));
    const uint64_t start = index_[first].offset;
    uint64_t end = start + index_[first].length;
    uint64_t last = first;
    while (last + 1 < index_.size()) {
      const RecordIndexEntry& next = index_[last + 1];
      if (next.offset != end || end - start + next.length > max_bytes) break;
      if (!CheckEntry(last + 1).ok()) break;  // read alone later, with its error
      end += next.length;
      ++last;
    }
    const size_t bytes = static_cast<size_t>(end - start);
    Result<Buffer> buf = Buffer::Allocate(bytes);
    if (!buf.ok()) return buf.status().WithContext(Where(first, start));
    SLUICE_ASSIGN_OR_RETURN(size_t got, file_->ReadAt(start, buf->data(), bytes));
    if (got < bytes) {
      return Status::DataLoss(fmt::format(
          "{}: truncated: the index says samples {}..{} take {} bytes but the file ends {} bytes "
          "in (did it shrink after it was opened?)",
          Where(first, start), first, last, bytes, got));
    }
    std::vector<Record> run;
    run.reserve(static_cast<size_t>((last - first) / stride + 1));
    for (uint64_t i = first; i <= last; i += stride) {
      const RecordIndexEntry& e = index_[i];
      const std::string_view data(reinterpret_cast<const char*>(buf->data()) + (e.offset - start),
                                  e.length);
      Status ok = ForEachTarMember(data, e.offset, file_->name(), opts_.max_header_size,
                                   [](const TarMember&) { return Status::OK(); });
      if (!ok.ok()) {
        if (i == first) return ok.WithContext(fmt::format("sample {}", i));
        break;  // the good samples before it; reading from i reports the error
      }
      run.push_back(Record{data, *buf, e.offset, i});
    }
    return run;
  }

 private:
  std::string Where(uint64_t i, uint64_t offset) const {
    return fmt::format("{}: sample {} at offset {}", file_->name(), i, offset);
  }
  Status CheckEntry(uint64_t i) const {
    if (i >= index_.size()) {
      return Status::OutOfRange(fmt::format("{}: cannot read sample {}: the index lists {}",
                                            file_->name(), i, index_.size()));
    }
    const RecordIndexEntry& e = index_[i];
    if (e.offset > file_size_ || e.length > file_size_ - e.offset) {
      return Status::DataLoss(fmt::format(
          "{}: the index entry's length {} does not fit in the file's {} bytes; rebuild the index",
          Where(i, e.offset), e.length, file_size_));
    }
    if (e.length > opts_.max_sample_size) {
      return Status::DataLoss(fmt::format("{}: the sample's {} bytes exceed max_sample_size {}",
                                          Where(i, e.offset), e.length, opts_.max_sample_size));
    }
    return Status::OK();
  }

  std::unique_ptr<ReadableFile> file_;
  RecordIndex index_;
  uint64_t file_size_;
  TarReaderOptions opts_;
};

}  // namespace

std::string TarIndexPath(const std::string& tar_path) { return tar_path + ".idx"; }

Result<RecordIndex> BuildTarIndex(const std::string& tar_path, const TarReaderOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> file, OpenReadableFile(tar_path));
  if (file->is_stream()) {
    return Status::InvalidArgument("cannot index " + file->name() +
                                   ": it is a stream (a pipe), and an index describes a file");
  }
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<TarReader> reader,
                          TarReader::Open(std::move(file), options));
  std::vector<RecordIndexEntry> entries;
  while (true) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Record> rec, reader->Next());
    if (!rec) break;
    entries.push_back({rec->offset, rec->data.size()});
  }
  // Skipped entries between samples belong to the sample before them.
  for (size_t i = 0; i + 1 < entries.size(); ++i) {
    entries[i].length = entries[i + 1].offset - entries[i].offset;
  }
  if (!entries.empty() && entries.front().offset != 0) {
    entries.front().length += entries.front().offset;  // leading skipped entries
    entries.front().offset = 0;
  }
  SLUICE_ASSIGN_OR_RETURN(RecordIndexData data, DigestDataFile(tar_path));
  return RecordIndex(std::move(entries), data);
}

Result<RecordIndex> BuildAndSaveTarIndex(const std::string& tar_path,
                                         const TarReaderOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(RecordIndex index, BuildTarIndex(tar_path, options));
  SLUICE_RETURN_IF_ERROR(index.Save(TarIndexPath(tar_path)));
  return index;
}

Result<RecordIndex> LoadTarIndex(const std::string& tar_path) {
  const std::string idx = TarIndexPath(tar_path);
  SLUICE_ASSIGN_OR_RETURN(RecordIndex index, RecordIndex::Load(idx));
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> file, OpenReadableFile(tar_path));
  if (file->is_stream()) {
    return Status::FailedPrecondition(
        fmt::format("{}: {} is a stream, which an index cannot describe", idx, tar_path));
  }
  SLUICE_ASSIGN_OR_RETURN(uint64_t size, file->Size());
  const auto stale = [&](const std::string& why) {
    return Status::FailedPrecondition(fmt::format(
        "{}: stale index: {}; rebuild it with `sluice index {}`", idx, why, tar_path));
  };
  if (!index.data()) return stale("it has no trailer naming the tar file it was made for");
  if (index.data()->bytes != size) {
    return stale(fmt::format("it was made for a file of {} bytes but {} has {}",
                             index.data()->bytes, tar_path, size));
  }
  SLUICE_ASSIGN_OR_RETURN(Compression c, DetectTarCompression(*file));
  if (c == Compression::kNone && index.stream_size() > size) {
    return stale(fmt::format("it describes {} bytes but {} has {}", index.stream_size(), tar_path,
                             size));
  }
  return index;
}

Result<std::shared_ptr<const IndexedRecordFile>> OpenIndexedTar(const std::string& path,
                                                                const TarReaderOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> file, OpenReadableFile(path));
  SLUICE_ASSIGN_OR_RETURN(Compression c, DetectTarCompression(*file));
  if (c != Compression::kNone) {
    return Status::InvalidArgument(fmt::format(
        "{}: the file is {}-compressed; reading samples at random needs an uncompressed tar "
        "file",
        path, CompressionName(c)));
  }
  SLUICE_ASSIGN_OR_RETURN(RecordIndex index, LoadTarIndex(path));
  return OpenIndexedTar(std::move(file), std::move(index), options);
}

Result<std::shared_ptr<const IndexedRecordFile>> OpenIndexedTar(std::unique_ptr<ReadableFile> file,
                                                                RecordIndex index,
                                                                const TarReaderOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(Compression c, DetectTarCompression(*file));
  if (c != Compression::kNone) {
    return Status::InvalidArgument(file->name() + ": a compressed tar file cannot be read at random");
  }
  SLUICE_ASSIGN_OR_RETURN(uint64_t size, file->Size());
  if (index.stream_size() > size) {
    return Status::FailedPrecondition(fmt::format(
        "{}: stale index: it describes {} bytes but the file has {}", file->name(),
        index.stream_size(), size));
  }
  return std::shared_ptr<const IndexedRecordFile>(
      std::make_shared<IndexedTarFile>(std::move(file), std::move(index), size, options));
}

}  // namespace sluice
