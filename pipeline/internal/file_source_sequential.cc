// The iterator of a FileSourceDataset read in order (file_source_node.h):
// the rotation of open readers.
#include <algorithm>
#include <deque>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "sluice/pipeline/internal/file_source_node.h"
#include "sluice/pipeline/internal/read_ahead.h"
#include "sluice/pipeline/internal/record_block.h"
#include "sluice/pipeline/internal/state.h"

namespace sluice::pipeline_internal {
namespace {

// Sequential reading: the round robin over open readers. With
// num_parallel_reads > 1 each open file's records are taken a block at a
// time (ReadRecordBlock), and taking a block starts reading the file's next
// one in a task (ReadAhead<RecordBlock>), so the open files are read in
// parallel.
class SequentialFileIterator : public IteratorNode {
 public:
  SequentialFileIterator(IteratorContext& ctx, const FileSourceNode& node)
      : IteratorNode(&ctx, ctx.CountersFor(&node)), node_(node) {
    if (node.source_options().num_parallel_reads > 1) read_ahead_.emplace(ctx, counters());
    Reset();
    for (OpenSlot& s : slots_) StartFirstBlock(s);
  }
  ~SequentialFileIterator() override { DropReadAhead(); }

  Status Save(StateWriter& w) override {
    w.Tag(node_.kind());
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
    SLUICE_RETURN_IF_ERROR(r.Tag(node_.kind()));
    SLUICE_ASSIGN_OR_RETURN(int64_t next_file, r.I64());
    SLUICE_ASSIGN_OR_RETURN(int64_t ptr, r.I64());
    SLUICE_ASSIGN_OR_RETURN(int64_t n, r.I64());
    const int64_t f = static_cast<int64_t>(node_.files().size());
    if (next_file < 0 || next_file > f || n < 0 ||
        n > std::min(f, node_.source_options().num_parallel_reads) || ptr < 0 ||
        (n > 0 && ptr >= n)) {
      return Status::DataLoss("iterator state: bad " + node_.kind() + " rotation");
    }
    std::vector<OpenSlot> slots(static_cast<size_t>(n));
    for (OpenSlot& s : slots) {
      SLUICE_ASSIGN_OR_RETURN(s.file, r.I64());
      SLUICE_ASSIGN_OR_RETURN(s.record, r.I64());
      if (s.file < 0 || s.file >= f || s.record < 0) {
        return Status::DataLoss("iterator state: bad " + node_.kind() + " slot");
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
    SLUICE_ASSIGN_OR_RETURN(Element e, node_.MakeElement(*rec, last_file_));
    return std::optional<Element>(std::move(e));
  }
  // Up to n records as one string tensor of views (see IndexedSequentialFileIterator).
  std::optional<NextResult> GetNextStacked(int64_t n) override {
    if (!node_.format().records_are_elements()) return std::nullopt;
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
      if (ctx()->cancelled()) return Status::Cancelled(node_.kind() + ": cancelled");
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

  // An open reader's read buffers (RecordReader::buffer_bytes: at least
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
    int64_t record = 0;                    // where to start when the reader is opened
    std::shared_ptr<RecordReader> reader;  // shared with its read-ahead's task
    BufferCharge charge;                   // for `reader`
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
      std::shared_ptr<RecordReader> reader) {
    const size_t bytes = BlockBytes();
    return read_ahead_->Start(static_cast<int64_t>(bytes),
                              [reader = std::move(reader), bytes, ctx = ctx()] {
                                return ReadRecordBlock(*reader, bytes, *ctx);
                              });
  }
  // A block's bytes of records (at least one record): buffer_size.
  size_t BlockBytes() const { return node_.buffer_bytes(); }
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
    for (next_file_ = 0; next_file_ < std::min(f, node_.source_options().num_parallel_reads);
         ++next_file_) {
      slots_.push_back({next_file_, 0, nullptr, {}});
    }
    ptr_ = 0;
  }

  Status OpenAt(OpenSlot& s) {
    const std::string& path = node_.files()[static_cast<size_t>(s.file)];
    SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<RecordReader> rd,
                            node_.format().Open(path, node_.buffer_bytes()));
    if (s.record > 0) {
      SLUICE_ASSIGN_OR_RETURN(bool sought, rd->Seek(static_cast<uint64_t>(s.record)));
      if (!sought) {
        // Read up to the record again. One that fails its checks on the way
        // was returned as an error before the save (and skipped, under
        // ignore_errors): pass over it as the reader allows (it goes on
        // after a record it could move past).
        while (rd->next_record_number() < static_cast<uint64_t>(s.record)) {
          if (ctx()->cancelled()) return Status::Cancelled(node_.kind() + ": cancelled");
          const uint64_t before = rd->next_record_number();
          Result<std::optional<Record>> next = rd->Next();
          if (!next.ok()) {
            if (rd->next_record_number() > before) continue;
            return next.status();
          }
          if (!next->has_value()) {
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
        BufferCharge(&ctx()->memory(), std::max<int64_t>(node_.source_options().buffer_size, 4096));
    return Status::OK();
  }

  const FileSourceNode& node_;
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

}  // namespace

std::unique_ptr<IteratorNode> MakeSequentialFileIterator(IteratorContext& ctx,
                                                         const FileSourceNode& node) {
  return std::make_unique<SequentialFileIterator>(ctx, node);
}

}  // namespace sluice::pipeline_internal
