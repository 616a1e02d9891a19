// The host backend of device/stream.h: a stream is a worker thread running a
// queue of closures in order; an event is a pair of counters (records
// issued, records passed) under a mutex.
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "sluice/device/internal/stream_backends.h"

namespace sluice::gpu_internal {

// Names from the public gpu API used below.
using gpu::CopyDirection;
using gpu::Event;
using gpu::Graph;
using gpu::Stream;
using gpu::StreamId;

namespace {

// Shared by a HostEvent and the queued closures that complete it, so an
// event may be destroyed while a record of it is pending.
struct EventState {
  std::mutex mu;
  std::condition_variable cv;
  uint64_t recorded = 0;   // tickets handed out by Record
  uint64_t completed = 0;  // highest ticket a stream has passed

  void Complete(uint64_t ticket) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (ticket > completed) completed = ticket;
    }
    cv.notify_all();
  }
  void WaitFor(uint64_t ticket) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return completed >= ticket; });
  }
};

class HostEvent final : public Event {
 public:
  Result<bool> Query() override {
    std::lock_guard<std::mutex> lock(state_->mu);
    return state_->completed >= state_->recorded;
  }
  Status Synchronize() override {
    uint64_t ticket;
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      ticket = state_->recorded;
    }
    state_->WaitFor(ticket);
    return Status::OK();
  }
  const Device& device() const override { return device_; }
  void* native_handle() const override { return nullptr; }

  const std::shared_ptr<EventState>& state() const { return state_; }

 private:
  const Device device_ = Device::Cpu();
  const std::shared_ptr<EventState> state_ = std::make_shared<EventState>();
};

// The host's Graph: the captured closures, run in order as one closure of
// the launching stream.
class HostGraph final : public Graph {
 public:
  explicit HostGraph(std::vector<std::function<void()>> nodes)
      : nodes_(std::make_shared<const std::vector<std::function<void()>>>(std::move(nodes))) {}
  Status Launch(Stream& stream) override {
    if (!stream.device().is_cpu()) {
      return Status::InvalidArgument("a graph captured on cpu:0 cannot launch on " +
                                     stream.device().ToString());
    }
    return stream.LaunchHostFunc([nodes = nodes_] {
      for (const std::function<void()>& f : *nodes) f();
    });
  }
  int64_t num_nodes() const override { return static_cast<int64_t>(nodes_->size()); }

 private:
  std::shared_ptr<const std::vector<std::function<void()>>> nodes_;
};

Status WhileCapturing(const char* call) {
  return Status::FailedPrecondition(std::string("cpu:0 stream: ") + call +
                                    " while capturing a graph");
}

class HostStream final : public Stream {
 public:
  HostStream() : worker_([this] { Run(); }) {}
  ~HostStream() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    work_cv_.notify_one();
    worker_.join();  // the worker runs everything queued before it stops
  }

  const Device& device() const override { return device_; }
  void* native_handle() const override { return nullptr; }
  StreamId id() const override { return reinterpret_cast<StreamId>(this); }

  Status CopyAsync(void* dst, const void* src, size_t bytes, CopyDirection) override {
    if (bytes > 0) Enqueue([dst, src, bytes] { std::memcpy(dst, src, bytes); });
    return Status::OK();
  }
  Status LaunchHostFunc(std::function<void()> fn) override {
    Enqueue(std::move(fn));
    return Status::OK();
  }
  Status Record(Event& event) override {
    if (capturing()) return WhileCapturing("Record");
    auto* host = dynamic_cast<HostEvent*>(&event);
    if (host == nullptr) {
      return Status::InvalidArgument("cpu:0 stream: cannot record an event of " +
                                     event.device().ToString());
    }
    std::shared_ptr<EventState> state = host->state();
    uint64_t ticket;
    {
      std::lock_guard<std::mutex> lock(state->mu);
      ticket = ++state->recorded;
    }
    Enqueue([state, ticket] { state->Complete(ticket); });
    return Status::OK();
  }
  Status WaitFor(const Event& event) override {
    if (capturing()) return WhileCapturing("WaitFor");
    if (auto* host = dynamic_cast<const HostEvent*>(&event)) {
      std::shared_ptr<EventState> state = host->state();
      uint64_t ticket;
      {
        std::lock_guard<std::mutex> lock(state->mu);
        ticket = state->recorded;
      }
      if (ticket > 0) Enqueue([state, ticket] { state->WaitFor(ticket); });
      return Status::OK();
    }
    return Status::InvalidArgument("cpu:0 stream: cannot wait for an event of " +
                                   event.device().ToString());
  }
  Status Synchronize() override {
    std::unique_lock<std::mutex> lock(mu_);
    if (capture_) return WhileCapturing("Synchronize");
    const uint64_t target = queued_;
    done_cv_.wait(lock, [&] { return done_ >= target; });
    return Status::OK();
  }

  Status BeginCapture() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (capture_) return Status::FailedPrecondition("cpu:0 stream: already capturing a graph");
    capture_.emplace();
    return Status::OK();
  }
  Result<std::unique_ptr<Graph>> EndCapture() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!capture_)
      return Status::FailedPrecondition("cpu:0 stream: EndCapture without BeginCapture");
    auto graph = std::make_unique<HostGraph>(std::move(*capture_));
    capture_.reset();
    return std::unique_ptr<Graph>(std::move(graph));
  }
  bool capturing() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return capture_.has_value();
  }

 private:
  void Enqueue(std::function<void()> fn) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (capture_) {
        capture_->push_back(std::move(fn));
        return;
      }
      queue_.push_back(std::move(fn));
      ++queued_;
    }
    work_cv_.notify_one();
  }

  void Run() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and everything ran
      std::function<void()> fn = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      fn();
      fn = nullptr;  // destroy captures outside the lock
      lock.lock();
      ++done_;
      done_cv_.notify_all();
    }
  }

  const Device device_ = Device::Cpu();
  mutable std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  std::deque<std::function<void()>> queue_;
  uint64_t queued_ = 0;  // closures ever queued
  uint64_t done_ = 0;    // closures that have run
  bool stopping_ = false;
  std::optional<std::vector<std::function<void()>>> capture_;  // while capturing
  std::thread worker_;  // last: starts after the members above exist
};

}  // namespace

std::unique_ptr<Stream> NewHostStream() { return std::make_unique<HostStream>(); }
std::unique_ptr<Event> NewHostEvent() { return std::make_unique<HostEvent>(); }

}  // namespace sluice::gpu_internal
