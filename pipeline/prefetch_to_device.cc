#include "sluice/pipeline/prefetch_to_device.h"

#include <fmt/format.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <utility>

#include "sluice/core/background.h"
#include "sluice/device/allocator_stats.h"
#include "sluice/device/runtime.h"
#include "sluice/pipeline/internal/batch_stager.h"

namespace sluice::gpu {

DeviceElement::DeviceElement(std::vector<DeviceTensor> components,
                             std::shared_ptr<const std::vector<std::string>> names,
                             std::shared_ptr<Event> ready)
    : components_(std::move(components)), names_(std::move(names)), ready_(std::move(ready)) {
  if (names_ == nullptr || names_->size() != components_.size()) {
    auto padded = std::make_shared<std::vector<std::string>>(components_.size());
    for (size_t i = 0; names_ != nullptr && i < names_->size() && i < padded->size(); ++i) {
      (*padded)[i] = (*names_)[i];
    }
    names_ = std::move(padded);
  }
}

Status DeviceElement::RecordUse(Stream& stream) const {
  if (stream.device() != ready_->device()) {
    return Status::InvalidArgument(
        fmt::format("DeviceElement::RecordUse: a batch on {} cannot be used on a {} stream",
                    ready_->device().ToString(), stream.device().ToString()));
  }
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Event> event, NewEvent(stream.device()));
  SLUICE_RETURN_IF_ERROR(stream.Record(*event));
  const std::shared_ptr<Event> shared(std::move(event));
  for (const DeviceTensor& t : components_) gpu::RecordUse(t, shared);
  return Status::OK();
}

const DeviceTensor* DeviceElement::find(std::string_view name) const {
  for (size_t i = 0; i < components_.size(); ++i) {
    if ((*names_)[i] == name) return &components_[i];
  }
  return nullptr;
}

std::string PrefetchToDeviceStats::ToString() const {
  return fmt::format(
      "{} batches, {} copies, {}; consumer waited {} times ({:.1f} ms); staging waited {} times "
      "({:.1f} ms); {} buffered",
      batches, copies, FormatBytes(bytes_copied), consumer_waits, consumer_wait_ns / 1e6,
      staging_waits, staging_wait_ns / 1e6, buffered);
}

// The worker pulls from the input and stages while fewer than `depth`
// batches wait for Next(); the terminal item (end or error) goes last.
class DeviceIterator::Impl {
 public:
  Impl(Iterator input, Device device, std::unique_ptr<Stream> own_stream, Stream& stream,
       CachingAllocator& allocator, PinnedHostPool staging, int64_t depth,
       std::function<Result<Element>(Element)> transform)
      : input_(std::move(input)),
        transform_(std::move(transform)),
        device_(device),
        own_stream_(std::move(own_stream)),
        depth_(depth),
        stager_(stream, allocator, std::move(staging), depth) {
    worker_.Schedule([this] { Run(); });
  }

  ~Impl() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      cancelled_ = true;
    }
    cv_.notify_all();
    worker_.Drain();
  }

  Result<std::optional<DeviceElement>> Next() {
    std::unique_lock<std::mutex> lock(mu_);
    if (finished_) return final_;
    if (ready_.empty()) {
      const auto start = std::chrono::steady_clock::now();
      stats_.consumer_waits++;
      cv_.wait(lock, [&] { return !ready_.empty(); });
      stats_.consumer_wait_ns += Since(start);
    }
    Result<std::optional<DeviceElement>> item = std::move(ready_.front());
    ready_.pop_front();
    if (!item.ok() || !item->has_value()) {
      finished_ = true;
      final_ = item;
    }
    lock.unlock();
    cv_.notify_all();
    return item;
  }

  PrefetchToDeviceStats stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    PrefetchToDeviceStats s = stats_;
    s.copies = counters_.copies;
    s.bytes_copied = counters_.bytes;
    s.staging_waits = counters_.staging_waits;
    s.staging_wait_ns = counters_.staging_wait_ns;
    s.buffered = 0;
    for (const auto& item : ready_) s.buffered += item.ok() && item->has_value();
    return s;
  }

  IteratorStats input_stats() const { return input_.stats(); }
  const Device& device() const { return device_; }

 private:
  static int64_t Since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                                start)
        .count();
  }

  void Run() {
    gpu_internal::StagerCounters counters;
    while (true) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return cancelled_ || static_cast<int64_t>(ready_.size()) < depth_; });
        if (cancelled_) return;
      }
      Result<std::optional<Element>> next = input_.next();
      if (transform_ && next.ok() && next->has_value()) {
        Result<Element> changed = transform_(std::move(**next));
        if (changed.ok()) {
          next = std::optional<Element>(std::move(changed).value());
        } else {
          next = changed.status();
        }
      }
      Result<std::optional<DeviceElement>> item = std::optional<DeviceElement>();
      if (!next.ok()) {
        item = next.status();
      } else if (next->has_value()) {
        Result<DeviceElement> staged = stager_.Stage(**next, counters);
        if (staged.ok()) {
          item = std::optional<DeviceElement>(std::move(staged).value());
        } else {
          item = staged.status();
        }
      }
      const bool last = !item.ok() || !item->has_value();
      {
        std::lock_guard<std::mutex> lock(mu_);
        counters_ = counters;
        if (!last) stats_.batches++;
        ready_.push_back(std::move(item));
      }
      cv_.notify_all();
      if (last) return;
    }
  }

  Iterator input_;  // used by the worker only (and stats(), thread-safe)
  const std::function<Result<Element>(Element)> transform_;
  const Device device_;
  const std::unique_ptr<Stream> own_stream_;  // null when the stream is borrowed
  const int64_t depth_;

  mutable std::mutex mu_;
  std::condition_variable cv_;  // ready_ changed, or cancelled_
  std::deque<Result<std::optional<DeviceElement>>> ready_;
  bool cancelled_ = false;
  PrefetchToDeviceStats stats_;
  gpu_internal::StagerCounters counters_;
  bool finished_ = false;  // Next() returned the terminal item, kept in final_
  Result<std::optional<DeviceElement>> final_ = std::optional<DeviceElement>();

  // Used by the worker only. Declared after ready_ so that it is destroyed
  // first: it waits for the copies into the blocks of unread elements.
  gpu_internal::BatchStager stager_;
  SerialQueue worker_{"sluice-to-device"};  // runs Run(); last: made once the rest is
};

DeviceIterator::DeviceIterator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DeviceIterator::DeviceIterator(DeviceIterator&&) noexcept = default;
DeviceIterator& DeviceIterator::operator=(DeviceIterator&&) noexcept = default;
DeviceIterator::~DeviceIterator() = default;

Result<std::optional<DeviceElement>> DeviceIterator::Next() { return impl_->Next(); }
PrefetchToDeviceStats DeviceIterator::stats() const { return impl_->stats(); }
IteratorStats DeviceIterator::input_stats() const { return impl_->input_stats(); }
const Device& DeviceIterator::device() const { return impl_->device(); }

Result<DeviceIterator> PrefetchToDevice(Iterator input, const Device& device,
                                        DeviceIteratorOptions options) {
  if (options.depth < 1) {
    return Status::InvalidArgument(
        fmt::format("prefetch_to_device({}): depth must be at least 1, got {}", device.ToString(),
                    options.depth));
  }
  SLUICE_ASSIGN_OR_RETURN(const gpu_internal::DeviceRuntime* runtime,
                          gpu_internal::GetDeviceRuntime(device));
  std::unique_ptr<Stream> own_stream;
  Stream* stream = options.stream;
  if (stream == nullptr) {
    SLUICE_ASSIGN_OR_RETURN(own_stream, NewStream(device));
    stream = own_stream.get();
  } else if (!(stream->device() == device)) {
    return Status::InvalidArgument(fmt::format("prefetch_to_device({}): the given stream is on {}",
                                               device.ToString(), stream->device().ToString()));
  }
  CachingAllocator* allocator =
      options.device_allocator ? options.device_allocator : runtime->allocator;
  PinnedHostPool staging = options.staging_pool ? *options.staging_pool : runtime->staging;
  return DeviceIterator(std::make_unique<DeviceIterator::Impl>(
      std::move(input), device, std::move(own_stream), *stream, *allocator, std::move(staging),
      options.depth, std::move(options.transform)));
}

Result<DeviceIterator> PrefetchToDevice(const Dataset& dataset, const Device& device,
                                        DeviceIteratorOptions options) {
  SLUICE_ASSIGN_OR_RETURN(Iterator input, dataset.iterator());
  return PrefetchToDevice(std::move(input), device, std::move(options));
}

Result<DeviceIterator> PrefetchToDevice(const Dataset& dataset, std::string_view device,
                                        DeviceIteratorOptions options) {
  SLUICE_ASSIGN_OR_RETURN(Device d, Device::Parse(device));
  return PrefetchToDevice(dataset, d, std::move(options));
}

}  // namespace sluice::gpu
