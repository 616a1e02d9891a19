// BatchStager: the worker side of PrefetchToDevice. Stage() packs one
// element's components into one pinned buffer, allocates their device
// tensors, queues the host-to-device copies on the stream and records an
// event. It keeps each pinned buffer with its event and returns it to the
// pool only once the event has completed, never holding more than `depth`
// of them (it waits for the oldest copy first).
//
// Not thread-safe: used by the worker thread alone. The destructor waits
// for every copy still reading a pinned buffer.
#ifndef SLUICE_PIPELINE_INTERNAL_BATCH_STAGER_H_
#define SLUICE_PIPELINE_INTERNAL_BATCH_STAGER_H_

#include <cstdint>
#include <deque>
#include <memory>

#include "sluice/core/element.h"
#include "sluice/core/result.h"
#include "sluice/device/caching_allocator.h"
#include "sluice/device/pinned_host_pool.h"
#include "sluice/pipeline/prefetch_to_device.h"
#include "sluice/device/stream.h"

namespace sluice::gpu_internal {

struct StagerCounters {
  int64_t copies = 0;
  int64_t bytes = 0;
  int64_t staging_waits = 0;
  int64_t staging_wait_ns = 0;
};

class BatchStager {
 public:
  // All borrowed; they must outlive the stager. REQUIRES: depth >= 1.
  BatchStager(gpu::Stream& stream, gpu::CachingAllocator& allocator, gpu::PinnedHostPool staging,
              int64_t depth)
      : stream_(stream), allocator_(allocator), staging_(std::move(staging)), depth_(depth) {}
  ~BatchStager();
  BatchStager(const BatchStager&) = delete;
  BatchStager& operator=(const BatchStager&) = delete;

  // InvalidArgument naming a string component; the allocators' and the
  // stream's errors. `counters` grows by what was done.
  Result<gpu::DeviceElement> Stage(const Element& element, StagerCounters& counters);

 private:
  struct InFlight {
    std::shared_ptr<gpu::Event> done;
    gpu::PinnedBuffer staging;
  };
  // Drops completed entries; then waits for the oldest while `keep` or more remain.
  Status Retire(size_t keep, StagerCounters& counters);

  gpu::Stream& stream_;
  gpu::CachingAllocator& allocator_;
  gpu::PinnedHostPool staging_;
  const int64_t depth_;
  std::deque<InFlight> in_flight_;  // oldest first
};

}  // namespace sluice::gpu_internal

#endif  // SLUICE_PIPELINE_INTERNAL_BATCH_STAGER_H_
