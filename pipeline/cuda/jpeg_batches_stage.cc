// DecodeJpegBatchesToDevice (jpeg_batches.h): the stage. A producer task
// in the pipeline's arena (DeviceFeedIterator, as prefetch_to_device's)
// makes the batches (JpegBatchMaker: decode on the decode stream,
// augmentation and copies on the output stream) while fewer than the
// buffer wait; each keeps its host input and batch index until it is
// handed out, for Save.
#include <fmt/format.h>

#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sluice/core/rng.h"
#include "sluice/device/pinned_host_pool.h"
#include "sluice/device/runtime.h"
#include "sluice/pipeline/cuda/jpeg_batches.h"
#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/device_feed.h"
#include "sluice/pipeline/internal/node.h"

namespace sluice::gpu {
namespace {

namespace pi = pipeline_internal;
constexpr const char* kKind = "jpeg_batches_to_device";

// The rows `kept` of t [N, ...].
Result<Tensor> GatherRows(const Tensor& t, const std::vector<size_t>& kept) {
  std::vector<int64_t> dims(t.shape().dims().begin(), t.shape().dims().end());
  const size_t row = t.byte_size() / static_cast<size_t>(dims[0]);
  dims[0] = static_cast<int64_t>(kept.size());
  SLUICE_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(t.dtype(), Shape(dims)));
  for (size_t j = 0; j < kept.size(); ++j) {
    std::memcpy(static_cast<char*>(out.raw_data()) + j * row,
                static_cast<const char*>(t.raw_data()) + kept[j] * row, row);
  }
  return out;
}

// Makes one batch on the device from one host batch. The producer's alone.
class JpegBatchMaker {
 public:
  static Result<std::unique_ptr<JpegBatchMaker>> Create(const Device& device,
                                                        const JpegBatchesOptions& options) {
    auto m = std::unique_ptr<JpegBatchMaker>(new JpegBatchMaker(options));
    if (options.stream != nullptr) {
      m->stream_ = options.stream;
    } else {
      SLUICE_ASSIGN_OR_RETURN(m->own_stream_, NewStream(device));
      m->stream_ = m->own_stream_.get();
    }
    SLUICE_ASSIGN_OR_RETURN(const gpu_internal::DeviceRuntime* runtime,
                            gpu_internal::GetDeviceRuntime(device));
    m->staging_.emplace(runtime->staging);
    SLUICE_ASSIGN_OR_RETURN(m->decode_stream_, NewStream(device));
    SLUICE_ASSIGN_OR_RETURN(m->decoder_, JpegDecoder::Create(*m->decode_stream_, options.decoder));
    return m;
  }

  ~JpegBatchMaker() {
    // The work queued is done before the decoder and the streams go.
    (void)stream_->Synchronize();
    (void)decode_stream_->Synchronize();
  }

  // Batch `b` from host batch `e`; nullopt when skip_bad_images dropped all
  // of its images.
  Result<std::optional<DeviceElement>> Make(const Element& e, uint64_t b) {
    Stream& stream = *stream_;
    const std::vector<std::string>& names = e.names();
    size_t k = names.size();
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == options_.image) k = i;
    }
    if (k == names.size()) {
      return Status::InvalidArgument("the elements have no component \"" + options_.image + "\"");
    }
    const Tensor& images = e[k];
    if (images.dtype() != DType::kString || images.shape().rank() != 1) {
      return Status::InvalidArgument(
          "component \"" + options_.image +
          "\" must be a string tensor [N] (batch the input first), not " + images.DebugString());
    }
    auto bytes = images.flat<std::string_view>();
    std::vector<std::string> image_names;
    std::vector<EncodedJpeg> jpegs;
    for (size_t i = 0; i < bytes.size(); ++i) {
      image_names.push_back(options_.image + " of batch " + std::to_string(b) + ", image " +
                            std::to_string(i));
    }
    for (size_t i = 0; i < bytes.size(); ++i) jpegs.push_back({bytes[i], image_names[i]});
    const int64_t t2 = pi::NowNs();
    std::vector<Result<DeviceTensor>> results = decoder_->DecodeEach(jpegs);
    const int64_t t3 = pi::NowNs();
    std::vector<DeviceTensor> decoded;
    std::vector<size_t> kept;
    int64_t skipped = 0;
    for (size_t i = 0; i < results.size(); ++i) {
      if (results[i].ok()) {
        decoded.push_back(*std::move(results[i]));
        kept.push_back(i);
      } else if (options_.skip_bad_images) {
        ++skipped;
      }
    }
    if (options_.stats != nullptr) options_.stats->AddDecode(decoder_->stats(), skipped, t3 - t2);
    if (!options_.skip_bad_images) {
      for (const Result<DeviceTensor>& r : results) SLUICE_RETURN_IF_ERROR(r.status());
    }
    if (decoded.empty()) return std::optional<DeviceElement>();
    Rng rng(options_.seed, b);
    // On the output stream after the decode: the next batch's decode (the
    // JPEG engines) overlaps this batch's augmentation and copies.
    SLUICE_ASSIGN_OR_RETURN(
        DeviceTensor x,
        RandomResizedCropBatchAfter(decoded, rng, *decode_stream_, stream, options_.augment));
    std::vector<DeviceTensor> components;
    auto staged = std::make_shared<std::vector<PinnedBuffer>>();
    for (size_t j = 0; j < e.size(); ++j) {
      if (j == k) {
        components.push_back(x);
        continue;
      }
      Tensor t = e[j];
      if (t.dtype() == DType::kString) {
        return Status::InvalidArgument("component \"" + names[j] +
                                       "\" is a string tensor; drop it with a map before");
      }
      if (kept.size() != bytes.size()) {
        if (t.shape().rank() < 1 || t.shape().dim(0) != static_cast<int64_t>(bytes.size())) {
          return Status::InvalidArgument("component \"" + names[j] +
                                         "\" has no row per image to drop: " + t.DebugString());
        }
        SLUICE_ASSIGN_OR_RETURN(t, GatherRows(t, kept));
      }
      SLUICE_ASSIGN_OR_RETURN(PinnedBuffer buffer, staging_->Acquire(t.byte_size() + 1));
      if (t.byte_size() > 0) std::memcpy(buffer.data(), t.raw_data(), t.byte_size());
      SLUICE_ASSIGN_OR_RETURN(DeviceTensor d,
                              AllocateDeviceTensor(stream.device(), t.dtype(), t.shape(), &stream));
      if (t.byte_size() > 0) SLUICE_RETURN_IF_ERROR(CopyToDeviceAsync(buffer.data(), d, stream));
      staged->push_back(std::move(buffer));
      components.push_back(std::move(d));
    }
    if (!staged->empty()) SLUICE_RETURN_IF_ERROR(stream.LaunchHostFunc([staged] {}));
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Event> event, NewEvent(stream.device()));
    SLUICE_RETURN_IF_ERROR(stream.Record(*event));
    if (options_.stats != nullptr) options_.stats->AddBatch(pi::NowNs() - t3);
    return std::optional<DeviceElement>(DeviceElement(std::move(components), e.shared_names(),
                                                      std::shared_ptr<Event>(std::move(event))));
  }

 private:
  explicit JpegBatchMaker(const JpegBatchesOptions& options) : options_(options) {}

  const JpegBatchesOptions options_;
  std::unique_ptr<Stream> own_stream_;     // null when the stream is borrowed
  Stream* stream_ = nullptr;               // the output stream: augmentation, copies, events
  std::unique_ptr<Stream> decode_stream_;  // the decoder's (declared first: it outlives it)
  std::unique_ptr<JpegDecoder> decoder_;
  std::optional<PinnedHostPool> staging_;
};

// The buffering, the producer and the state are DeviceFeedIterator's; the
// element index it saves is the batch index b of Rng(seed, b).
class JpegBatchesIterator final : public pi::DeviceFeedIterator {
 public:
  JpegBatchesIterator(pi::IteratorContext* ctx, pi::StageCounters* counters,
                      std::unique_ptr<pi::IteratorNode> input, std::string name,
                      std::unique_ptr<JpegBatchMaker> maker,
                      std::shared_ptr<JpegBatchesStats> stats, int64_t depth)
      : DeviceFeedIterator(ctx, counters, std::move(input), kKind, std::move(name), depth),
        stats_(std::move(stats)),
        maker_(std::move(maker)) {}

  ~JpegBatchesIterator() override {
    Stop();
    // maker_ (destroyed next) waits for the work queued on its streams.
  }

 protected:
  Result<std::optional<DeviceElement>> MakeOnDevice(const Element& host, uint64_t index) override {
    return maker_->Make(host, index);
  }
  void InputTime(int64_t ns) override {
    if (stats_ != nullptr) stats_->AddInputTime(ns);
  }

 private:
  const std::shared_ptr<JpegBatchesStats> stats_;
  const std::unique_ptr<JpegBatchMaker> maker_;  // the producer's alone
};

class JpegBatchesNode : public pi::DatasetNode {
 public:
  JpegBatchesNode(const Dataset& input, Device device, JpegBatchesOptions options, ElementSpec spec,
                  int64_t cardinality)
      : DatasetNode(kKind, "", {input.node()}, std::move(spec), cardinality),
        device_(device),
        options_(std::move(options)) {}

  std::string Describe() const override {
    return fmt::format("{}({}, {})", name(), device_.ToString(), options_.image);
  }

  Result<std::unique_ptr<pi::IteratorNode>> MakeIterator(
      pi::IteratorContext& ctx, const pi::IteratorParams& params) const override {
    const std::string where = fmt::format("{}({})", name(), device_.ToString());
    Result<std::unique_ptr<JpegBatchMaker>> maker = JpegBatchMaker::Create(device_, options_);
    if (!maker.ok()) return maker.status().WithContext(where);
    SLUICE_ASSIGN_OR_RETURN(auto input, MakeIteratorOf(*inputs()[0], ctx, params));
    return std::unique_ptr<pi::IteratorNode>(std::make_unique<JpegBatchesIterator>(
        &ctx, ctx.CountersFor(this), std::move(input), where, *std::move(maker), options_.stats,
        std::max<int64_t>(1, options_.prefetch)));
  }

 private:
  const Device device_;
  const JpegBatchesOptions options_;
};

// The input's spec with the image component replaced by the batch of the
// augmentation; unknown when the input's does not have it as a string [N]
// (the first batch then says what is wrong).
ElementSpec SpecOf(const ElementSpec& input, const JpegBatchesOptions& o) {
  if (!input.known()) return input;
  std::vector<ComponentSpec> out = input.components();
  for (ComponentSpec& c : out) {
    if (c.name != o.image) continue;
    if (c.dtype != DType::kString || c.shape.rank() != 1) return ElementSpec::Unknown();
    c.dtype = o.augment.dtype;
    c.shape = Shape({Shape::kUnknownDim, o.augment.size.height, o.augment.size.width, 3});
    return ElementSpec(std::move(out));
  }
  return ElementSpec::Unknown();
}

}  // namespace

Dataset DecodeJpegBatchesToDevice(const Dataset& input, const Device& device,
                                  JpegBatchesOptions options) {
  const std::string where = fmt::format("{}({})", kKind, device.ToString());
  if (options.prefetch < 0) {
    return Dataset::FromError(Status::InvalidArgument(
        fmt::format("{}: prefetch must be >= 0, not {}", where, options.prefetch)));
  }
  if (options.stream != nullptr && !(options.stream->device() == device)) {
    return Dataset::FromError(Status::InvalidArgument(
        fmt::format("{}: the stream is on {}, not {}", where, options.stream->device().ToString(),
                    device.ToString())));
  }
  if (Result<const gpu_internal::DeviceRuntime*> runtime = gpu_internal::GetDeviceRuntime(device);
      !runtime.ok()) {
    return Dataset::FromError(runtime.status().WithContext(where));
  }
  ElementSpec spec = SpecOf(input.element_spec(), options);
  // skip_bad_images may drop a whole batch.
  const int64_t cardinality = options.skip_bad_images && input.cardinality() >= 0
                                  ? kUnknownCardinality
                                  : input.cardinality();
  return Dataset(std::make_shared<JpegBatchesNode>(input, device, std::move(options),
                                                   std::move(spec), cardinality));
}

}  // namespace sluice::gpu
