#include "convert_runner.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "progress.h"
#include "sluice/core/background.h"
#include "sluice/records/record_index.h"

namespace sluice::tools {
namespace {

// Waiting records (processed, not yet written) a run may hold.
constexpr uint64_t kMaxWaitingBytes = 256u << 20;

// One shard to write: its records arrive in any order and are written in
// order by whichever thread holds the `writing` baton.
struct ShardState {
  size_t index = 0;  // in the plan
  ShardRange range;
  std::string path;
  std::mutex mu;
  std::map<size_t, Result<RecordBytes>> waiting;  // by position in the shard
  size_t next = 0;                                // next position to write
  bool writing = false;
  std::optional<TFRecordWriter> writer;  // opened with its first item
};

class Conversion {
 public:
  explicit Conversion(const ConvertJob& job) : job_(job) {}
  ConvertReport Run();

 private:
  void Plan();
  void Worker();
  // Hands over item `pos` of shard `s`; writes whatever is now in order.
  void Deliver(ShardState& s, size_t pos, Result<RecordBytes> record);
  void WriteOne(ShardState& s, size_t pos, Result<RecordBytes>& record);
  Status OpenShard(ShardState& s);
  void CloseShard(ShardState& s);
  void Fail(const Status& status);
  void Release(uint64_t bytes);

  const ConvertJob& job_;
  ConvertReport report_;
  std::vector<std::unique_ptr<ShardState>> todo_;  // shards this run writes
  // Processing order: (index into todo_, position in that shard).
  std::vector<std::pair<uint32_t, uint32_t>> order_;
  size_t max_outstanding_ = 0;

  std::mutex mu_;  // guards the fields below up to `fatal_`
  std::condition_variable cv_;
  size_t next_ = 0;         // next entry of order_ to hand out
  size_t outstanding_ = 0;  // handed out, not yet written
  uint64_t waiting_bytes_ = 0;
  Status fatal_;

  std::atomic<bool> failed_{false};
  std::atomic<uint64_t> processed_{0}, converted_{0}, bytes_in_{0}, bytes_out_{0};
  std::atomic<size_t> shards_written_{0};
  std::mutex skipped_mu_;
  std::vector<std::pair<size_t, Status>> skipped_;
};

void Conversion::Plan() {
  const size_t n = job_.shards.size();
  std::vector<std::string> paths;
  for (size_t i = 0; i < n; ++i) {
    if (!job_.task.Owns(i)) continue;  // another task's: not even looked at
    ++report_.shards_owned;
    std::string path = ShardPath(job_.prefix, i, n, job_.compression);
    if (i < job_.keep.size() && job_.keep[i]) {
      ++report_.shards_resumed;
    } else {
      auto s = std::make_unique<ShardState>();
      s->index = i;
      s->range = job_.shards[i];
      s->path = path;
      todo_.push_back(std::move(s));
    }
    paths.push_back(std::move(path));
  }
  report_.stale_temporaries = RemoveStaleTemporaries(paths);
  // Fill up to `workers` shards at once, taking their items round-robin.
  const size_t lanes = std::max<size_t>(1, static_cast<size_t>(job_.workers));
  for (size_t g = 0; g < todo_.size(); g += lanes) {
    const size_t g_end = std::min(todo_.size(), g + lanes);
    size_t longest = 0;
    for (size_t t = g; t < g_end; ++t) longest = std::max(longest, todo_[t]->range.size());
    for (size_t k = 0; k < longest; ++k) {
      for (size_t t = g; t < g_end; ++t) {
        if (k < todo_[t]->range.size()) {
          order_.emplace_back(static_cast<uint32_t>(t), static_cast<uint32_t>(k));
        }
      }
    }
  }
  max_outstanding_ = 8 * lanes;
}

ConvertReport Conversion::Run() {
  const auto start = std::chrono::steady_clock::now();
  report_.shards_total = job_.shards.size();
  Plan();
  // Shards with no items get their (empty) file now; the others when their
  // last item is written.
  for (auto& s : todo_) {
    if (s->range.size() == 0) {
      Status st = OpenShard(*s);
      if (!st.ok()) {
        Fail(st);
        break;
      }
      CloseShard(*s);
    }
  }
  Progress progress(job_.progress_label, "images", order_.size(), job_.progress);
  RunWorkers(
      job_.workers, [this](int) { Worker(); },
      [&] {
        if (job_.interrupted && !report_.interrupted && job_.interrupted()) {
          report_.interrupted = true;
          Fail(Status::Cancelled("interrupted"));
        }
        progress.Update(processed_, bytes_in_);
      },
      std::chrono::milliseconds(100));
  progress.Done();

  report_.status = fatal_;
  if (report_.status.ok()) {
    for (const auto& s : todo_) {
      if (s->writer.has_value()) {
        report_.status = Status::Internal("shard " + s->path + " was left unfinished");
      }
    }
  }
  todo_.clear();  // drops unfinished writers: their temporary files go
  report_.shards_written = shards_written_;
  report_.items_processed = processed_;
  report_.items_converted = converted_;
  report_.bytes_in = bytes_in_;
  report_.bytes_out = bytes_out_;
  std::sort(skipped_.begin(), skipped_.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  report_.skipped = std::move(skipped_);
  report_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return std::move(report_);
}

void Conversion::Worker() {
  while (true) {
    size_t entry;
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [this] {
        return failed_ || next_ >= order_.size() ||
               (outstanding_ < max_outstanding_ && waiting_bytes_ < kMaxWaitingBytes);
      });
      if (failed_ || next_ >= order_.size()) break;
      entry = next_++;
      ++outstanding_;
    }
    auto [t, pos] = order_[entry];
    ShardState& s = *todo_[t];
    Result<RecordBytes> record = job_.process(s.range.begin + pos);
    if (record.ok()) {
      std::lock_guard<std::mutex> l(mu_);
      waiting_bytes_ += record->size();
    }
    Deliver(s, pos, std::move(record));
  }
}

void Conversion::Deliver(ShardState& s, size_t pos, Result<RecordBytes> record) {
  std::unique_lock<std::mutex> l(s.mu);
  s.waiting.emplace(pos, std::move(record));
  if (s.writing) return;  // the thread writing this shard will take it
  s.writing = true;
  while (true) {
    auto it = s.waiting.find(s.next);
    if (it == s.waiting.end()) break;
    Result<RecordBytes> r = std::move(it->second);
    s.waiting.erase(it);
    const size_t p = s.next++;
    l.unlock();
    WriteOne(s, p, r);
    l.lock();
  }
  s.writing = false;
  const bool complete = s.next == s.range.size();
  l.unlock();
  if (complete && !failed_) CloseShard(s);
}

void Conversion::WriteOne(ShardState& s, size_t pos, Result<RecordBytes>& record) {
  const size_t item = s.range.begin + pos;
  const uint64_t size = record.ok() ? record->size() : 0;
  if (!failed_) {
    Status st = s.writer.has_value() ? Status::OK() : OpenShard(s);
    if (st.ok() && record.ok()) st = s.writer->Write(record->view());
    if (!st.ok()) {
      Fail(st);
    } else if (record.ok()) {
      ++converted_;
      bytes_out_ += size + 16;  // payload plus TFRecord framing
      if (item < job_.item_bytes.size()) bytes_in_ += job_.item_bytes[item];
    } else {
      std::lock_guard<std::mutex> l(skipped_mu_);
      skipped_.emplace_back(item, record.status());
    }
    ++processed_;
  }
  Release(size);
}

Status Conversion::OpenShard(ShardState& s) {
  if (!job_.write_index) {
    // A .idx left from an earlier run would describe other bytes.
    std::error_code ec;
    std::filesystem::remove(RecordIndex::PathFor(s.path), ec);
  }
  TFRecordWriterOptions options;
  options.compression = job_.compression;
  options.write_index = job_.write_index;
  options.digest = true;  // the manifest records every shard's CRC-32C
  options.sync_on_close = job_.sync;
  Result<TFRecordWriter> w = TFRecordWriter::Open(s.path, options);
  if (!w.ok()) return w.status();
  s.writer.emplace(std::move(*w));
  return Status::OK();
}

void Conversion::CloseShard(ShardState& s) {
  Status st = s.writer->Close();
  const ShardWritten written{s.path, s.writer->records_written(), s.writer->file_bytes(),
                             s.writer->file_crc32c()};
  s.writer.reset();
  if (st.ok() && job_.on_shard_done) st = job_.on_shard_done(s.index, written);
  if (!st.ok()) {
    Fail(st);
    return;
  }
  ++shards_written_;
}

void Conversion::Fail(const Status& status) {
  std::lock_guard<std::mutex> l(mu_);
  if (fatal_.ok()) fatal_ = status;
  failed_ = true;
  cv_.notify_all();
}

void Conversion::Release(uint64_t bytes) {
  std::lock_guard<std::mutex> l(mu_);
  --outstanding_;
  waiting_bytes_ -= bytes;
  cv_.notify_all();
}

}  // namespace

ConvertReport RunConversion(const ConvertJob& job) { return Conversion(job).Run(); }

int AvailableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace sluice::tools
