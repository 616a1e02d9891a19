// DeviceFeedIterator: the iterator half of the stages that end a pipeline
// on a device (prefetch_to_device, pipeline/cuda's JPEG batches). A
// producer task in the pipeline's arena (one at a time, so order is kept)
// pulls host elements from the input and has the stage make each one's
// device element (MakeOnDevice: queue copies, decodes...), while fewer than
// `depth` wait for next(). next() hands out the oldest once its event has
// completed (a host wait, normally over by then), its Tensors the device
// element's storage.
//
// Save/restore: each buffered element keeps its host input and its index
// (the count of input elements before it) until it is handed out, so a
// save writes those, the count read and the input's state; a restore makes
// them again before reading on. What was delivered is not delivered again;
// what was in flight is replayed. Errors of the input or of MakeOnDevice
// arrive in order and do not end the stage; the input's end does. Buffered
// host inputs are charged to the RAM budget.
//
// A subclass's destructor calls Stop() first, so that the producer is done
// with the subclass's members before they go. Next() is for one caller at
// a time; the rest is the producer's.
#ifndef SLUICE_PIPELINE_INTERNAL_DEVICE_FEED_H_
#define SLUICE_PIPELINE_INTERNAL_DEVICE_FEED_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "sluice/pipeline/internal/node.h"
#include "sluice/pipeline/prefetch_to_device.h"

namespace sluice::pipeline_internal {

class DeviceFeedIterator : public IteratorNode {
 public:
  // `kind` tags the saved state; `name` prefixes the stage's errors.
  DeviceFeedIterator(IteratorContext* ctx, StageCounters* counters,
                     std::unique_ptr<IteratorNode> input, std::string kind, std::string name,
                     int64_t depth);
  ~DeviceFeedIterator() override;

  Status Save(StateWriter& w) override;
  Status Restore(StateReader& r) override;

 protected:
  NextResult GetNext() override;

  // The device element of `host`, the index-th element of the input; nullopt
  // drops it. Its error takes the element's place, prefixed with name().
  virtual Result<std::optional<gpu::DeviceElement>> MakeOnDevice(const Element& host,
                                                                 uint64_t index) = 0;
  // How long the producer waited for the input's next element.
  virtual void InputTime(int64_t /*ns*/) {}
  // Stops the producer for good (it finishes the element it is on) and
  // drops what is buffered. Idempotent.
  void Stop();
  const std::string& name() const { return name_; }

 private:
  enum class Kind : uint8_t { kElement = 0, kError = 1, kEnd = 2 };
  struct Item {
    Kind kind = Kind::kElement;
    Element host;        // kept until handed out, for Save
    uint64_t index = 0;  // of the input's elements
    std::optional<gpu::DeviceElement> made;
    Status error;
    int64_t charged = 0;  // host bytes charged to the RAM budget
  };

  void Quiesce(std::unique_lock<std::mutex>& l);
  void ReleaseLocked();
  bool ShouldProduceLocked() const;
  void LaunchLocked();
  void Produce();
  Status RestoreLocked(StateReader& r);

  const std::unique_ptr<IteratorNode> input_;  // the producer's (and Save/Restore's, quiesced)
  const std::string kind_;
  const std::string name_;
  const int64_t depth_;

  std::mutex mu_;
  std::condition_variable cv_;  // ready_ grew, or the producer stopped
  std::deque<Item> ready_;      // made (or errors, the end), oldest first
  std::deque<Item> replay_;     // restored, to make again before reading the input
  bool running_ = false;        // a Produce task is submitted or running
  bool paused_ = false;         // Save/Restore hold the producer
  bool stopping_ = false;       // Stop()
  bool input_ended_ = false;    // the end is in ready_ or replay_ (or was handed out)
  bool delivered_end_ = false;  // next() returned the end
  uint64_t read_ = 0;           // elements read from the input: the next one's index
};

}  // namespace sluice::pipeline_internal

#endif  // SLUICE_PIPELINE_INTERNAL_DEVICE_FEED_H_
