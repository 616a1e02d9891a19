// Streams and events: ordered queues of asynchronous work on a device, and
// markers that say when the work queued before them has finished.
//
// A Stream runs the work queued on it (copies, host functions, kernels
// launched on native_handle()) in the order it was queued, asynchronously to
// the caller; work on different streams may overlap. An Event recorded on a
// stream completes when everything queued on that stream before the record
// has run; another stream can wait for it without blocking any thread.
//
// Two backends sit behind these interfaces, chosen by the Device:
//   - Device::Gpu(i), "gpu:i": logical GPU i of device/config.h. A stream is a
//     non-blocking cudaStream_t, an event a cudaEvent_t without timing,
//     copies are cudaMemcpyAsync; CUDA errors become Status values.
//   - Device::Cpu(), "cpu:0": host memory standing in for a device. Each
//     stream has one worker thread that runs its queue in order (copies are
//     memcpy); an event completes when the worker passes it. Code written
//     for a GPU runs unchanged on machines without one.
//
// Ownership: NewStream/NewEvent return owned objects. Destroying a stream
// first waits for the work queued on it. An event may be destroyed at any
// time (a pending record on a host stream keeps its state alive).
// Thread-safety: every method of Stream and Event may be called from any
// thread; work queued from several threads runs in the order of the calls.
#ifndef SLUICE_DEVICE_STREAM_H_
#define SLUICE_DEVICE_STREAM_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "sluice/core/device.h"
#include "sluice/core/result.h"
#include "sluice/core/status.h"
#include "sluice/device/caching_allocator.h"

namespace sluice::gpu {

enum class CopyDirection : uint8_t { kHostToDevice, kDeviceToHost, kDeviceToDevice };

class Stream;

// Work captured from a stream (Stream::BeginCapture ... EndCapture) and
// launched again as a whole: a CUDA graph (cudaGraphExec_t) on a GPU, the
// recorded closures on the host. The analogue of tf.function for a
// training step: one launch replaces a kernel launch per operation. Each
// launch reads and writes the memory the captured work did: put the next
// inputs in place before a launch (outside the graph), read the outputs
// after; that memory must stay allocated as long as the graph is used.
// Ownership: owned by the caller; destroying it while a launch is pending
// is allowed (the launch keeps what it needs). Thread-safety: Launch may be
// called from any thread.
class Graph {
 public:
  virtual ~Graph() = default;
  // Queues the whole captured work on `stream`, a stream of the device it
  // was captured on. InvalidArgument for another device.
  virtual Status Launch(Stream& stream) = 0;
  // Operations captured (kernels, copies, host functions).
  virtual int64_t num_nodes() const = 0;
};

class Event {
 public:
  virtual ~Event() = default;
  // True once the work captured by the latest Stream::Record(*this) has run
  // (true if never recorded). An error of that work is returned (CUDA).
  virtual Result<bool> Query() = 0;
  // Blocks the calling thread until Query() would be true.
  virtual Status Synchronize() = 0;
  virtual const Device& device() const = 0;
  // The cudaEvent_t of a GPU event; nullptr for a host event.
  virtual void* native_handle() const = 0;
};

class Stream {
 public:
  // Waits for the queued work, then releases the stream.
  virtual ~Stream() = default;
  virtual const Device& device() const = 0;
  // The cudaStream_t to launch kernels on; nullptr for a host stream.
  virtual void* native_handle() const = 0;
  // This stream as the caching allocators know streams (Allocate's `stream`).
  virtual StreamId id() const = 0;

  // Queues a copy of `bytes` bytes and returns at once. Both ranges must
  // stay valid, and `src` unchanged, until the stream has passed the copy
  // (record an event after it). Host memory of an asynchronous GPU copy
  // should be pinned (PinnedHostPool); pageable memory makes CUDA copy
  // synchronously. REQUIRES: the ranges do not overlap.
  virtual Status CopyAsync(void* dst, const void* src, size_t bytes, CopyDirection direction) = 0;
  // Queues `fn` to run on a host thread once the earlier work has run
  // (cudaLaunchHostFunc). Later work waits for it. REQUIRES: fn makes no
  // CUDA call and does not use this stream.
  virtual Status LaunchHostFunc(std::function<void()> fn) = 0;
  // Captures the work queued so far in `event` (replacing what it captured
  // before). InvalidArgument if the event belongs to another device.
  virtual Status Record(Event& event) = 0;
  // Work queued after this call starts only once `event` (as recorded now)
  // has completed; the caller does not block. An event never recorded is
  // complete. A GPU stream may wait for an event of another GPU; host and
  // GPU streams and events do not mix (InvalidArgument).
  virtual Status WaitFor(const Event& event) = 0;
  // Blocks until all work queued so far has run; returns its first error.
  // FailedPrecondition while capturing.
  virtual Status Synchronize() = 0;

  // Capture (Graph): from BeginCapture until EndCapture, the copies, host
  // functions and kernels queued on this stream are recorded instead of
  // run, and EndCapture returns them as a Graph. While capturing, Record,
  // WaitFor and Synchronize are FailedPrecondition (on a GPU they would
  // break the capture), and work queued on other streams is not captured.
  // A GPU capture is cudaStreamCaptureModeRelaxed: the caching allocator
  // may still reserve memory (cudaMalloc) meanwhile. The capturing thread
  // should be the only one queuing on the stream. FailedPrecondition for a
  // BeginCapture while capturing, or an EndCapture without one.
  virtual Status BeginCapture() = 0;
  virtual Result<std::unique_ptr<Graph>> EndCapture() = 0;
  virtual bool capturing() const = 0;

 protected:
  Stream() = default;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
};

// A new stream on `device`. Unavailable (with GpuAvailability()'s reason) or
// NotFound for a GPU that is not there; CUDA errors as Status.
Result<std::unique_ptr<Stream>> NewStream(const Device& device);
// A new event on `device`, not yet recorded.
Result<std::unique_ptr<Event>> NewEvent(const Device& device);

}  // namespace sluice::gpu

#endif  // SLUICE_DEVICE_STREAM_H_
