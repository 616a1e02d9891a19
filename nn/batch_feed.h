// BatchFeed: an input pipeline's batches on a backend's device, the way
// Sequential's dataset loops (Fit, Evaluate) read them.
//
// MakeBatchFeed(backend, dataset, select, depth) makes one. Feeding
// depends on the backend, never the reverse: Backend knows nothing of the
// pipeline, and a device module registers its own feed beside its backend
// (RegisterBatchFeed; gpu::RegisterNnBackend registers the GPU's). `select`
// picks the host tensors of each element that go to the device (Fit's x
// and y); Next() returns them as DeviceTensors of the backend, in that
// order. The default feed reads inside Next(): iterator.next(), select,
// Backend::ToDevice (no copy on the CPU). A backend with its own memory may
// read ahead instead: the GPU backend's feed (depth >= 1) reads
// dataset.map(select).prefetch_to_device(device, depth), so the copy of
// batch N+1 overlaps the step on batch N, and its iterator, stage and all,
// saves and restores like any other.
//
// Ownership: the feed owns the iterator. Tensors from Next() stay valid
// after the next call; work the caller queues on the backend that reads
// them must be queued before the next Next() call or the feed's
// destruction (a read-ahead feed releases the memory of batch N, once the
// backend's stream has run its work, at the call that returns N+1).
// Thread-safety: one consumer thread; input_stats() from any thread.
#ifndef SLUICE_NN_BATCH_FEED_H_
#define SLUICE_NN_BATCH_FEED_H_

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "sluice/core/device.h"
#include "sluice/core/device_tensor.h"
#include "sluice/core/element.h"
#include "sluice/core/result.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/pipeline/iterator.h"
#include "sluice/pipeline/stats.h"

namespace sluice::nn {

// The host tensors of an element that a feed moves (an error is the
// element's: Next() returns it).
using FeedSelect = std::function<Result<std::vector<Tensor>>(const Element&)>;

class BatchFeed {
 public:
  virtual ~BatchFeed() = default;
  // The next element's selected tensors on the device; nullopt at the end
  // of the input (and on every later call). An error of the input or of
  // `select` is returned in order, after the batches before it.
  virtual Result<std::optional<std::vector<DeviceTensor>>> Next() = 0;
  // The input pipeline's counters (Iterator::stats()).
  virtual IteratorStats input_stats() const = 0;
  // The iterator the feed reads, so that it may be saved between calls (at
  // a batch boundary): the input's, or that of the pipeline the feed built
  // on it (a read-ahead feed's prefetch_to_device stage); null for a feed
  // that cannot be saved.
  virtual Iterator* iterator() = 0;
};

class Backend;

// `input`'s batches on `backend`'s device, `select`ed: the feed a device
// module registered for the device's kind, else the default, which reads
// and copies (Backend::ToDevice: no copy on the CPU) inside Next(). A
// registered feed may read up to `depth` batches ahead (the GPU's copies
// them on a stream of its own, for depth >= 1); depth 0 asks for the
// default. InvalidArgument for a negative depth.
Result<std::unique_ptr<BatchFeed>> MakeBatchFeed(Backend& backend, const Dataset& input,
                                                 FeedSelect select, int64_t depth);

// For device modules: the feed of a device kind, or nullptr to use the
// default for this call (depth 0, a backend it does not serve).
using BatchFeedFactory = std::function<Result<std::unique_ptr<BatchFeed>>(
    Backend& backend, const Dataset& input, FeedSelect& select, int64_t depth)>;
void RegisterBatchFeed(DeviceKind kind, BatchFeedFactory factory);

}  // namespace sluice::nn

#endif  // SLUICE_NN_BATCH_FEED_H_
