// PrefetchToDevice: the asynchronous form of the last stage of an input
// pipeline on a GPU machine (tf.data.experimental.prefetch_to_device), for
// a custom loop whose stream, not its thread, waits for each batch. Most
// code wants the stage instead, Dataset::prefetch_to_device (it saves and
// restores; this iterator does not). It pulls elements (batches) from a
// pipeline on a worker (a SerialQueue), stages each into pinned host memory,
// queues its host-to-device copies on its own stream and records an event,
// so the copy of batch N+1 overlaps the training step on batch N:
//
//   auto ds = sluice::TFRecordDataset(files).map(parse).batch(128).prefetch(2);
//   SLUICE_ASSIGN_OR_RETURN(gpu::DeviceIterator it,
//                           gpu::PrefetchToDevice(ds, Device::Gpu(0), {.depth = 2}));
//   while (true) {
//     SLUICE_ASSIGN_OR_RETURN(std::optional<gpu::DeviceElement> batch, it.Next());
//     if (!batch) break;                          // end of data
//     SLUICE_RETURN_IF_ERROR(batch->WaitOn(*compute_stream));  // no host blocking
//     train_step(*batch, *compute_stream);
//   }
//
// Next() never waits for a copy: it hands out the device tensors with the
// event that completes when their copies have landed (DeviceElement::WaitOn
// makes a stream wait for it, Wait() blocks the thread). At most `depth`
// batches are in flight (staged and not yet handed out, or still copying);
// a batch's pinned memory goes back to the pool only after its copy's event
// completed. Errors and the end of the input arrive in order, after the
// elements before them, and repeat on later calls. On "cpu:0" the same
// code runs over host memory (the host backend of device/stream.h).
//
// Ownership: the DeviceIterator owns the input iterator, the worker thread
// and (unless one is given) the copy stream. Destroying it cancels: it
// waits for the input's current next() call and the copies in flight, then
// returns all staging memory. Elements already handed out stay valid; their
// device blocks are allocated for the copy stream (see device/device_memory.h):
// drop an element only once the work using it on other streams is done.
// Thread-safety: Next() is for one consumer thread at a time; stats() may
// be called from any thread. DeviceElement is a value (copies share
// tensors and event); its const methods may be called concurrently.
#ifndef SLUICE_PIPELINE_PREFETCH_TO_DEVICE_H_
#define SLUICE_PIPELINE_PREFETCH_TO_DEVICE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/core/result.h"
#include "sluice/device/caching_allocator.h"
#include "sluice/device/device_memory.h"
#include "sluice/device/pinned_host_pool.h"
#include "sluice/device/stream.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/pipeline/iterator.h"

namespace sluice::gpu {

// PrefetchToDevice's (the stage, Dataset::prefetch_to_device, takes
// sluice::PrefetchToDeviceOptions).
struct DeviceIteratorOptions {
  // Batches in flight. REQUIRES: depth >= 1.
  int64_t depth = 2;
  // The copy stream. Null: the iterator makes its own. A given stream is
  // borrowed (it must outlive the iterator) and must be on the device.
  Stream* stream = nullptr;
  // Device memory. Null: the device's allocator. A given one is borrowed
  // and must outlive every element handed out.
  CachingAllocator* device_allocator = nullptr;
  // Staging memory. Unset: the device's pinned pool, shared process-wide.
  std::optional<PinnedHostPool> staging_pool;
  // Applied to each element on the worker before it is staged: to pick
  // the components to copy (string components cannot be), say. An error
  // it returns takes the element's place. Unset: elements as they are.
  std::function<Result<Element>(Element)> transform;
};

struct PrefetchToDeviceStats {
  int64_t batches = 0;           // batches whose copies were queued
  int64_t copies = 0;            // host-to-device copies queued (non-empty components)
  int64_t bytes_copied = 0;      // their bytes
  int64_t consumer_waits = 0;    // Next() calls that found no batch ready
  int64_t consumer_wait_ns = 0;  // time Next() spent waiting for one
  int64_t staging_waits = 0;     // times the worker waited for a copy to finish
  int64_t staging_wait_ns = 0;   //   before staging more (depth batches copying)
  int64_t buffered = 0;          // batches ready for Next() now
  // "12 batches, 36 copies, 1.5 MiB; consumer waited 3 times (2.1 ms); ..."
  std::string ToString() const;
};

// One element on the device: its components as DeviceTensors (names kept
// from the input) and the event that completes when they have arrived.
class DeviceElement {
 public:
  DeviceElement(std::vector<DeviceTensor> components,
                std::shared_ptr<const std::vector<std::string>> names,
                std::shared_ptr<Event> ready);

  size_t size() const { return components_.size(); }
  const DeviceTensor& operator[](size_t i) const { return components_[i]; }
  const std::vector<DeviceTensor>& components() const { return components_; }
  // One name per component, "" for an unnamed one.
  const std::vector<std::string>& names() const { return *names_; }
  // The first component called `name`, or nullptr.
  const DeviceTensor* find(std::string_view name) const;

  // Makes `stream` wait for the copies: work queued on it afterwards sees
  // the data. The caller does not block.
  Status WaitOn(Stream& stream) const { return stream.WaitFor(*ready_); }
  // Blocks until the copies have landed; their error, if any.
  Status Wait() const { return ready_->Synchronize(); }
  // Whether they have, without blocking.
  Result<bool> ready() const { return ready_->Query(); }
  const std::shared_ptr<Event>& ready_event() const { return ready_; }
  // DeviceTensor::RecordUse for every component with one event: call it
  // after queuing the work on `stream` that reads the batch, then drop the
  // element at once; its memory returns to the copy stream's allocator
  // only after that work has run.
  Status RecordUse(Stream& stream) const;

 private:
  std::vector<DeviceTensor> components_;
  std::shared_ptr<const std::vector<std::string>> names_;
  std::shared_ptr<Event> ready_;
};

class DeviceIterator {
 public:
  DeviceIterator(DeviceIterator&&) noexcept;
  DeviceIterator& operator=(DeviceIterator&&) noexcept;
  ~DeviceIterator();

  // The next element, nullopt at the end (and on every later call), or the
  // error of the input or of staging (repeated on every later call). Waits
  // for the worker when no batch is staged, never for a copy.
  // REQUIRES (every method): the iterator was not moved from.
  Result<std::optional<DeviceElement>> Next();
  PrefetchToDeviceStats stats() const;
  // The input pipeline's counters (Iterator::stats(), any thread).
  IteratorStats input_stats() const;
  const Device& device() const;

 private:
  class Impl;
  friend Result<DeviceIterator> PrefetchToDevice(Iterator, const Device&, DeviceIteratorOptions);
  explicit DeviceIterator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Starts the worker. InvalidArgument for depth < 1 or a stream of another
// device; the dataset's build error; Unavailable/NotFound for a GPU that is
// not there.
Result<DeviceIterator> PrefetchToDevice(Iterator input, const Device& device,
                                        DeviceIteratorOptions options = {});
Result<DeviceIterator> PrefetchToDevice(const Dataset& dataset, const Device& device,
                                        DeviceIteratorOptions options = {});
// `device` as Device::Parse reads it: "gpu:0", "cpu:0".
Result<DeviceIterator> PrefetchToDevice(const Dataset& dataset, std::string_view device,
                                        DeviceIteratorOptions options = {});

}  // namespace sluice::gpu

#endif  // SLUICE_PIPELINE_PREFETCH_TO_DEVICE_H_
