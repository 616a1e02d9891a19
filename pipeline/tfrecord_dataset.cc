// TFRecordDataset: the records of TFRecord files as unnamed string scalars.
// Each element is a view into the reader's buffer (no copy) and carries its
// origin (file name, record number) for error messages.
//
// Order: with num_parallel_reads = N, N files are open at once in slots and
// one record is taken from each slot in turn; when a slot's file ends, the
// next file takes its place (at the same point in the rotation), and once
// the files run out the slot leaves the rotation (tf.data's interleave with
// cycle_length N, block_length 1). N = 1 reads the files one after another.
//
// Indexed mode: with use_index, when every file is uncompressed and has a
// valid FILE.idx (IndexedTFRecordFile::Open succeeds), the cardinality is
// exact and the dataset allows random access: element i maps to (file,
// record) through the round robin's segments (stretches of the order during
// which the same files are open) and is read with one pread. Its iterator is
// a cursor (positional) that reads each file in runs of adjacent records (one
// pread per buffer_size bytes). Otherwise the files are read in order with
// TFRecordReader; the state is the rotation (which file is in which slot,
// at which record) and restore seeks with the file's index when there is
// one, else reads up to the record.
//
// Errors: a record that cannot be read is returned as an error in its place
// and the next call goes on after it, so ignore_errors skips exactly it. A
// record whose data checksum fails takes its turn in the round robin; a
// reader that cannot move past an error (a truncated last record, a corrupt
// header, a file that does not open) ends its file, and the next file takes
// the slot.
#include <algorithm>
#include <deque>
#include <new>
#include <utility>

#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/indexed_iterator.h"
#include "sluice/pipeline/internal/read_ahead.h"
#include "sluice/pipeline/internal/record_block.h"
#include "sluice/pipeline/internal/run_read_ahead.h"
#include "sluice/pipeline/internal/stages.h"
#include "sluice/pipeline/internal/state.h"
#include "sluice/records/indexed_tfrecord_file.h"
#include "sluice/records/record_index.h"
#include "sluice/records/tfrecord_reader.h"

namespace sluice::pipeline_internal {
namespace {

struct Slot {
  int64_t file = 0;
  int64_t record = 0;  // the next record to read
};

// A stretch of the round-robin order during which the same files are open:
// element start + o comes from slots[(ptr + o) % m], record
// slots[k].record + o / m.
struct Segment {
  int64_t start = 0;
  int64_t length = 0;
  int64_t ptr = 0;
  std::vector<Slot> slots;
};

// The segments of the round robin over files with `counts` records, n slots.
std::vector<Segment> BuildSegments(const std::vector<int64_t>& counts, int64_t n) {
  std::vector<Segment> segments;
  const int64_t f = static_cast<int64_t>(counts.size());
  std::vector<Slot> slots;
  int64_t next_file = 0;
  for (; next_file < std::min(n, f); ++next_file) slots.push_back({next_file, 0});
  int64_t ptr = 0, start = 0;
  while (!slots.empty()) {
    const int64_t m = static_cast<int64_t>(slots.size());
    // The step at which each slot is visited and found exhausted.
    int64_t end = -1, ended = 0;
    for (int64_t k = 0; k < m; ++k) {
      const int64_t q = ((k - ptr) % m + m) % m;
      const int64_t e = q + (counts[slots[k].file] - slots[k].record) * m;
      if (end < 0 || e < end) end = e, ended = k;
    }
    if (end > 0) segments.push_back({start, end, ptr, slots});
    for (int64_t k = 0; k < m; ++k) {
      const int64_t q = ((k - ptr) % m + m) % m;
      if (end > q) slots[k].record += (end - q + m - 1) / m;
    }
    start += end;
    ptr = ended;
    if (next_file < f) {
      slots[ptr] = {next_file++, 0};
    } else {
      slots.erase(slots.begin() + ptr);
      if (ptr >= static_cast<int64_t>(slots.size())) ptr = 0;
    }
  }
  return segments;
}

Result<Element> RecordElement(const Record& rec, const std::shared_ptr<const std::string>& source) {
  SLUICE_ASSIGN_OR_RETURN(Buffer views, Buffer::Allocate(sizeof(std::string_view)));
  new (views.data()) std::string_view(rec.data);
  SLUICE_ASSIGN_OR_RETURN(Tensor t,
                          Tensor::FromStringViews(Shape{}, std::move(views), {rec.owner}));
  Element e({std::move(t)});
  e.set_origin(source, static_cast<int64_t>(rec.number));
  return e;
}

class TFRecordNode;

// Records gathered into one string tensor of views (a stacked read): no
// element, tensor or allocation per record.
class RecordBatch {
 public:
  // `n`: the records expected (only a hint: batch sizes can be huge).
  explicit RecordBatch(int64_t n) {
    views_.reserve(static_cast<size_t>(std::clamp<int64_t>(n, 0, int64_t{1} << 16)));
  }
  bool empty() const { return views_.empty(); }
  void Add(const Record& rec, int64_t file) {
    if (views_.empty()) first_file_ = file, first_record_ = static_cast<int64_t>(rec.number);
    views_.push_back(rec.data);
    if (owners_.empty() || owners_.back().data() != rec.owner.data()) owners_.push_back(rec.owner);
  }
  // REQUIRES: !empty(). Its origin is its first record.
  Result<Element> Finish(const TFRecordNode& node) &&;

 private:
  std::vector<std::string_view> views_;
  std::vector<Buffer> owners_;  // each read buffer once
  int64_t first_file_ = 0, first_record_ = 0;
};

class TFRecordNode : public DatasetNode {
 public:
  TFRecordNode(std::vector<std::string> files, TFRecordDatasetOptions o,
               std::vector<IndexedTFRecordFile> indexed, int64_t cardinality)
      : DatasetNode("TFRecordDataset", o.name, {}, ElementSpec({{"", DType::kString, Shape{}}}),
                    cardinality),
        files_(std::move(files)),
        options_(std::move(o)),
        indexed_(std::move(indexed)) {
    for (const std::string& f : files_) sources_.push_back(std::make_shared<const std::string>(f));
    if (!indexed_.empty()) {
      std::vector<int64_t> counts;
      for (const auto& f : indexed_) counts.push_back(static_cast<int64_t>(f.num_records()));
      segments_ = BuildSegments(counts, options_.num_parallel_reads);
    }
  }

  std::string Describe() const override {
    std::string d =
        name() + "(" + std::to_string(files_.size()) + (files_.size() == 1 ? " file" : " files");
    if (options_.num_parallel_reads > 1) {
      d += ", num_parallel_reads=" + std::to_string(options_.num_parallel_reads);
    }
    if (!indexed_.empty()) d += ", indexed";
    return d + ")";
  }
  bool random_access() const override { return !indexed_.empty(); }
  const std::vector<std::string>* source_files() const override { return &files_; }
  Result<std::shared_ptr<const DatasetNode>> WithSourceFiles(
      std::vector<std::string> files) const override {
    Dataset d = MakeTFRecordDataset(std::move(files), options_);
    SLUICE_RETURN_IF_ERROR(d.status());
    return d.node();
  }
  // Element i of the round robin: (file, record). REQUIRES: indexed.
  std::pair<int64_t, int64_t> Locate(int64_t i) const {
    auto it = std::upper_bound(segments_.begin(), segments_.end(), i,
                               [](int64_t v, const Segment& s) { return v < s.start; });
    const Segment& s = *(it - 1);
    const int64_t o = i - s.start;
    const int64_t m = static_cast<int64_t>(s.slots.size());
    const Slot& slot = s.slots[static_cast<size_t>((s.ptr + o) % m)];
    return {slot.file, slot.record + o / m};
  }
  Status CheckElement(int64_t i) const {
    if (indexed_.empty() || i < 0 || i >= cardinality()) {
      return Status::OutOfRange(name() + ": element " + std::to_string(i) + " of " +
                                std::to_string(cardinality()));
    }
    return Status::OK();
  }
  Result<Element> Get(IteratorContext&, int64_t i) const override {
    SLUICE_RETURN_IF_ERROR(CheckElement(i));
    const auto [file, record] = Locate(i);
    SLUICE_ASSIGN_OR_RETURN(
        Record rec, indexed_[static_cast<size_t>(file)].Read(static_cast<uint64_t>(record)));
    return RecordElement(rec, sources_[static_cast<size_t>(file)]);
  }
  const IndexedTFRecordFile& indexed(int64_t file) const {
    return indexed_[static_cast<size_t>(file)];
  }

  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams&) const override;

  const std::vector<std::string>& files() const { return files_; }
  const std::shared_ptr<const std::string>& source(int64_t f) const {
    return sources_[static_cast<size_t>(f)];
  }
  const TFRecordDatasetOptions& record_options() const { return options_; }
  TFRecordReaderOptions reader_options() const {
    TFRecordReaderOptions r;
    r.compression = options_.compression;
    r.buffer_size = static_cast<size_t>(options_.buffer_size);
    r.verify_checksums = options_.verify_checksums;
    r.max_record_size = static_cast<uint64_t>(options_.max_record_size);
    return r;
  }

 private:
  std::vector<std::string> files_;
  std::vector<std::shared_ptr<const std::string>> sources_;
  TFRecordDatasetOptions options_;
  std::vector<IndexedTFRecordFile> indexed_;  // empty unless every file is indexed
  std::vector<Segment> segments_;
};

Result<Element> RecordBatch::Finish(const TFRecordNode& node) && {
  SLUICE_ASSIGN_OR_RETURN(
      Tensor t, Tensor::Allocate(DType::kString, Shape{static_cast<int64_t>(views_.size())}));
  std::copy(views_.begin(), views_.end(), t.flat<std::string_view>().begin());
  for (const Buffer& b : owners_) t.AddStringOwner(b);
  Element e({std::move(t)});
  e.set_origin(node.source(first_file_), first_record_);
  return e;
}

// Indexed, in order: element i is Get(i), but each file is read in runs of
// adjacent records (IndexedTFRecordFile::ReadRun, up to buffer_size bytes
// per pread) instead of one pread per record.
//
// With num_parallel_reads > 1, taking a file's run starts reading its next
// run in a task (RunReadAhead), so the open files are read in parallel. The
// first runs of the first num_parallel_reads files are read ahead when the
// iterator is made, and a file's first run when the file before it in the
// rotation's order takes its last run (until the iterator is moved with
// SeekTo: from there on only next runs, whose stride is known).
class IndexedTFRecordIterator : public IndexedIterator {
 public:
  IndexedTFRecordIterator(IteratorContext& ctx, const TFRecordNode& node)
      : IndexedIterator(ctx, node), node_(node), runs_(node.files().size()) {
    const int64_t reads = node.record_options().num_parallel_reads;
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
    Result<Element> e = RecordElement(*rec, node_.source(file));
    Done(file, record);
    return e;
  }
  // Records i .. straight into one string tensor of views: no element,
  // tensor or allocation per record. An error after k > 0 records ends the
  // batch there; the next call reads the failing record again and returns it.
  std::optional<Result<Element>> FetchStacked(int64_t i, int64_t n) override {
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
    const IndexedTFRecordFile& f = node_.indexed(file);
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
      const RecordIndex& index = node_.indexed(file).index();
      const RecordIndexEntry& prev = index[static_cast<size_t>(last)];
      if (index[r].offset - (prev.offset + prev.length) > kReadThrough) return 1;  // alone
    }
    return static_cast<size_t>(std::max<int64_t>(node_.record_options().buffer_size, 1));
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
  const TFRecordNode& node_;
  std::vector<FileRun> runs_;
  std::optional<RunReadAhead> read_ahead_;  // num_parallel_reads > 1
  int64_t next_first_ = 0;                  // the next file whose first run to read ahead
  bool first_runs_ = true;                  // files start at record 0 (no SeekTo yet)
};

// Sequential reading: the round robin over open readers. With
// num_parallel_reads > 1 each open file's records are taken a block at a
// time (ReadRecordBlock), and taking a block starts reading the file's next
// one in a task (ReadAhead<RecordBlock>), so the open files are read in
// parallel.
class TFRecordIterator : public IteratorNode {
 public:
  TFRecordIterator(IteratorContext& ctx, const TFRecordNode& node)
      : IteratorNode(&ctx, ctx.CountersFor(&node)), node_(node) {
    if (node.record_options().num_parallel_reads > 1) read_ahead_.emplace(ctx, counters());
    Reset();
    for (OpenSlot& s : slots_) StartFirstBlock(s);
  }
  ~TFRecordIterator() override { DropReadAhead(); }

  Status Save(StateWriter& w) override {
    w.Tag("TFRecordDataset");
    w.I64(next_file_);
    w.I64(ptr_);
    w.I64(static_cast<int64_t>(slots_.size()));
    for (const OpenSlot& s : slots_) {
      w.I64(s.file);
      w.I64(s.reader ? static_cast<int64_t>(Position(s)) : s.record);
    }
    return Status::OK();
  }
  Status Restore(StateReader& r) override {
    SLUICE_RETURN_IF_ERROR(r.Tag("TFRecordDataset"));
    SLUICE_ASSIGN_OR_RETURN(int64_t next_file, r.I64());
    SLUICE_ASSIGN_OR_RETURN(int64_t ptr, r.I64());
    SLUICE_ASSIGN_OR_RETURN(int64_t n, r.I64());
    const int64_t f = static_cast<int64_t>(node_.files().size());
    if (next_file < 0 || next_file > f || n < 0 ||
        n > std::min(f, node_.record_options().num_parallel_reads) || ptr < 0 ||
        (n > 0 && ptr >= n)) {
      return Status::DataLoss("iterator state: bad TFRecordDataset rotation");
    }
    std::vector<OpenSlot> slots(static_cast<size_t>(n));
    for (OpenSlot& s : slots) {
      SLUICE_ASSIGN_OR_RETURN(s.file, r.I64());
      SLUICE_ASSIGN_OR_RETURN(s.record, r.I64());
      if (s.file < 0 || s.file >= f || s.record < 0) {
        return Status::DataLoss("iterator state: bad TFRecordDataset slot");
      }
    }
    DropReadAhead();
    slots_ = std::move(slots);
    next_file_ = next_file;
    ptr_ = ptr;
    return Status::OK();  // readers open (and seek) lazily
  }

 protected:
  NextResult GetNext() override {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Record> rec, NextRecord());
    if (!rec) return std::optional<Element>();
    SLUICE_ASSIGN_OR_RETURN(Element e, RecordElement(*rec, node_.source(last_file_)));
    return std::optional<Element>(std::move(e));
  }
  // Up to n records as one string tensor of views (see IndexedTFRecordIterator).
  std::optional<NextResult> GetNextStacked(int64_t n) override {
    if (!pending_.ok()) return NextResult(std::exchange(pending_, Status::OK()));
    RecordBatch batch(n);
    for (int64_t k = 0; k < n; ++k) {
      Result<std::optional<Record>> rec = NextRecord();
      if (!rec.ok()) {
        if (batch.empty()) return NextResult(rec.status());
        pending_ = rec.status();  // after the records before it
        break;
      }
      if (!*rec) break;
      batch.Add(**rec, last_file_);
    }
    if (batch.empty()) return NextResult(std::optional<Element>());
    SLUICE_ASSIGN_OR_RETURN(Element e, std::move(batch).Finish(node_));
    return NextResult(std::optional<Element>(std::move(e)));
  }

 private:
  // The next record of the round robin (its file in last_file_), or none.
  Result<std::optional<Record>> NextRecord() {
    for (;;) {
      if (slots_.empty()) return std::optional<Record>();
      if (ctx()->cancelled()) return Status::Cancelled("TFRecordDataset: cancelled");
      OpenSlot& s = slots_[static_cast<size_t>(ptr_)];
      if (!s.reader) {
        Status opened = OpenAt(s);
        if (!opened.ok()) {
          EndSlot();  // reported once; the next call goes on with the next file
          return opened;
        }
      }
      Result<std::optional<Record>> rec = std::optional<Record>();
      bool moved = false;
      if (read_ahead_) {
        if (s.items.empty()) Refill(s);
        ReadItem& item = s.items.front();
        rec = std::move(item.rec);
        moved = item.moved;
        s.items.pop_front();
      } else {
        const uint64_t before = s.reader->next_record_number();
        rec = s.reader->Next();
        moved = s.reader->next_record_number() > before;
        s.charge.Set(static_cast<int64_t>(s.reader->buffer_bytes()));
      }
      SLUICE_RETURN_IF_ERROR(ctx()->memory().CheckRequired(node_.name()));
      if (!rec.ok()) {
        // A record whose data is corrupt was passed (the framing held): it
        // takes its turn in the rotation like a record. A reader that could
        // not move (a truncated tail, a corrupt header) ends its file.
        if (moved) {
          ptr_ = (ptr_ + 1) % static_cast<int64_t>(slots_.size());
        } else {
          EndSlot();
        }
        return rec.status();
      }
      if (*rec) {
        last_file_ = s.file;
        ptr_ = (ptr_ + 1) % static_cast<int64_t>(slots_.size());
        return rec;
      }
      EndSlot();
    }
  }

  // The file in slots_[ptr_] is done: the next file takes its place, or the
  // slot leaves the rotation.
  void EndSlot() {
    OpenSlot& s = slots_[static_cast<size_t>(ptr_)];
    if (read_ahead_) read_ahead_->Drop(s.pending);
    if (spare_ && spare_->file == next_file_) {
      s = std::move(*spare_);  // opened ahead, its first block read ahead
      spare_.reset();
      ++next_file_;
    } else if (next_file_ < static_cast<int64_t>(node_.files().size())) {
      s = OpenSlot{next_file_++, 0, nullptr, {}};
    } else {
      slots_.erase(slots_.begin() + ptr_);
      if (ptr_ >= static_cast<int64_t>(slots_.size())) ptr_ = 0;
    }
  }

  // An open reader's read buffers (TFRecordReader::buffer_bytes: at least
  // buffer_size, more with records larger than that), charged to the RAM
  // budget while the reader is open: with many files open (interleave,
  // num_parallel_reads) they add up.
  class BufferCharge {
   public:
    BufferCharge() = default;
    BufferCharge(MemoryBudget* budget, int64_t bytes) : budget_(budget), bytes_(bytes) {
      budget_->ChargeRequired(bytes_);
    }
    void Set(int64_t bytes) {
      if (budget_ == nullptr) return;
      if (bytes > bytes_) budget_->ChargeRequired(bytes - bytes_);
      if (bytes < bytes_) budget_->ReleaseRequired(bytes_ - bytes);
      bytes_ = bytes;
    }
    BufferCharge(BufferCharge&& o) noexcept
        : budget_(std::exchange(o.budget_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
    BufferCharge& operator=(BufferCharge&& o) noexcept {
      if (this != &o) {
        if (budget_) budget_->ReleaseRequired(bytes_);
        budget_ = std::exchange(o.budget_, nullptr);
        bytes_ = std::exchange(o.bytes_, 0);
      }
      return *this;
    }
    ~BufferCharge() {
      if (budget_) budget_->ReleaseRequired(bytes_);
    }

   private:
    MemoryBudget* budget_ = nullptr;
    int64_t bytes_ = 0;
  };

  struct OpenSlot {
    int64_t file = 0;
    int64_t record = 0;                      // where to start when the reader is opened
    std::shared_ptr<TFRecordReader> reader;  // shared with its read-ahead's task
    BufferCharge charge;                     // for `reader`
    // With read-ahead: the block's records not returned yet, the reader's
    // position after them, and the next block being read.
    std::deque<ReadItem> items;
    uint64_t after = 0;
    std::shared_ptr<ReadAhead<RecordBlock>::Pending> pending;
  };

  // The number of the next record slot `s` returns. REQUIRES: s.reader.
  uint64_t Position(const OpenSlot& s) const {
    if (!read_ahead_) return s.reader->next_record_number();
    return s.items.empty() ? s.after : s.items.front().before;
  }
  // The next block of `s`: the one read ahead, else read here; then the
  // block after it is read ahead. REQUIRES: s.reader, s.items empty.
  void Refill(OpenSlot& s) {
    std::optional<RecordBlock> b;
    if (s.pending) {
      b = read_ahead_->Take(s.pending);  // counts itself
    } else {
      read_ahead_->CountInPlace();
    }
    if (!b) b = ReadRecordBlock(*s.reader, BlockBytes(), *ctx());
    s.items = std::move(b->items);
    s.after = b->after;
    s.charge.Set(b->buffer_bytes);
    if (!b->stopped) {
      s.pending = StartBlock(s.reader);
    } else if (s.items.back().rec.ok() && !spare_ &&
               next_file_ < static_cast<int64_t>(node_.files().size())) {
      // The file ends with this block: open the next one and read its
      // first block while this block's records go.
      spare_.emplace(OpenSlot{next_file_, 0, nullptr, {}});
      StartFirstBlock(*spare_);
    }
  }
  // With read-ahead, opens the file of a slot that has none yet and reads
  // its first block ahead (the first slots when the iterator is made, the
  // next file's when a slot's file ends in the block it took). A file that
  // does not open is left closed: the slot's turn opens it again and
  // returns the error in its place.
  void StartFirstBlock(OpenSlot& s) {
    if (!read_ahead_ || s.reader || !OpenAt(s).ok()) return;
    s.pending = StartBlock(s.reader);
  }
  // Starts reading the next block of `reader` in a task (null if its
  // charge does not fit); the task shares the reader.
  std::shared_ptr<ReadAhead<RecordBlock>::Pending> StartBlock(
      std::shared_ptr<TFRecordReader> reader) {
    const size_t bytes = BlockBytes();
    return read_ahead_->Start(static_cast<int64_t>(bytes),
                              [reader = std::move(reader), bytes, ctx = ctx()] {
                                return ReadRecordBlock(*reader, bytes, *ctx);
                              });
  }
  // A block's bytes of records (at least one record): buffer_size.
  size_t BlockBytes() const { return static_cast<size_t>(node_.record_options().buffer_size); }
  // Gives up every slot's read-ahead (their readers are about to go).
  void DropReadAhead() {
    if (!read_ahead_) return;
    for (OpenSlot& s : slots_) read_ahead_->Drop(s.pending);
    if (spare_) read_ahead_->Drop(spare_->pending);
    spare_.reset();
  }

  void Reset() {
    DropReadAhead();
    slots_.clear();
    const int64_t f = static_cast<int64_t>(node_.files().size());
    for (next_file_ = 0; next_file_ < std::min(f, node_.record_options().num_parallel_reads);
         ++next_file_) {
      slots_.push_back({next_file_, 0, nullptr, {}});
    }
    ptr_ = 0;
  }

  Status OpenAt(OpenSlot& s) {
    const std::string& path = node_.files()[static_cast<size_t>(s.file)];
    SLUICE_ASSIGN_OR_RETURN(TFRecordReader reader,
                            TFRecordReader::Open(path, node_.reader_options()));
    auto rd = std::make_shared<TFRecordReader>(std::move(reader));
    if (s.record > 0) {
      bool sought = false;
      if (node_.record_options().use_index) {
        Result<RecordIndex> index = RecordIndex::LoadFor(path);
        if (index.ok() && static_cast<uint64_t>(s.record) <= index->size()) {
          sought = rd->Seek(*index, static_cast<uint64_t>(s.record)).ok();
        }
      }
      if (!sought) {
        // Read up to the record again. One that fails its checks on the way
        // was returned as an error before the save (and skipped, under
        // ignore_errors): pass over it as the reader allows (it goes on
        // after a record whose data is corrupt). Before, such a record ended
        // the restore, and the slot lost the rest of its file.
        while (rd->next_record_number() < static_cast<uint64_t>(s.record)) {
          if (ctx()->cancelled()) return Status::Cancelled("TFRecordDataset: cancelled");
          const uint64_t before = rd->next_record_number();
          Result<std::optional<Record>> next = rd->Next();
          if (!next.ok()) {
            if (rd->next_record_number() > before) continue;
            return next.status();
          }
          const std::optional<Record>& rec = *next;
          if (!rec) {
            return Status::DataLoss(path + ": cannot restore to record " +
                                    std::to_string(s.record) + ": the file has only " +
                                    std::to_string(rd->next_record_number()) + " records");
          }
        }
      }
    }
    s.after = rd->next_record_number();
    s.reader = std::move(rd);
    s.charge =
        BufferCharge(&ctx()->memory(), std::max<int64_t>(node_.record_options().buffer_size, 4096));
    return Status::OK();
  }

  const TFRecordNode& node_;
  std::optional<ReadAhead<RecordBlock>> read_ahead_;  // num_parallel_reads > 1
  std::vector<OpenSlot> slots_;
  // With read-ahead: file next_file_, opened ahead once a slot's file ends
  // in the block it just took (not part of the state).
  std::optional<OpenSlot> spare_;
  int64_t next_file_ = 0;
  int64_t ptr_ = 0;
  int64_t last_file_ = 0;  // file of the record NextRecord() returned
  Status pending_;         // an error met after a stacked batch's records
};

Result<std::unique_ptr<IteratorNode>> TFRecordNode::MakeIterator(IteratorContext& ctx,
                                                                 const IteratorParams&) const {
  if (random_access()) {
    return std::unique_ptr<IteratorNode>(std::make_unique<IndexedTFRecordIterator>(ctx, *this));
  }
  return std::unique_ptr<IteratorNode>(std::make_unique<TFRecordIterator>(ctx, *this));
}

}  // namespace

Dataset MakeTFRecordDataset(std::vector<std::string> files, TFRecordDatasetOptions options) {
  if (files.empty()) {
    return Dataset::FromError(Status::InvalidArgument("TFRecordDataset: no files given"));
  }
  if (options.num_parallel_reads == kAutotune) {
    // Not the CPU count (tf.data's choice): the order follows this number
    // and must be the same on any machine. The reads ahead still run as
    // the CPU budget allows.
    options.num_parallel_reads =
        std::min<int64_t>(kAutotuneCycleLength, static_cast<int64_t>(files.size()));
  }
  if (options.num_parallel_reads < 1) {
    return Dataset::FromError(
        Status::InvalidArgument("TFRecordDataset: num_parallel_reads must be at least 1, got " +
                                std::to_string(options.num_parallel_reads)));
  }
  if (options.buffer_size < 1) {
    return Dataset::FromError(
        Status::InvalidArgument("TFRecordDataset: buffer_size must be positive, got " +
                                std::to_string(options.buffer_size)));
  }
  if (options.max_record_size < 0) {
    return Dataset::FromError(
        Status::InvalidArgument("TFRecordDataset: max_record_size must be >= 0, got " +
                                std::to_string(options.max_record_size)));
  }
  std::vector<IndexedTFRecordFile> indexed;
  int64_t cardinality = kUnknownCardinality;
  if (options.use_index &&
      (options.compression == Compression::kNone || options.compression == Compression::kAuto)) {
    IndexedTFRecordFileOptions io;
    io.verify_checksums = options.verify_checksums;
    io.max_record_size = static_cast<uint64_t>(options.max_record_size);
    int64_t total = 0;
    for (const std::string& f : files) {
      Result<IndexedTFRecordFile> file = IndexedTFRecordFile::Open(f, io);
      if (!file.ok()) {
        indexed.clear();
        break;
      }
      total += static_cast<int64_t>(file->num_records());
      indexed.push_back(std::move(file).value());
    }
    if (!indexed.empty()) cardinality = total;
  }
  return Dataset(std::make_shared<TFRecordNode>(std::move(files), std::move(options),
                                                std::move(indexed), cardinality));
}

}  // namespace sluice::pipeline_internal
