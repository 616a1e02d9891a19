// DecodeJpegBatchesToDevice (jpeg_batches.h): the stage. A producer task
// in the pipeline's arena makes the batches (JpegBatchMaker: decode on the
// decode stream, augmentation and copies on the output stream) while fewer
// than the buffer wait; each keeps its host input and batch index until it
// is handed out, for Save. Laid out as prefetch_to_device_stage.cc.
#include <fmt/format.h>

#include <condition_variable>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sluice/core/rng.h"
#include "sluice/device/pinned_host_pool.h"
#include "sluice/device/runtime.h"
#include "sluice/pipeline/cuda/jpeg_batches.h"
#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/node.h"
#include "sluice/pipeline/internal/state.h"

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
      return Status::InvalidArgument("component \"" + options_.image +
                                     "\" must be a string tensor [N] (batch the input first), not " +
                                     images.DebugString());
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
  std::unique_ptr<Stream> own_stream_;  // null when the stream is borrowed
  Stream* stream_ = nullptr;            // the output stream: augmentation, copies, events
  std::unique_ptr<Stream> decode_stream_;  // the decoder's (declared first: it outlives it)
  std::unique_ptr<JpegDecoder> decoder_;
  std::optional<PinnedHostPool> staging_;
};

class JpegBatchesIterator final : public pi::IteratorNode {
 public:
  JpegBatchesIterator(pi::IteratorContext* ctx, pi::StageCounters* counters,
                      std::unique_ptr<pi::IteratorNode> input, std::string name,
                      std::unique_ptr<JpegBatchMaker> maker,
                      std::shared_ptr<JpegBatchesStats> stats, int64_t depth)
      : IteratorNode(ctx, counters),
        input_(std::move(input)),
        name_(std::move(name)),
        stats_(std::move(stats)),
        depth_(depth),
        maker_(std::move(maker)) {}

  ~JpegBatchesIterator() override {
    std::unique_lock<std::mutex> l(mu_);
    stopping_ = true;
    cv_.wait(l, [&] { return !running_; });
    ReleaseLocked();
    // maker_ (destroyed next) waits for the work queued on its streams.
  }

  Status Save(pi::StateWriter& w) override {
    std::unique_lock<std::mutex> l(mu_);
    Quiesce(l);
    w.Tag(kKind);
    w.Bool(delivered_end_);
    w.Bool(input_ended_);
    w.U64(next_batch_);
    w.U64(static_cast<uint64_t>(replay_.size() + ready_.size()));
    Status s;
    auto put = [&](const Item& item) {
      w.U64(static_cast<uint64_t>(item.kind));
      if (item.kind == Kind::kError) w.Stat(item.error);
      if (item.kind == Kind::kElement) {
        w.U64(item.batch);
        if (s.ok()) s = w.Elem(item.host);
      }
    };
    for (const Item& item : ready_) put(item);  // older than replay_'s
    for (const Item& item : replay_) put(item);
    if (s.ok()) s = input_->Save(w);
    paused_ = false;
    LaunchLocked();
    return s;
  }

  Status Restore(pi::StateReader& r) override {
    std::unique_lock<std::mutex> l(mu_);
    Quiesce(l);
    ReleaseLocked();
    Status s = [&]() -> Status {
      SLUICE_RETURN_IF_ERROR(r.Tag(kKind));
      SLUICE_ASSIGN_OR_RETURN(delivered_end_, r.Bool());
      SLUICE_ASSIGN_OR_RETURN(input_ended_, r.Bool());
      SLUICE_ASSIGN_OR_RETURN(next_batch_, r.U64());
      SLUICE_ASSIGN_OR_RETURN(uint64_t n, r.U64());
      if (n > static_cast<uint64_t>(depth_) + 1) {
        return Status::DataLoss(fmt::format("iterator state: stage '{}' holds {} batches, "
                                            "more than its buffer of {}",
                                            name_, n, depth_));
      }
      for (uint64_t i = 0; i < n; ++i) {
        SLUICE_ASSIGN_OR_RETURN(uint64_t kind, r.U64());
        Item item;
        if (kind == static_cast<uint64_t>(Kind::kElement)) {
          item.kind = Kind::kElement;
          SLUICE_ASSIGN_OR_RETURN(item.batch, r.U64());
          if (item.batch >= next_batch_) {
            return Status::DataLoss(fmt::format(
                "iterator state: stage '{}': batch {} buffered, but only {} were read", name_,
                item.batch, next_batch_));
          }
          SLUICE_ASSIGN_OR_RETURN(item.host, r.Elem());
          item.charged = pi::ElementBytes(item.host);
          ctx()->memory().Charge(item.charged);
        } else if (kind == static_cast<uint64_t>(Kind::kError)) {
          item.kind = Kind::kError;
          SLUICE_RETURN_IF_ERROR(r.Stat(&item.error));
          if (item.error.ok()) return Status::DataLoss("iterator state: an OK error slot");
        } else if (kind == static_cast<uint64_t>(Kind::kEnd)) {
          item.kind = Kind::kEnd;
        } else {
          return Status::DataLoss(
              fmt::format("iterator state: stage '{}': unknown slot kind {}", name_, kind));
        }
        replay_.push_back(std::move(item));
      }
      return input_->Restore(r);
    }();
    paused_ = false;
    LaunchLocked();
    return s;
  }

 protected:
  pi::NextResult GetNext() override {
    std::unique_lock<std::mutex> l(mu_);
    if (delivered_end_) return std::optional<Element>();
    LaunchLocked();
    cv_.wait(l, [&] { return !ready_.empty() || (!running_ && ctx()->cancelled()); });
    if (ready_.empty()) return Status::Cancelled(name_ + ": the pipeline was cancelled");
    Item item = std::move(ready_.front());
    ready_.pop_front();
    ctx()->memory().Release(item.charged);
    if (item.kind == Kind::kEnd) delivered_end_ = true;
    LaunchLocked();
    l.unlock();
    switch (item.kind) {
      case Kind::kEnd:
        return std::optional<Element>();
      case Kind::kError:
        return item.error;
      case Kind::kElement:
        break;
    }
    // Normally complete: the batch was queued `buffer` batches ago.
    SLUICE_RETURN_IF_ERROR(item.made->Wait().WithContext(name_));
    std::vector<Tensor> tensors;
    tensors.reserve(item.made->size());
    for (const DeviceTensor& t : item.made->components()) tensors.push_back(t.storage());
    return std::optional<Element>(Element(std::move(tensors), item.host.shared_names()));
  }

 private:
  enum class Kind : uint8_t { kElement = 0, kError = 1, kEnd = 2 };
  struct Item {
    Kind kind = Kind::kElement;
    Element host;        // the input batch, kept until handed out, for Save
    uint64_t batch = 0;  // its index: the augmentation's Rng(seed, batch)
    std::optional<DeviceElement> made;
    Status error;
    int64_t charged = 0;  // host bytes charged to the RAM budget
  };

  // Stops the producer (it finishes the batch it is on).
  void Quiesce(std::unique_lock<std::mutex>& l) {
    paused_ = true;
    cv_.wait(l, [&] { return !running_; });
  }

  void ReleaseLocked() {
    for (const Item& item : ready_) ctx()->memory().Release(item.charged);
    for (const Item& item : replay_) ctx()->memory().Release(item.charged);
    ready_.clear();
    replay_.clear();
  }

  bool ShouldProduceLocked() const {
    if (stopping_ || paused_ || ctx()->cancelled()) return false;
    if (static_cast<int64_t>(ready_.size()) >= depth_) return false;
    if (replay_.empty() && input_ended_) return false;
    // Read-ahead within the RAM budget; the next batch is always made.
    return ready_.empty() || ctx()->memory().used() < ctx()->memory().limit();
  }

  void LaunchLocked() {
    if (running_ || !ShouldProduceLocked()) return;
    running_ = true;
    ctx()->Submit([this] { Produce(); });
  }

  // The producer: one task at a time, in the arena.
  void Produce() {
    std::unique_lock<std::mutex> l(mu_);
    while (ShouldProduceLocked()) {
      Item item;
      if (!replay_.empty()) {
        item = std::move(replay_.front());
        replay_.pop_front();
        ctx()->memory().Release(item.charged);
        item.charged = 0;
        l.unlock();
      } else {
        l.unlock();
        const int64_t t0 = pi::NowNs();
        pi::NextResult next = input_->Next();
        if (stats_ != nullptr) stats_->AddInputTime(pi::NowNs() - t0);
        if (!next.ok()) {
          item.kind = Kind::kError;
          item.error = next.status();
        } else if (!next->has_value()) {
          item.kind = Kind::kEnd;
        } else {
          item.host = std::move(**next);
          item.batch = next_batch_++;  // Save reads it quiesced
        }
      }
      bool skip = false;
      if (item.kind == Kind::kElement) {
        Result<std::optional<DeviceElement>> made = maker_->Make(item.host, item.batch);
        if (!made.ok()) {
          item.kind = Kind::kError;
          item.error = made.status().WithContext(name_);
          item.host = Element();
        } else if (!made->has_value()) {
          skip = true;  // every image dropped
        } else {
          item.made = *std::move(made);
          item.charged = pi::ElementBytes(item.host);
          ctx()->memory().Charge(item.charged);
        }
      }
      l.lock();
      if (skip) continue;
      if (item.kind == Kind::kEnd) input_ended_ = true;
      ready_.push_back(std::move(item));
      cv_.notify_all();
    }
    running_ = false;
    cv_.notify_all();
  }

  const std::unique_ptr<pi::IteratorNode> input_;  // the producer's (and Save/Restore's, quiesced)
  const std::string name_;
  const std::shared_ptr<JpegBatchesStats> stats_;
  const int64_t depth_;

  std::mutex mu_;
  std::condition_variable cv_;  // ready_ grew, or the producer stopped
  std::deque<Item> ready_;      // made (or errors, the end), oldest first
  std::deque<Item> replay_;     // restored, to make again before reading the input
  bool running_ = false;        // a Produce task is submitted or running
  bool paused_ = false;         // Save/Restore hold the producer
  bool stopping_ = false;       // the destructor
  bool input_ended_ = false;    // the end is in ready_ or replay_ (or was handed out)
  bool delivered_end_ = false;  // next() returned the end
  uint64_t next_batch_ = 0;     // batches read from the input: the next one's index

  // The producer's alone. Destroyed first, once the destructor has emptied
  // ready_ and replay_.
  const std::unique_ptr<JpegBatchMaker> maker_;
};

class JpegBatchesNode : public pi::DatasetNode {
 public:
  JpegBatchesNode(const Dataset& input, Device device, JpegBatchesOptions options,
                  ElementSpec spec, int64_t cardinality)
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
    return Dataset::FromError(Status::InvalidArgument(fmt::format(
        "{}: the stream is on {}, not {}", where, options.stream->device().ToString(),
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
