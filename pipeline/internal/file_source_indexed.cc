// The iterator of a FileSourceDataset whose files all allow random access
// (file_source_node.h): a positional cursor over the round robin.
#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "sluice/pipeline/internal/file_source_node.h"
#include "sluice/pipeline/internal/indexed_iterator.h"
#include "sluice/pipeline/internal/run_read_ahead.h"

namespace sluice::pipeline_internal {
namespace {

// Indexed, in order: element i is Get(i), but each file is read in runs of
// adjacent records (IndexedRecordFile::ReadRun, up to buffer_size bytes
// per pread) instead of one pread per record.
//
// With num_parallel_reads > 1, taking a file's run starts reading its next
// run in a task (RunReadAhead), so the open files are read in parallel. The
// first runs of the first num_parallel_reads files are read ahead when the
// iterator is made, and a file's first run when the file before it in the
// rotation's order takes its last run (until the iterator is moved with
// SeekTo: from there on only next runs, whose stride is known).
class IndexedFileIterator : public IndexedIterator {
 public:
  IndexedFileIterator(IteratorContext& ctx, const FileSourceNode& node)
      : IndexedIterator(ctx, node), node_(node), runs_(node.files().size()) {
    const int64_t reads = node.source_options().num_parallel_reads;
    if (reads > 1) {
      read_ahead_.emplace(ctx, counters(), node.files().size());
      for (int64_t k = 0; k < reads; ++k) StartNextFirstRun();
    }
  }

  Status SeekTo(int64_t n) override {
    if (n != position()) first_runs_ = false;  // files no longer start at record 0
    return IndexedIterator::SeekTo(n);
  }

 protected:
  Result<Element> Fetch(int64_t i) override {
    const auto [file, record] = node_.Locate(i);
    SLUICE_ASSIGN_OR_RETURN(const Record* rec, RecordOf(file, record));
    Result<Element> e = node_.MakeElement(*rec, file);
    Done(file, record);
    return e;
  }
  // Formats whose records are their elements: records i .. straight into
  // one string tensor of views: no element,
  // tensor or allocation per record. An error after k > 0 records ends the
  // batch there; the next call reads the failing record again and returns it.
  std::optional<Result<Element>> FetchStacked(int64_t i, int64_t n) override {
    if (!node_.format().records_are_elements()) return std::nullopt;
    RecordBatch batch(n);
    for (int64_t k = 0; k < n; ++k) {
      const auto [file, record] = node_.Locate(i + k);
      Result<const Record*> rec = RecordOf(file, record);
      if (!rec.ok()) {
        if (batch.empty()) return Result<Element>(rec.status());
        break;
      }
      batch.Add(**rec, file);
      Done(file, record);
    }
    return std::move(batch).Finish(node_);
  }

 private:
  // Record `record` of `file`, from its run (read when needed). A reader
  // that skips records (shard: every W-th one) reads through gaps of up to
  // kReadThrough bytes, which costs less than a system call per record;
  // past wider gaps it reads each record alone, so ranks of a job do not
  // read each other's large records.
  //
  // A run holds every stride-th record from its first (the stride the
  // reader last moved by, in this file), so a strided reader neither checks
  // nor keeps the records it skips.
  Result<const Record*> RecordOf(int64_t file, int64_t record) {
    FileRun& fr = runs_[static_cast<size_t>(file)];
    std::vector<Record>& run = fr.records;
    const uint64_t r = static_cast<uint64_t>(record);
    const int64_t last = std::exchange(fr.last, record);
    if (!run.empty() && r >= run.front().number && r <= run.back().number &&
        (r - run.front().number) % fr.stride == 0) {
      return &run[static_cast<size_t>((r - run.front().number) / fr.stride)];
    }
    run.clear();  // drop the old buffer before reading the next
    fr.stride = last >= 0 && record > last ? static_cast<uint64_t>(record - last) : 1;
    const RunReadAhead::RunKey key{r, RunBytes(file, last, r, fr.stride), fr.stride};
    const IndexedRecordFile& f = node_.indexed(file);
    const size_t index = static_cast<size_t>(file);
    std::optional<Result<std::vector<Record>>> ahead;
    if (read_ahead_) ahead = read_ahead_->Take(index, key);
    SLUICE_ASSIGN_OR_RETURN(run,
                            ahead ? std::move(*ahead) : f.ReadRun(r, key.max_bytes, key.stride));
    // The file's next run, if the reader goes on with the same stride;
    // after its last run, the first run of the next file to open.
    const uint64_t next = run.back().number + fr.stride;
    if (read_ahead_ && next < f.num_records()) {
      read_ahead_->Start(
          f, index,
          {next, RunBytes(file, static_cast<int64_t>(run.back().number), next, fr.stride),
           fr.stride});
    } else if (read_ahead_) {
      StartNextFirstRun();
    }
    return &run[0];
  }
  // Reads ahead the first run of the next file (in the order the rotation
  // opens them) that has records, if files still start at record 0.
  void StartNextFirstRun() {
    const int64_t files = static_cast<int64_t>(node_.files().size());
    while (first_runs_ && next_first_ < files) {
      const int64_t f = next_first_++;
      if (node_.indexed(f).num_records() == 0) continue;
      read_ahead_->Start(node_.indexed(f), static_cast<size_t>(f), {0, RunBytes(f, -1, 0, 1), 1});
      return;
    }
  }
  // The bytes to read for record r of `file` after record `last` (-1:
  // none) at `stride`: buffer_size, or 1 (the record alone) past a wide gap.
  size_t RunBytes(int64_t file, int64_t last, uint64_t r, uint64_t stride) const {
    if (stride > 1) {
      const IndexedRecordFile& f = node_.indexed(file);
      const RecordExtent prev = f.extent(static_cast<uint64_t>(last));
      if (f.extent(r).offset - (prev.offset + prev.length) > kReadThrough) return 1;  // alone
    }
    return node_.buffer_bytes();
  }
  static constexpr uint64_t kReadThrough = 64 << 10;
  // The record was taken: drop the run after its last one (the file's next
  // run comes later; elements keep the buffer they view alive).
  void Done(int64_t file, int64_t record) {
    std::vector<Record>& run = runs_[static_cast<size_t>(file)].records;
    if (static_cast<uint64_t>(record) == run.back().number) run.clear();
  }

  // Per file: the records read ahead, their stride, and the record taken
  // last (-1: none yet).
  struct FileRun {
    std::vector<Record> records;
    uint64_t stride = 1;
    int64_t last = -1;
  };
  const FileSourceNode& node_;
  std::vector<FileRun> runs_;
  std::optional<RunReadAhead> read_ahead_;  // num_parallel_reads > 1
  int64_t next_first_ = 0;                  // the next file whose first run to read ahead
  bool first_runs_ = true;                  // files start at record 0 (no SeekTo yet)
};

}  // namespace

std::unique_ptr<IteratorNode> MakeIndexedFileIterator(IteratorContext& ctx,
                                                      const FileSourceNode& node) {
  return std::make_unique<IndexedFileIterator>(ctx, node);
}

}  // namespace sluice::pipeline_internal
