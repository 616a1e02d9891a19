// TFRecordDataset: the records of TFRecord files as unnamed string scalars,
// a format (FileFormat) on the one file source (file_source.h), which gives
// it the rotation of open files, parallel reads ahead, restore, sharding,
// random access and ignore_errors. Each element is a view into the reader's
// buffer (no copy) and carries its origin (file name, record number).
//
// Random access: uncompressed files with a valid FILE.idx
// (IndexedTFRecordFile). In order: TFRecordReader; a restored reader seeks
// with the file's index when there is one (use_index), else reads up to the
// record. Errors: a record whose data checksum fails is passed (the framing
// held) and takes its turn in the rotation; a reader that cannot move past
// an error (a truncated last record, a corrupt header, a file that does not
// open) ends its file.
#include <memory>
#include <string>
#include <utility>

#include "sluice/pipeline/file_source.h"
#include "sluice/pipeline/internal/stages.h"
#include "sluice/records/indexed_tfrecord_file.h"
#include "sluice/records/record_index.h"
#include "sluice/records/tfrecord_reader.h"

namespace sluice {
namespace {

// TFRecordReader as a RecordReader, seeking with the file's index.
class TFRecordFileReader : public RecordReader {
 public:
  TFRecordFileReader(TFRecordReader reader, bool use_index)
      : reader_(std::move(reader)), use_index_(use_index) {}
  Result<std::optional<Record>> Next() override { return reader_.Next(); }
  uint64_t next_record_number() const override { return reader_.next_record_number(); }
  size_t buffer_bytes() const override { return reader_.buffer_bytes(); }
  const std::string& filename() const override { return reader_.filename(); }
  Result<bool> Seek(uint64_t number) override {
    if (!use_index_) return false;
    Result<RecordIndex> index = RecordIndex::LoadFor(reader_.filename());
    if (!index.ok() || number > index->size()) return false;
    return reader_.Seek(*index, number).ok();
  }

 private:
  TFRecordReader reader_;
  const bool use_index_;
};

class TFRecordFormatImpl : public FileFormat {
 public:
  explicit TFRecordFormatImpl(TFRecordDatasetOptions o) : options_(std::move(o)) {}
  std::string kind() const override { return "TFRecordDataset"; }
  Result<std::unique_ptr<RecordReader>> Open(const std::string& path,
                                             size_t buffer_size) const override {
    TFRecordReaderOptions r;
    r.compression = options_.compression;
    r.buffer_size = buffer_size;
    r.verify_checksums = options_.verify_checksums;
    r.max_record_size = static_cast<uint64_t>(options_.max_record_size);
    SLUICE_ASSIGN_OR_RETURN(TFRecordReader reader, TFRecordReader::Open(path, r));
    return std::unique_ptr<RecordReader>(
        std::make_unique<TFRecordFileReader>(std::move(reader), options_.use_index));
  }
  Result<std::shared_ptr<const IndexedRecordFile>> OpenIndexed(
      const std::string& path) const override {
    if (options_.compression != Compression::kNone && options_.compression != Compression::kAuto) {
      return std::shared_ptr<const IndexedRecordFile>();
    }
    IndexedTFRecordFileOptions io;
    io.verify_checksums = options_.verify_checksums;
    io.max_record_size = static_cast<uint64_t>(options_.max_record_size);
    SLUICE_ASSIGN_OR_RETURN(IndexedTFRecordFile file, IndexedTFRecordFile::Open(path, io));
    return std::shared_ptr<const IndexedRecordFile>(
        std::make_shared<IndexedTFRecordFile>(std::move(file)));
  }

 private:
  const TFRecordDatasetOptions options_;
};

}  // namespace

std::shared_ptr<const FileFormat> TFRecordFormat(TFRecordDatasetOptions options) {
  return std::make_shared<TFRecordFormatImpl>(std::move(options));
}

}  // namespace sluice

namespace sluice::pipeline_internal {

Dataset MakeTFRecordDataset(std::vector<std::string> files, TFRecordDatasetOptions options) {
  if (options.max_record_size < 0) {
    return Dataset::FromError(
        Status::InvalidArgument("TFRecordDataset: max_record_size must be >= 0, got " +
                                std::to_string(options.max_record_size)));
  }
  FileSourceOptions source;
  source.buffer_size = options.buffer_size;
  source.num_parallel_reads = options.num_parallel_reads;
  source.use_index = options.use_index;
  source.name = options.name;
  return FileSourceDataset(std::move(files), TFRecordFormat(std::move(options)), std::move(source));
}

}  // namespace sluice::pipeline_internal
