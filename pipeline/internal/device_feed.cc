// DeviceFeedIterator (device_feed.h).
#include "sluice/pipeline/internal/device_feed.h"

#include <fmt/format.h>

#include <utility>
#include <vector>

#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/state.h"

namespace sluice::pipeline_internal {

DeviceFeedIterator::DeviceFeedIterator(IteratorContext* ctx, StageCounters* counters,
                                       std::unique_ptr<IteratorNode> input, std::string kind,
                                       std::string name, int64_t depth)
    : IteratorNode(ctx, counters),
      input_(std::move(input)),
      kind_(std::move(kind)),
      name_(std::move(name)),
      depth_(depth) {}

DeviceFeedIterator::~DeviceFeedIterator() { Stop(); }

void DeviceFeedIterator::Stop() {
  std::unique_lock<std::mutex> l(mu_);
  stopping_ = true;
  cv_.wait(l, [&] { return !running_; });
  ReleaseLocked();
}

Status DeviceFeedIterator::Save(StateWriter& w) {
  std::unique_lock<std::mutex> l(mu_);
  Quiesce(l);
  w.Tag(kind_);
  w.Bool(delivered_end_);
  w.Bool(input_ended_);
  w.U64(read_);
  w.U64(static_cast<uint64_t>(replay_.size() + ready_.size()));
  Status s;
  auto put = [&](const Item& item) {
    w.U64(static_cast<uint64_t>(item.kind));
    if (item.kind == Kind::kError) w.Stat(item.error);
    if (item.kind == Kind::kElement) {
      w.U64(item.index);
      if (s.ok()) s = w.Elem(item.host);
    }
  };
  for (const Item& item : ready_) put(item);  // older than replay_'s
  for (const Item& item : replay_) put(item);
  if (s.ok()) s = input_->Save(w);
  paused_ = false;
  LaunchLocked();
  return s;
}

Status DeviceFeedIterator::Restore(StateReader& r) {
  std::unique_lock<std::mutex> l(mu_);
  Quiesce(l);
  ReleaseLocked();
  Status s = RestoreLocked(r);
  paused_ = false;
  LaunchLocked();
  return s;
}

Status DeviceFeedIterator::RestoreLocked(StateReader& r) {
  SLUICE_RETURN_IF_ERROR(r.Tag(kind_));
  SLUICE_ASSIGN_OR_RETURN(delivered_end_, r.Bool());
  SLUICE_ASSIGN_OR_RETURN(input_ended_, r.Bool());
  SLUICE_ASSIGN_OR_RETURN(read_, r.U64());
  SLUICE_ASSIGN_OR_RETURN(uint64_t n, r.U64());
  if (n > static_cast<uint64_t>(depth_) + 1) {
    return Status::DataLoss(
        fmt::format("iterator state: stage '{}' holds {} elements, more than its buffer of {}",
                    name_, n, depth_));
  }
  for (uint64_t i = 0; i < n; ++i) {
    SLUICE_ASSIGN_OR_RETURN(uint64_t kind, r.U64());
    Item item;
    if (kind == static_cast<uint64_t>(Kind::kElement)) {
      item.kind = Kind::kElement;
      SLUICE_ASSIGN_OR_RETURN(item.index, r.U64());
      if (item.index >= read_) {
        return Status::DataLoss(
            fmt::format("iterator state: stage '{}': element {} buffered, but only {} were read",
                        name_, item.index, read_));
      }
      SLUICE_ASSIGN_OR_RETURN(item.host, r.Elem());
      item.charged = ElementBytes(item.host);
      ctx()->memory().Charge(item.charged);
    } else if (kind == static_cast<uint64_t>(Kind::kError)) {
      item.kind = Kind::kError;
      SLUICE_RETURN_IF_ERROR(r.Stat(&item.error));
      if (item.error.ok()) return Status::DataLoss("iterator state: an OK error slot");
    } else if (kind == static_cast<uint64_t>(Kind::kEnd)) {
      item.kind = Kind::kEnd;
    } else {
      return Status::DataLoss(
          fmt::format("iterator state: stage '{}': unknown slot kind {}", name_, kind));
    }
    replay_.push_back(std::move(item));
  }
  return input_->Restore(r);
}

NextResult DeviceFeedIterator::GetNext() {
  std::unique_lock<std::mutex> l(mu_);
  if (delivered_end_) return std::optional<Element>();
  LaunchLocked();
  cv_.wait(l, [&] { return !ready_.empty() || (!running_ && ctx()->cancelled()); });
  if (ready_.empty()) return Status::Cancelled(name_ + ": the pipeline was cancelled");
  Item item = std::move(ready_.front());
  ready_.pop_front();
  ctx()->memory().Release(item.charged);
  if (item.kind == Kind::kEnd) delivered_end_ = true;
  LaunchLocked();
  l.unlock();
  switch (item.kind) {
    case Kind::kEnd: return std::optional<Element>();
    case Kind::kError: return item.error;
    case Kind::kElement: break;
  }
  // Normally complete: its work was queued `depth` elements ago.
  SLUICE_RETURN_IF_ERROR(item.made->Wait().WithContext(name_));
  std::vector<Tensor> tensors;
  tensors.reserve(item.made->size());
  for (const DeviceTensor& t : item.made->components()) tensors.push_back(t.storage());
  return std::optional<Element>(Element(std::move(tensors), item.host.shared_names()));
}

// Stops the producer (it finishes the element it is on).
void DeviceFeedIterator::Quiesce(std::unique_lock<std::mutex>& l) {
  paused_ = true;
  cv_.wait(l, [&] { return !running_; });
}

void DeviceFeedIterator::ReleaseLocked() {
  for (const Item& item : ready_) ctx()->memory().Release(item.charged);
  for (const Item& item : replay_) ctx()->memory().Release(item.charged);
  ready_.clear();
  replay_.clear();
}

bool DeviceFeedIterator::ShouldProduceLocked() const {
  if (stopping_ || paused_ || ctx()->cancelled()) return false;
  if (static_cast<int64_t>(ready_.size()) >= depth_) return false;
  if (replay_.empty() && input_ended_) return false;
  // Read-ahead within the RAM budget; the next element is always made.
  return ready_.empty() || ctx()->memory().used() < ctx()->memory().limit();
}

void DeviceFeedIterator::LaunchLocked() {
  if (running_ || !ShouldProduceLocked()) return;
  running_ = true;
  ctx()->Submit([this] { Produce(); });
}

// The producer: one task at a time, in the arena.
void DeviceFeedIterator::Produce() {
  std::unique_lock<std::mutex> l(mu_);
  while (ShouldProduceLocked()) {
    Item item;
    if (!replay_.empty()) {
      item = std::move(replay_.front());
      replay_.pop_front();
      ctx()->memory().Release(item.charged);
      item.charged = 0;
      l.unlock();
    } else {
      l.unlock();
      const int64_t t0 = NowNs();
      NextResult next = input_->Next();
      InputTime(NowNs() - t0);
      if (!next.ok()) {
        item.kind = Kind::kError;
        item.error = next.status();
      } else if (!next->has_value()) {
        item.kind = Kind::kEnd;
      } else {
        item.host = std::move(**next);
        item.index = read_++;  // Save reads it quiesced
      }
    }
    bool drop = false;
    if (item.kind == Kind::kElement) {
      Result<std::optional<gpu::DeviceElement>> made = MakeOnDevice(item.host, item.index);
      if (!made.ok()) {
        item.kind = Kind::kError;
        item.error = made.status().WithContext(name_);
        item.host = Element();
      } else if (!made->has_value()) {
        drop = true;
      } else {
        item.made = *std::move(made);
        item.charged = ElementBytes(item.host);
        ctx()->memory().Charge(item.charged);
      }
    }
    l.lock();
    if (drop) continue;
    if (item.kind == Kind::kEnd) input_ended_ = true;
    ready_.push_back(std::move(item));
    cv_.notify_all();
  }
  running_ = false;
  cv_.notify_all();
}

}  // namespace sluice::pipeline_internal
