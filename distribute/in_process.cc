// InProcessGroup: collectives among threads through one shared rendezvous.
//
// A collective goes through three phases under the group's lock. Arrive:
// each rank registers its buffers; the first one's call is the reference the
// others must match; only here can a collective fail (a mismatch, a timeout,
// an abort), and a failure wakes every waiting rank. Work: once all have
// arrived, each rank does its part without the lock (copies out of the
// others' buffers; an all-reduce first reduces its own slice of the buffer
// over every rank into shared scratch, then, once all slices are done,
// copies the result out). Leave: a rank returns only when every rank has
// finished its work, since others may still read its buffers; the last to
// leave opens the next collective.
#include "sluice/distribute/in_process.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>

namespace sluice {
namespace {

struct Call {
  std::string op;  // "all-reduce", "broadcast", ...
  size_t bytes = 0;
  DType dtype = DType::kUInt8;
  ReduceOp reduce = ReduceOp::kSum;
  int root = -1;

  bool operator==(const Call& o) const {
    return op == o.op && bytes == o.bytes && dtype == o.dtype && reduce == o.reduce &&
           root == o.root;
  }
  std::string ToString() const {
    std::string s = op + " of " + std::to_string(bytes) + " bytes";
    if (op == "all-reduce") {
      s += " (" + std::string(DTypeName(dtype)) + " " + std::string(ReduceOpName(reduce)) + ")";
    }
    if (root >= 0) s += " from rank " + std::to_string(root);
    return s;
  }
};

class Group;

class InProcessCommunicator : public Communicator {
 public:
  InProcessCommunicator(std::shared_ptr<Group> group, int rank, int size)
      : Communicator(rank, size), group_(std::move(group)) {}

  std::string Describe() const override {
    return "in-process, rank " + std::to_string(rank()) + " of " + std::to_string(size());
  }
  Status Barrier() override;
  Status Broadcast(void* data, size_t bytes, int root) override;
  Status AllGather(const void* in, void* out, size_t bytes) override;
  Status AllReduce(void* data, size_t count, DType dtype, ReduceOp op) override;
  Result<std::unique_ptr<Communicator>> Duplicate() override;
  void Abort(const Status& why) override;
  using Communicator::AllReduce;
  using Communicator::Broadcast;

 private:
  friend class Group;
  std::shared_ptr<Group> group_;
  std::mutex call_mu_;  // one collective at a time from this rank
};

class Group : public std::enable_shared_from_this<Group> {
 public:
  Group(int size, std::chrono::milliseconds timeout)
      : size_(size), timeout_(timeout), in_(size), out_(size), here_(size) {}

  // Runs one collective for `rank`: `work(rank)` once all have arrived, then
  // `finish(rank)` once every rank's work is done (if given).
  Status Run(int rank, const Call& call, const void* in, void* out,
             const std::function<void(int)>& work, const std::function<void(int)>& finish) {
    std::unique_lock<std::mutex> l(mu_);
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    // The previous collective's ranks may still be leaving.
    cv_.wait(l, [&] { return phase_ == Phase::kArrive || !failed_.ok(); });
    if (!failed_.ok()) return failed_;
    if (arrived_ == 0) {
      call_ = call;
      first_ = rank;
    } else if (!(call == call_)) {
      FailLocked(Status::Internal(
          "collective #" + std::to_string(seq_) + ": rank " + std::to_string(rank) + " called " +
          call.ToString() + " but rank " + std::to_string(first_) + " called " + call_.ToString() +
          "; every rank must make the same calls in the same order"));
      return failed_;
    }
    in_[static_cast<size_t>(rank)] = in;
    out_[static_cast<size_t>(rank)] = out;
    here_[static_cast<size_t>(rank)] = true;
    if (++arrived_ == size_) {
      // Scratch for an all-reduce's result, sized before anyone works.
      if (call_.op == "all-reduce" && scratch_.size() < call_.bytes) scratch_.resize(call_.bytes);
      phase_ = Phase::kWork;
      cv_.notify_all();
    } else {
      cv_.wait_until(l, deadline, [&] { return phase_ != Phase::kArrive || !failed_.ok(); });
      // Once every rank has arrived, the collective completes even if the
      // group failed meanwhile: the others are already working on it.
      if (phase_ == Phase::kArrive) {
        if (failed_.ok()) {  // the deadline passed
          std::string missing;
          for (int r = 0; r < size_; ++r) {
            if (!here_[static_cast<size_t>(r)])
              missing += (missing.empty() ? "" : ", ") + std::to_string(r);
          }
          FailLocked(Status::Unavailable(
              "collective #" + std::to_string(seq_) + " (" + call.ToString() + "): rank(s) " +
              missing + " did not arrive within " + std::to_string(timeout_.count()) + " ms"));
        }
        here_[static_cast<size_t>(rank)] = false;
        --arrived_;
        return failed_;
      }
    }
    // Every rank is here: the collective now completes whatever happens.
    l.unlock();
    if (work) work(rank);
    l.lock();
    if (++worked_ == size_) cv_.notify_all();
    cv_.wait(l, [&] { return worked_ == size_; });
    if (finish) {
      l.unlock();
      finish(rank);
      l.lock();
    }
    if (++finished_ == size_) cv_.notify_all();
    cv_.wait(l, [&] { return finished_ == size_; });
    if (++left_ == size_) {
      arrived_ = worked_ = finished_ = left_ = 0;
      std::fill(here_.begin(), here_.end(), false);
      ++seq_;
      phase_ = Phase::kArrive;
      cv_.notify_all();
    }
    return Status::OK();
  }

  void Fail(const Status& s) {
    std::lock_guard<std::mutex> l(mu_);
    FailLocked(s);
  }

  const void* in(int r) const { return in_[static_cast<size_t>(r)]; }
  void* out(int r) const { return out_[static_cast<size_t>(r)]; }
  std::vector<uint8_t>& scratch() { return scratch_; }
  int size() const { return size_; }
  std::chrono::milliseconds timeout() const { return timeout_; }
  // Set by Duplicate's work: the new group.
  std::shared_ptr<Group> dup;

 private:
  enum class Phase { kArrive, kWork };
  void FailLocked(const Status& s) {
    if (failed_.ok()) failed_ = s;
    cv_.notify_all();
  }

  const int size_;
  const std::chrono::milliseconds timeout_;
  std::mutex mu_;
  std::condition_variable cv_;
  Phase phase_ = Phase::kArrive;
  uint64_t seq_ = 0;
  int arrived_ = 0, worked_ = 0, finished_ = 0, left_ = 0;
  Call call_;
  int first_ = 0;
  std::vector<const void*> in_;
  std::vector<void*> out_;
  std::vector<bool> here_;
  std::vector<uint8_t> scratch_;
  Status failed_;
};

Status InProcessCommunicator::Barrier() {
  std::lock_guard<std::mutex> l(call_mu_);
  return group_->Run(rank(), {"barrier"}, nullptr, nullptr, nullptr, nullptr);
}

Status InProcessCommunicator::Broadcast(void* data, size_t bytes, int root) {
  if (root < 0 || root >= size()) {
    return Status::InvalidArgument("broadcast: root " + std::to_string(root) + " outside [0, " +
                                   std::to_string(size()) + ")");
  }
  std::lock_guard<std::mutex> l(call_mu_);
  Group& g = *group_;
  return g.Run(
      rank(), {"broadcast", bytes, DType::kUInt8, ReduceOp::kSum, root}, data, data,
      [&g, bytes, root](int r) {
        if (r != root && bytes > 0) std::memcpy(g.out(r), g.in(root), bytes);
      },
      nullptr);
}

Status InProcessCommunicator::AllGather(const void* in, void* out, size_t bytes) {
  std::lock_guard<std::mutex> l(call_mu_);
  Group& g = *group_;
  return g.Run(
      rank(), {"all-gather", bytes}, in, out,
      [&g, bytes](int r) {
        if (bytes == 0) return;
        for (int k = 0; k < g.size(); ++k) {
          std::memcpy(static_cast<char*>(g.out(r)) + static_cast<size_t>(k) * bytes, g.in(k),
                      bytes);
        }
      },
      nullptr);
}

Status InProcessCommunicator::AllReduce(void* data, size_t count, DType dtype, ReduceOp op) {
  SLUICE_RETURN_IF_ERROR(CheckReduce(dtype, op));
  std::lock_guard<std::mutex> l(call_mu_);
  Group& g = *group_;
  const size_t esize = DTypeSize(dtype);
  const size_t bytes = count * esize;
  // Rank r reduces values [lo, hi) of every rank into scratch, in rank order.
  auto slice = [&g, count](int r) {
    const size_t per = (count + static_cast<size_t>(g.size()) - 1) / static_cast<size_t>(g.size());
    const size_t lo = std::min(count, per * static_cast<size_t>(r));
    return std::make_pair(lo, std::min(count, lo + per));
  };
  return g.Run(
      rank(), {"all-reduce", bytes, dtype, op}, data, data,
      [&](int r) {
        const auto [lo, hi] = slice(r);
        if (lo == hi) return;
        uint8_t* s = g.scratch().data() + lo * esize;
        std::memcpy(s, static_cast<const uint8_t*>(g.in(0)) + lo * esize, (hi - lo) * esize);
        for (int k = 1; k < g.size(); ++k) {
          Accumulate(s, static_cast<const uint8_t*>(g.in(k)) + lo * esize, hi - lo, dtype, op);
        }
        if (op == ReduceOp::kMean) Divide(s, hi - lo, dtype, g.size());
      },
      [&g, bytes](int r) {
        if (bytes > 0) std::memcpy(g.out(r), g.scratch().data(), bytes);
      });
}

Result<std::unique_ptr<Communicator>> InProcessCommunicator::Duplicate() {
  std::lock_guard<std::mutex> l(call_mu_);
  Group& g = *group_;
  std::shared_ptr<Group> fresh;
  SLUICE_RETURN_IF_ERROR(g.Run(
      rank(), {"duplicate"}, nullptr, nullptr,
      [&g](int r) {
        if (r == 0) g.dup = std::make_shared<Group>(g.size(), g.timeout());
      },
      [&g, &fresh](int) { fresh = g.dup; }));
  return std::unique_ptr<Communicator>(
      std::make_unique<InProcessCommunicator>(std::move(fresh), rank(), size()));
}

void InProcessCommunicator::Abort(const Status& why) {
  group_->Fail(Status::Unavailable("rank " + std::to_string(rank()) + " of " +
                                   std::to_string(size()) + " failed: " + why.ToString()));
}

}  // namespace

std::vector<std::unique_ptr<Communicator>> InProcessGroup::Create(int size,
                                                                  CommunicatorOptions options) {
  size = std::max(size, 1);
  const auto timeout = options.timeout.count() > 0 ? options.timeout : DefaultCollectiveTimeout();
  auto group = std::make_shared<Group>(size, timeout);
  std::vector<std::unique_ptr<Communicator>> out;
  for (int r = 0; r < size; ++r)
    out.push_back(std::make_unique<InProcessCommunicator>(group, r, size));
  return out;
}

}  // namespace sluice
