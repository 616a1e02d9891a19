// The GPU's batch feed: batches prefetched to the device for Sequential's
// dataset loops (nn/batch_feed.h), registered by gpu::RegisterNnBackend.
#include <optional>
#include <utility>
#include <vector>

#include "sluice/nn/cuda/internal/gpu_backend.h"
#include "sluice/pipeline/prefetch_to_device.h"

namespace sluice::gpu::backend {
namespace {

// gpu::PrefetchToDevice copies each batch on its own stream; Next() makes
// the backend's stream wait for the copies (the host does not) and hands
// the blocks out as the backend's tensors. The batch before stays in
// previous_ until the next call: by then the caller has queued its work on
// the backend's stream, so RecordUse there lets the block go back to the
// copy stream's allocator only after that work has run.
class PrefetchFeed final : public nn::BatchFeed {
 public:
  PrefetchFeed(GpuBackend& backend, DeviceIterator input)
      : backend_(backend), input_(std::move(input)) {}
  ~PrefetchFeed() override { (void)ReleasePrevious(); }

  Result<std::optional<std::vector<DeviceTensor>>> Next() override {
    SLUICE_RETURN_IF_ERROR(ReleasePrevious());
    SLUICE_ASSIGN_OR_RETURN(std::optional<DeviceElement> batch, input_.Next());
    if (!batch) return std::optional<std::vector<DeviceTensor>>();
    SLUICE_RETURN_IF_ERROR(batch->WaitOn(backend_.stream()));
    std::vector<DeviceTensor> out;
    out.reserve(batch->size());
    for (const DeviceTensor& t : batch->components()) {
      out.emplace_back(backend_.device(), t.storage());
    }
    previous_ = std::move(batch);
    return std::optional<std::vector<DeviceTensor>>(std::move(out));
  }

  IteratorStats input_stats() const override { return input_.input_stats(); }
  Iterator* iterator() override { return nullptr; }

 private:
  Status ReleasePrevious() {
    if (!previous_) return Status::OK();
    Status s = previous_->RecordUse(backend_.stream());
    previous_.reset();
    return s;
  }

  GpuBackend& backend_;
  DeviceIterator input_;
  std::optional<DeviceElement> previous_;
};

}  // namespace

Result<std::unique_ptr<nn::BatchFeed>> MakePrefetchFeed(nn::Backend& backend, Iterator& input,
                                                        nn::FeedSelect& select, int64_t depth) {
  auto* gpu = dynamic_cast<GpuBackend*>(&backend);
  if (gpu == nullptr || depth <= 0) return std::unique_ptr<nn::BatchFeed>();  // the default
  PrefetchToDeviceOptions options;
  options.depth = depth;
  options.transform = [select = std::move(select)](Element e) -> Result<Element> {
    SLUICE_ASSIGN_OR_RETURN(std::vector<Tensor> picked, select(e));
    return Element(std::move(picked));
  };
  SLUICE_ASSIGN_OR_RETURN(
      DeviceIterator it, PrefetchToDevice(std::move(input), gpu->gpu_device(), std::move(options)));
  return std::unique_ptr<nn::BatchFeed>(std::make_unique<PrefetchFeed>(*gpu, std::move(it)));
}

}  // namespace sluice::gpu::backend
