// JpegBatchesToDevice (jpeg_batches.h): one batch per Next(), decoded on the
// stage's decode stream, augmented and copied on its output stream.
#include "sluice/pipeline/cuda/jpeg_batches.h"

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "sluice/core/rng.h"
#include "sluice/device/runtime.h"
#include "sluice/device/pinned_host_pool.h"

namespace sluice::gpu {

struct JpegBatchIterator::State {
  std::optional<Iterator> input;
  std::unique_ptr<Stream> owned_stream;
  Stream* stream = nullptr;  // the output stream: augmentation, copies, the elements' events
  std::unique_ptr<Stream> decode_stream;  // the decoder's (declared first: it outlives it)
  std::unique_ptr<JpegDecoder> decoder;
  std::optional<PinnedHostPool> staging;
  JpegBatchesOptions options;
  uint64_t batch = 0;

  // With options.prefetch > 0: the thread making batches ahead, and what
  // it made, in order; after an error or the end it stops, and that result
  // stays the last.
  std::thread worker;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Result<std::optional<DeviceElement>>> ready;  // guarded by mu
  bool stop = false;                                       // guarded by mu
  bool finished = false;  // guarded by mu: the worker made its last result
  int64_t skipped = 0;    // guarded by mu
  JpegDecodeStats stats;  // guarded by mu: the decoder's, after the last batch
  JpegStageTimes times;   // guarded by mu

  Result<std::optional<DeviceElement>> Make();  // one batch, on this thread
  void Work();

  void StopWorker() {
    {
      std::lock_guard lock(mu);
      stop = true;
    }
    cv.notify_all();
    if (worker.joinable()) worker.join();
  }
  ~State() { StopWorker(); }
};

void JpegBatchIterator::State::Work() {
  while (true) {
    {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return stop || ready.size() < static_cast<size_t>(options.prefetch); });
      if (stop) return;
    }
    Result<std::optional<DeviceElement>> r = Make();
    const bool last = !r.ok() || !r->has_value();
    {
      std::lock_guard lock(mu);
      ready.push_back(std::move(r));
      finished = last;
    }
    cv.notify_all();
    if (last) return;
  }
}

namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

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

}  // namespace

JpegBatchIterator::JpegBatchIterator(std::unique_ptr<State> state) : state_(std::move(state)) {}
JpegBatchIterator::JpegBatchIterator(JpegBatchIterator&&) noexcept = default;
JpegBatchIterator& JpegBatchIterator::operator=(JpegBatchIterator&&) noexcept = default;
JpegBatchIterator::~JpegBatchIterator() {
  if (state_ == nullptr) return;
  state_->StopWorker();  // no more work queued after this
  if (state_->stream != nullptr) (void)state_->stream->Synchronize();
}

JpegDecodeStats JpegBatchIterator::decoder_stats() const {
  std::lock_guard lock(state_->mu);
  return state_->stats;
}
int64_t JpegBatchIterator::skipped_images() const {
  std::lock_guard lock(state_->mu);
  return state_->skipped;
}
JpegStageTimes JpegBatchIterator::stage_times() const {
  std::lock_guard lock(state_->mu);
  return state_->times;
}

Result<std::optional<DeviceElement>> JpegBatchIterator::Next() {
  State& s = *state_;
  if (s.options.prefetch <= 0) return s.Make();
  std::unique_lock lock(s.mu);
  if (!s.worker.joinable()) s.worker = std::thread([&s] { s.Work(); });
  s.cv.wait(lock, [&] { return !s.ready.empty(); });
  if (s.ready.size() == 1 && s.finished) return s.ready.front();  // the last result, again
  Result<std::optional<DeviceElement>> r = std::move(s.ready.front());
  s.ready.pop_front();
  lock.unlock();
  s.cv.notify_all();
  return r;
}

Result<std::optional<DeviceElement>> JpegBatchIterator::State::Make() {
  State& s = *this;
  Stream& stream = *s.stream;
  while (true) {
    const int64_t t0 = NowNs();
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, s.input->next());
    const int64_t t1 = NowNs();
    {
      std::lock_guard lock(s.mu);
      s.times.input_ns += t1 - t0;
    }
    if (!e) return std::optional<DeviceElement>();
    const uint64_t b = s.batch++;
    const std::vector<std::string>& names = e->names();
    size_t k = names.size();
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == s.options.image) k = i;
    }
    if (k == names.size()) {
      return Status::InvalidArgument("JpegBatchesToDevice: the elements have no component \"" +
                                     s.options.image + "\"");
    }
    const Tensor& images = (*e)[k];
    if (images.dtype() != DType::kString || images.shape().rank() != 1) {
      return Status::InvalidArgument(
          "JpegBatchesToDevice: component \"" + s.options.image +
          "\" must be a string tensor [N] (batch the input first), not " + images.DebugString());
    }
    auto bytes = images.flat<std::string_view>();
    std::vector<std::string> image_names;
    std::vector<EncodedJpeg> jpegs;
    for (size_t i = 0; i < bytes.size(); ++i) {
      image_names.push_back(s.options.image + " of batch " + std::to_string(b) + ", image " +
                            std::to_string(i));
    }
    for (size_t i = 0; i < bytes.size(); ++i) jpegs.push_back({bytes[i], image_names[i]});
    const int64_t t2 = NowNs();
    std::vector<Result<DeviceTensor>> results = s.decoder->DecodeEach(jpegs);
    const int64_t t3 = NowNs();
    std::vector<DeviceTensor> decoded;
    std::vector<size_t> kept;
    int64_t skipped = 0;
    for (size_t i = 0; i < results.size(); ++i) {
      if (results[i].ok()) {
        decoded.push_back(*std::move(results[i]));
        kept.push_back(i);
      } else if (s.options.skip_bad_images) {
        ++skipped;
      }
    }
    {
      std::lock_guard lock(s.mu);  // read by decoder_stats() and skipped_images()
      s.stats = s.decoder->stats();
      s.skipped += skipped;
      s.times.decode_ns += t3 - t2;
    }
    if (!s.options.skip_bad_images) {
      for (const Result<DeviceTensor>& r : results) SLUICE_RETURN_IF_ERROR(r.status());
    }
    if (decoded.empty()) continue;
    Rng rng(s.options.seed, b);
    // On the output stream after the decode: the next Next()'s decode (the
    // JPEG engines) overlaps this batch's augmentation and copies.
    SLUICE_ASSIGN_OR_RETURN(
        DeviceTensor x,
        RandomResizedCropBatchAfter(decoded, rng, *s.decode_stream, stream, s.options.augment));
    std::vector<DeviceTensor> components;
    auto staged = std::make_shared<std::vector<PinnedBuffer>>();
    for (size_t j = 0; j < e->size(); ++j) {
      if (j == k) {
        components.push_back(x);
        continue;
      }
      Tensor t = (*e)[j];
      if (t.dtype() == DType::kString) {
        return Status::InvalidArgument("JpegBatchesToDevice: component \"" + names[j] +
                                       "\" is a string tensor; drop it with a map before");
      }
      if (kept.size() != bytes.size()) {
        if (t.shape().rank() < 1 || t.shape().dim(0) != static_cast<int64_t>(bytes.size())) {
          return Status::InvalidArgument("JpegBatchesToDevice: component \"" + names[j] +
                                         "\" has no row per image to drop: " + t.DebugString());
        }
        SLUICE_ASSIGN_OR_RETURN(t, GatherRows(t, kept));
      }
      SLUICE_ASSIGN_OR_RETURN(PinnedBuffer buffer, s.staging->Acquire(t.byte_size() + 1));
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
    {
      std::lock_guard lock(s.mu);
      s.times.augment_ns += NowNs() - t3;
      ++s.times.batches;
    }
    return std::optional<DeviceElement>(DeviceElement(std::move(components), e->shared_names(),
                                                      std::shared_ptr<Event>(std::move(event))));
  }
}

Result<JpegBatchIterator> JpegBatchesToDevice(const Dataset& input, const Device& device,
                                              const JpegBatchesOptions& options) {
  if (options.prefetch < 0) {
    return Status::InvalidArgument("JpegBatchesToDevice: prefetch must be >= 0, not " +
                                   std::to_string(options.prefetch));
  }
  auto state = std::make_unique<JpegBatchIterator::State>();
  state->options = options;
  if (options.stream != nullptr) {
    if (!(options.stream->device() == device)) {
      return Status::InvalidArgument("JpegBatchesToDevice: the stream is on " +
                                     options.stream->device().ToString() + ", not " +
                                     device.ToString());
    }
    state->stream = options.stream;
  } else {
    SLUICE_ASSIGN_OR_RETURN(state->owned_stream, NewStream(device));
    state->stream = state->owned_stream.get();
  }
  SLUICE_ASSIGN_OR_RETURN(const gpu_internal::DeviceRuntime* runtime,
                          gpu_internal::GetDeviceRuntime(device));
  state->staging = runtime->staging;
  SLUICE_ASSIGN_OR_RETURN(state->decode_stream, NewStream(device));
  SLUICE_ASSIGN_OR_RETURN(state->decoder,
                          JpegDecoder::Create(*state->decode_stream, options.decoder));
  SLUICE_ASSIGN_OR_RETURN(Iterator it, input.iterator());
  state->input.emplace(std::move(it));
  return JpegBatchIterator(std::move(state));
}

}  // namespace sluice::gpu
