// ParquetFile (parquet_file.h) in a build without Apache Arrow C++: every
// entry point says so.
#include "sluice/records/parquet_file.h"

namespace sluice {
namespace {

Status NoParquet() {
  return Status::FailedPrecondition(
      "this build of sluice has no Parquet (built without Apache Arrow C++: run "
      "scripts/fetch-arrow.sh and reconfigure)");
}

}  // namespace

struct ParquetFile::Impl {};

bool ParquetAvailable() { return false; }

ParquetFile::ParquetFile(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ParquetFile::~ParquetFile() = default;

Result<std::shared_ptr<const ParquetFile>> ParquetFile::Open(const std::string&,
                                                             const ParquetReadOptions&) {
  return NoParquet();
}
Result<std::shared_ptr<const ParquetFile>> ParquetFile::Open(std::shared_ptr<ReadableFile>,
                                                             const ParquetReadOptions&) {
  return NoParquet();
}
// Never called: no ParquetFile can be made.
uint64_t ParquetFile::num_records() const { return 0; }
const std::string& ParquetFile::path() const {
  static const std::string kNone;
  return kNone;
}
RecordExtent ParquetFile::extent(uint64_t) const { return {}; }
Result<std::vector<Record>> ParquetFile::ReadRun(uint64_t, size_t, uint64_t) const {
  return NoParquet();
}
const std::vector<ParquetComponent>& ParquetFile::components() const {
  static const std::vector<ParquetComponent> kNone;
  return kNone;
}
int64_t ParquetFile::num_rows() const { return 0; }
int ParquetFile::num_row_groups() const { return 0; }
int64_t ParquetFile::batch_rows() const { return 0; }

Result<Element> ParquetRecordToElement(const Record&) { return NoParquet(); }

}  // namespace sluice
