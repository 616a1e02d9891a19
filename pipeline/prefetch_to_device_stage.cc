// prefetch_to_device(device, buffer_size): the pipeline's last stage on a
// GPU machine (tf.data.experimental.prefetch_to_device), as a Dataset stage.
//
// A producer task in the pipeline's arena (one at a time, so order is
// kept) pulls host elements from the input, stages each into pinned host
// memory and queues its host-to-device copies on the stage's copy stream
// (BatchStager), while fewer than `buffer_size` elements wait for next().
// next() hands out the oldest once its copies have landed (a host wait on
// its event, normally complete by then: the copy of element N+1 overlaps
// the consumer's work on N). Its tensors' bytes are device memory
// (Tensor::device()); on cpu:0 (the device runtime's host backend) they are
// host memory, which is how the stage runs in every build.
//
// Save/restore: each buffered element keeps its host copy until it is
// handed out, so a save writes the host elements not yet delivered (and the
// input's state after them); a restore stages them again before reading on.
// What was delivered is not delivered again; what was in flight is
// replayed. Errors of the input or of staging arrive in order and do not
// end the stage; the input's end does.
#include <fmt/format.h>

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "sluice/device/caching_allocator.h"
#include "sluice/device/pinned_host_pool.h"
#include "sluice/device/runtime.h"
#include "sluice/device/stream.h"
#include "sluice/pipeline/internal/batch_stager.h"
#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/node.h"
#include "sluice/pipeline/internal/stages.h"
#include "sluice/pipeline/internal/state.h"

namespace sluice::pipeline_internal {
namespace {

class PrefetchToDeviceIterator final : public IteratorNode {
 public:
  PrefetchToDeviceIterator(IteratorContext* ctx, StageCounters* counters,
                           std::unique_ptr<IteratorNode> input, std::string name,
                           std::unique_ptr<gpu::Stream> own_stream, gpu::Stream& stream,
                           gpu::CachingAllocator& allocator, gpu::PinnedHostPool staging,
                           int64_t depth)
      : IteratorNode(ctx, counters),
        input_(std::move(input)),
        name_(std::move(name)),
        own_stream_(std::move(own_stream)),
        depth_(depth),
        stager_(stream, allocator, std::move(staging), depth) {}

  ~PrefetchToDeviceIterator() override {
    std::unique_lock<std::mutex> l(mu_);
    stopping_ = true;
    cv_.wait(l, [&] { return !running_; });
    ReleaseLocked();
    // stager_ (destroyed next) waits for the copies still in flight.
  }

  Status Save(StateWriter& w) override {
    std::unique_lock<std::mutex> l(mu_);
    Quiesce(l);
    w.Tag("prefetch_to_device");
    w.Bool(delivered_end_);
    w.Bool(input_ended_);
    w.U64(static_cast<uint64_t>(replay_.size() + ready_.size()));
    Status s;
    auto put = [&](const Item& item) {
      w.U64(static_cast<uint64_t>(item.kind));
      if (item.kind == Kind::kError) w.Stat(item.error);
      if (item.kind == Kind::kElement && s.ok()) s = w.Elem(item.host);
    };
    for (const Item& item : ready_) put(item);  // older than replay_'s
    for (const Item& item : replay_) put(item);
    if (s.ok()) s = input_->Save(w);
    paused_ = false;
    LaunchLocked();
    return s;
  }

  Status Restore(StateReader& r) override {
    std::unique_lock<std::mutex> l(mu_);
    Quiesce(l);
    ReleaseLocked();
    Status s = [&]() -> Status {
      SLUICE_RETURN_IF_ERROR(r.Tag("prefetch_to_device"));
      SLUICE_ASSIGN_OR_RETURN(delivered_end_, r.Bool());
      SLUICE_ASSIGN_OR_RETURN(input_ended_, r.Bool());
      SLUICE_ASSIGN_OR_RETURN(uint64_t n, r.U64());
      if (n > static_cast<uint64_t>(depth_) + 1) {
        return Status::DataLoss(fmt::format("iterator state: stage '{}' holds {} elements, "
                                            "more than its buffer of {}",
                                            name_, n, depth_));
      }
      for (uint64_t i = 0; i < n; ++i) {
        SLUICE_ASSIGN_OR_RETURN(uint64_t kind, r.U64());
        Item item;
        if (kind == static_cast<uint64_t>(Kind::kElement)) {
          item.kind = Kind::kElement;
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
    }();
    paused_ = false;
    LaunchLocked();
    return s;
  }

 protected:
  NextResult GetNext() override {
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
      case Kind::kEnd:
        return std::optional<Element>();
      case Kind::kError:
        return item.error;
      case Kind::kElement:
        break;
    }
    // Normally complete: the copies were queued `buffer_size` elements ago.
    SLUICE_RETURN_IF_ERROR(item.staged->Wait().WithContext(name_));
    std::vector<Tensor> tensors;
    tensors.reserve(item.staged->size());
    for (const DeviceTensor& t : item.staged->components()) tensors.push_back(t.storage());
    return std::optional<Element>(Element(std::move(tensors), item.host.shared_names()));
  }

 private:
  enum class Kind : uint8_t { kElement = 0, kError = 1, kEnd = 2 };
  struct Item {
    Kind kind = Kind::kElement;
    Element host;  // kept until handed out, for Save
    std::optional<gpu::DeviceElement> staged;
    Status error;
    int64_t charged = 0;  // host bytes charged to the RAM budget
  };

  // Stops the producer (it finishes the element it is on).
  void Quiesce(std::unique_lock<std::mutex>& l) {
    paused_ = true;
    cv_.wait(l, [&] { return !running_; });
  }

  void ReleaseLocked() {
    for (const Item& item : ready_) ctx()->memory().Release(item.charged);
    for (const Item& item : replay_) ctx()->memory().Release(item.charged);
    ready_.clear();
    replay_.clear();
  }

  bool ShouldProduceLocked() const {
    if (stopping_ || paused_ || ctx()->cancelled()) return false;
    if (static_cast<int64_t>(ready_.size()) >= depth_) return false;
    if (replay_.empty() && input_ended_) return false;
    // Read-ahead within the RAM budget; the next element is always made.
    return ready_.empty() || ctx()->memory().used() < ctx()->memory().limit();
  }

  void LaunchLocked() {
    if (running_ || !ShouldProduceLocked()) return;
    running_ = true;
    ctx()->Submit([this] { Produce(); });
  }

  // The producer: one task at a time, in the arena.
  void Produce() {
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
        NextResult next = input_->Next();
        if (!next.ok()) {
          item.kind = Kind::kError;
          item.error = next.status();
        } else if (!next->has_value()) {
          item.kind = Kind::kEnd;
        } else {
          item.host = std::move(**next);
        }
      }
      if (item.kind == Kind::kElement) {
        Result<gpu::DeviceElement> staged = stager_.Stage(item.host, counters_);
        if (staged.ok()) {
          item.staged = std::move(staged).value();
          item.charged = ElementBytes(item.host);
          ctx()->memory().Charge(item.charged);
        } else {
          item.kind = Kind::kError;
          item.error = staged.status().WithContext(name_);
          item.host = Element();
        }
      }
      l.lock();
      if (item.kind == Kind::kEnd) input_ended_ = true;
      ready_.push_back(std::move(item));
      cv_.notify_all();
    }
    running_ = false;
    cv_.notify_all();
  }

  const std::unique_ptr<IteratorNode> input_;  // the producer's (and Save/Restore's, quiesced)
  const std::string name_;
  const std::unique_ptr<gpu::Stream> own_stream_;  // null when the stream is borrowed
  const int64_t depth_;

  std::mutex mu_;
  std::condition_variable cv_;  // ready_ grew, or the producer stopped
  std::deque<Item> ready_;      // staged (or errors, the end), oldest first
  std::deque<Item> replay_;     // restored, to stage before reading the input
  bool running_ = false;        // a Produce task is submitted or running
  bool paused_ = false;         // Save/Restore hold the producer
  bool stopping_ = false;       // the destructor
  bool input_ended_ = false;    // the end is in ready_ or replay_ (or was handed out)
  bool delivered_end_ = false;  // next() returned the end

  // The producer's alone. Destroyed before the stream it copies on.
  gpu_internal::StagerCounters counters_;
  gpu_internal::BatchStager stager_;
};

class PrefetchToDeviceNode : public DatasetNode {
 public:
  PrefetchToDeviceNode(const Dataset& input, Device device, int64_t buffer_size,
                       PrefetchToDeviceOptions o)
      : DatasetNode("prefetch_to_device", o.name, {input.node()}, input.element_spec(),
                    input.cardinality()),
        device_(device),
        buffer_size_(buffer_size),
        options_(std::move(o)) {}

  std::string Describe() const override {
    return fmt::format("{}({}, {})", name(), device_.ToString(), buffer_size_);
  }

  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams& params) const override {
    SLUICE_ASSIGN_OR_RETURN(const gpu_internal::DeviceRuntime* runtime,
                            gpu_internal::GetDeviceRuntime(device_));
    std::unique_ptr<gpu::Stream> own_stream;
    gpu::Stream* stream = options_.stream;
    if (stream == nullptr) {
      SLUICE_ASSIGN_OR_RETURN(own_stream, gpu::NewStream(device_));
      stream = own_stream.get();
    }
    gpu::CachingAllocator* allocator =
        options_.device_allocator != nullptr ? options_.device_allocator : runtime->allocator;
    SLUICE_ASSIGN_OR_RETURN(auto input, MakeIteratorOf(*inputs()[0], ctx, params));
    return std::unique_ptr<IteratorNode>(std::make_unique<PrefetchToDeviceIterator>(
        &ctx, ctx.CountersFor(this), std::move(input), name(), std::move(own_stream), *stream,
        *allocator, runtime->staging, buffer_size_));
  }

 private:
  const Device device_;
  const int64_t buffer_size_;
  const PrefetchToDeviceOptions options_;
};

}  // namespace

Dataset MakePrefetchToDevice(const Dataset& input, const Device& device, int64_t buffer_size,
                             PrefetchToDeviceOptions options) {
  const std::string where = fmt::format("prefetch_to_device({})", device.ToString());
  if (buffer_size == kAutotune) buffer_size = 2;
  if (buffer_size < 1) {
    return Dataset::FromError(Status::InvalidArgument(fmt::format(
        "{}: buffer_size must be >= 1 or kAutotune, got {}", where, buffer_size)));
  }
  if (options.stream != nullptr && !(options.stream->device() == device)) {
    return Dataset::FromError(Status::InvalidArgument(
        fmt::format("{}: the given stream is on {}", where, options.stream->device().ToString())));
  }
  if (Result<const gpu_internal::DeviceRuntime*> runtime = gpu_internal::GetDeviceRuntime(device);
      !runtime.ok()) {
    return Dataset::FromError(runtime.status().WithContext(where));
  }
  const ElementSpec& spec = input.element_spec();
  for (size_t i = 0; i < spec.size(); ++i) {
    if (spec.components()[i].dtype == DType::kString) {
      return Dataset::FromError(Status::InvalidArgument(fmt::format(
          "{}: component {} is a string tensor, which stays on the host (select the numeric "
          "components with a map first)",
          where, i)));
    }
  }
  return Dataset(
      std::make_shared<PrefetchToDeviceNode>(input, device, buffer_size, std::move(options)));
}

}  // namespace sluice::pipeline_internal
