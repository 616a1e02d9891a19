// JpegBatchesStats, and JpegBatchesToDevice (jpeg_batches.h): the stage
// (jpeg_batches_stage.cc) read through its Iterator, each Element's device
// tensors handed out as a DeviceElement.
#include "sluice/pipeline/cuda/jpeg_batches.h"

#include <string>
#include <utility>
#include <vector>

namespace sluice::gpu {

JpegDecodeStats JpegBatchesStats::decoder_stats() const {
  std::lock_guard lock(mu_);
  return decoder_;
}
int64_t JpegBatchesStats::skipped_images() const {
  std::lock_guard lock(mu_);
  return skipped_;
}
JpegStageTimes JpegBatchesStats::stage_times() const {
  std::lock_guard lock(mu_);
  return times_;
}
void JpegBatchesStats::AddInputTime(int64_t ns) {
  std::lock_guard lock(mu_);
  times_.input_ns += ns;
}
void JpegBatchesStats::AddDecode(const JpegDecodeStats& decoder, int64_t skipped, int64_t ns) {
  std::lock_guard lock(mu_);
  decoder_ = decoder;
  skipped_ += skipped;
  times_.decode_ns += ns;
}
void JpegBatchesStats::AddBatch(int64_t augment_ns) {
  std::lock_guard lock(mu_);
  times_.augment_ns += augment_ns;
  ++times_.batches;
}

struct JpegBatchIterator::State {
  explicit State(Iterator it) : input(std::move(it)) {}
  Iterator input;
  std::shared_ptr<JpegBatchesStats> stats;
  std::unique_ptr<Stream> events;  // records the (complete) events of the batches
};

JpegBatchIterator::JpegBatchIterator(std::unique_ptr<State> state) : state_(std::move(state)) {}
JpegBatchIterator::JpegBatchIterator(JpegBatchIterator&&) noexcept = default;
JpegBatchIterator& JpegBatchIterator::operator=(JpegBatchIterator&&) noexcept = default;
JpegBatchIterator::~JpegBatchIterator() = default;

JpegDecodeStats JpegBatchIterator::decoder_stats() const { return state_->stats->decoder_stats(); }
int64_t JpegBatchIterator::skipped_images() const { return state_->stats->skipped_images(); }
JpegStageTimes JpegBatchIterator::stage_times() const { return state_->stats->stage_times(); }
Iterator& JpegBatchIterator::iterator() { return state_->input; }

Result<std::optional<DeviceElement>> JpegBatchIterator::Next() {
  SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, state_->input.next());
  if (!e) return std::optional<DeviceElement>();
  std::vector<DeviceTensor> components;
  components.reserve(e->size());
  for (const Tensor& t : e->components()) components.emplace_back(t);
  // The stage handed the batch out once its work on the device was done.
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Event> event, NewEvent(state_->events->device()));
  SLUICE_RETURN_IF_ERROR(state_->events->Record(*event));
  return std::optional<DeviceElement>(
      DeviceElement(std::move(components), e->shared_names(), std::move(event)));
}

Result<JpegBatchIterator> JpegBatchesToDevice(const Dataset& input, const Device& device,
                                              const JpegBatchesOptions& options) {
  JpegBatchesOptions o = options;
  if (o.stats == nullptr) o.stats = std::make_shared<JpegBatchesStats>();
  std::shared_ptr<JpegBatchesStats> stats = o.stats;
  SLUICE_ASSIGN_OR_RETURN(Iterator it,
                          DecodeJpegBatchesToDevice(input, device, std::move(o)).iterator());
  auto state = std::make_unique<JpegBatchIterator::State>(std::move(it));
  state->stats = std::move(stats);
  SLUICE_ASSIGN_OR_RETURN(state->events, NewStream(device));
  return JpegBatchIterator(std::move(state));
}

}  // namespace sluice::gpu
