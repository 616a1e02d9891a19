// prefetch_to_device(device, buffer_size): the pipeline's last stage on a
// GPU machine (tf.data.experimental.prefetch_to_device; pipeline/dataset.h
// states its contract). Its device part stages each element into pinned
// memory and queues its copies on the stage's stream (BatchStager); the
// buffering, the producer task, save/restore and the RAM charges are
// DeviceFeedIterator's (internal/device_feed.h).
#include <fmt/format.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "sluice/device/caching_allocator.h"
#include "sluice/device/pinned_host_pool.h"
#include "sluice/device/runtime.h"
#include "sluice/device/stream.h"
#include "sluice/pipeline/internal/batch_stager.h"
#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/device_feed.h"
#include "sluice/pipeline/internal/node.h"
#include "sluice/pipeline/internal/stages.h"

namespace sluice::pipeline_internal {
namespace {

class PrefetchToDeviceIterator final : public DeviceFeedIterator {
 public:
  PrefetchToDeviceIterator(IteratorContext* ctx, StageCounters* counters,
                           std::unique_ptr<IteratorNode> input, std::string name,
                           std::unique_ptr<gpu::Stream> own_stream, gpu::Stream& stream,
                           gpu::CachingAllocator& allocator, gpu::PinnedHostPool staging,
                           int64_t depth)
      : DeviceFeedIterator(ctx, counters, std::move(input), "prefetch_to_device", std::move(name),
                           depth),
        own_stream_(std::move(own_stream)),
        stager_(stream, allocator, std::move(staging), depth) {}

  ~PrefetchToDeviceIterator() override {
    Stop();
    // stager_ (destroyed next) waits for the copies still in flight.
  }

 protected:
  Result<std::optional<gpu::DeviceElement>> MakeOnDevice(const Element& host,
                                                         uint64_t /*index*/) override {
    SLUICE_ASSIGN_OR_RETURN(gpu::DeviceElement staged, stager_.Stage(host, counters_));
    return std::optional<gpu::DeviceElement>(std::move(staged));
  }

 private:
  const std::unique_ptr<gpu::Stream> own_stream_;  // null when the stream is borrowed
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
    return Dataset::FromError(Status::InvalidArgument(
        fmt::format("{}: buffer_size must be >= 1 or kAutotune, got {}", where, buffer_size)));
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
