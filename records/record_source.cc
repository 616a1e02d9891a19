#include "sluice/records/record_source.h"

namespace sluice {

Result<bool> RecordReader::Seek(uint64_t /*number*/) { return false; }

Result<Record> IndexedRecordFile::Read(uint64_t i) const {
  SLUICE_ASSIGN_OR_RETURN(std::vector<Record> run, ReadRun(i, 1, 1));
  return std::move(run.front());
}

}  // namespace sluice
