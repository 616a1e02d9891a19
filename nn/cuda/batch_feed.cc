// The GPU's batch feed: batches prefetched to the device for Sequential's
// dataset loops (nn/batch_feed.h), registered by gpu::RegisterNnBackend.
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "sluice/device/device_memory.h"
#include "sluice/nn/cuda/internal/gpu_backend.h"
#include "sluice/pipeline/dataset.h"

namespace sluice::gpu::backend {
namespace {

// Reads data.map(select).prefetch_to_device(the backend's device, depth):
// the stage copies each batch on a stream of its own and hands it out once
// the copies have landed, so the backend's stream needs no wait. The batch
// before stays in previous_ until the next call: by then the caller has
// queued its work on the backend's stream, so RecordUse there lets the
// blocks go back to the copy stream's allocator only after that work has
// run. The iterator is the pipeline's, so it saves and restores.
class PrefetchFeed final : public nn::BatchFeed {
 public:
  PrefetchFeed(GpuBackend& backend, Iterator input) : backend_(backend), input_(std::move(input)) {}
  ~PrefetchFeed() override { (void)ReleasePrevious(); }

  Result<std::optional<std::vector<DeviceTensor>>> Next() override {
    SLUICE_RETURN_IF_ERROR(ReleasePrevious());
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> batch, input_.next());
    if (!batch) return std::optional<std::vector<DeviceTensor>>();
    std::vector<DeviceTensor> out;
    out.reserve(batch->size());
    // Tagged as the backend's device (gpu:i also when the backend runs on
    // the host backend's memory, RegisterNnBackendOnHost).
    for (const Tensor& t : batch->components()) out.emplace_back(backend_.device(), t);
    previous_ = std::move(batch);
    return std::optional<std::vector<DeviceTensor>>(std::move(out));
  }

  IteratorStats input_stats() const override { return input_.stats(); }
  Iterator* iterator() override { return &input_; }

 private:
  Status ReleasePrevious() {
    if (!previous_) return Status::OK();
    // One event after the work queued on the backend's stream, for all of them.
    std::optional<Element> batch = std::move(previous_);
    previous_.reset();
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Event> event, NewEvent(backend_.stream().device()));
    SLUICE_RETURN_IF_ERROR(backend_.stream().Record(*event));
    const std::shared_ptr<Event> recorded(std::move(event));
    for (const Tensor& t : batch->components()) RecordUse(t, recorded);
    return Status::OK();
  }

  GpuBackend& backend_;
  Iterator input_;
  std::optional<Element> previous_;
};

}  // namespace

Result<std::unique_ptr<nn::BatchFeed>> MakePrefetchFeed(nn::Backend& backend, const Dataset& input,
                                                        nn::FeedSelect& select, int64_t depth) {
  auto* gpu = dynamic_cast<GpuBackend*>(&backend);
  if (gpu == nullptr || depth <= 0) return std::unique_ptr<nn::BatchFeed>();  // the default
  const Dataset on_device =
      input
          .map(
              [select](Element e) -> Result<Element> {
                SLUICE_ASSIGN_OR_RETURN(std::vector<Tensor> picked, select(e));
                return Element(std::move(picked));
              },
              {.name = "fit_select"})
          .prefetch_to_device(gpu->gpu_device(), depth);
  SLUICE_ASSIGN_OR_RETURN(Iterator it, on_device.iterator());
  return std::unique_ptr<nn::BatchFeed>(std::make_unique<PrefetchFeed>(*gpu, std::move(it)));
}

}  // namespace sluice::gpu::backend
