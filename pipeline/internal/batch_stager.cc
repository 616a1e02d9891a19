#include "sluice/pipeline/internal/batch_stager.h"

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <vector>

namespace sluice::gpu_internal {

// Names from the public gpu API used below.
using gpu::DeviceElement;
using gpu::Event;
using gpu::PinnedBuffer;
using sluice::DeviceTensor;

namespace {

constexpr size_t kStagingAlignment = 256;  // as cudaMalloc's, for fast DMA

size_t AlignUp(size_t n) {
  return (n + kStagingAlignment - 1) / kStagingAlignment * kStagingAlignment;
}

std::string ComponentName(const Element& element, size_t i) {
  const std::string& name = element.names()[i];
  return name.empty() ? fmt::format("component {}", i) : fmt::format("component '{}'", name);
}

}  // namespace

BatchStager::~BatchStager() {
  for (InFlight& f : in_flight_) (void)f.done->Synchronize();  // then the buffers go back
}

Status BatchStager::Retire(size_t keep, StagerCounters& counters) {
  while (!in_flight_.empty()) {
    SLUICE_ASSIGN_OR_RETURN(bool done, in_flight_.front().done->Query());
    if (!done) {
      if (in_flight_.size() < keep) break;
      const auto start = std::chrono::steady_clock::now();
      SLUICE_RETURN_IF_ERROR(in_flight_.front().done->Synchronize());
      counters.staging_waits++;
      counters.staging_wait_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(
                                      std::chrono::steady_clock::now() - start)
                                      .count();
    }
    in_flight_.pop_front();
  }
  return Status::OK();
}

Result<DeviceElement> BatchStager::Stage(const Element& element, StagerCounters& counters) {
  std::vector<size_t> offsets(element.size());
  size_t total = 0;
  for (size_t i = 0; i < element.size(); ++i) {
    if (element[i].dtype() == DType::kString) {
      return Status::InvalidArgument(fmt::format(
          "prefetch_to_device({}): {} is a string tensor {}; only numeric tensors go to a device",
          stream_.device().ToString(), ComponentName(element, i), element[i].shape().ToString()));
    }
    offsets[i] = total;
    total += AlignUp(element[i].byte_size());
  }
  SLUICE_RETURN_IF_ERROR(Retire(static_cast<size_t>(depth_), counters));
  Result<PinnedBuffer> staging = staging_.Acquire(total);
  if (!staging.ok() && staging.status().code() == StatusCode::kResourceExhausted &&
      !in_flight_.empty()) {
    SLUICE_RETURN_IF_ERROR(Retire(1, counters));  // wait for every copy, then retry once
    staging = staging_.Acquire(total);
  }
  SLUICE_RETURN_IF_ERROR(staging.status().WithContext(
      fmt::format("prefetch_to_device({}): staging", stream_.device().ToString())));
  char* base = static_cast<char*>(staging->data());
  for (size_t i = 0; i < element.size(); ++i) {
    if (element[i].byte_size() > 0) {
      std::memcpy(base + offsets[i], element[i].raw_data(), element[i].byte_size());
    }
  }

  std::vector<DeviceTensor> tensors;
  tensors.reserve(element.size());
  for (size_t i = 0; i < element.size(); ++i) {
    Result<DeviceTensor> t = AllocateDeviceTensor(allocator_, stream_.device(), element[i].dtype(),
                                                  element[i].shape(), stream_.id());
    SLUICE_RETURN_IF_ERROR(t.status().WithContext(fmt::format(
        "prefetch_to_device({}): {}", stream_.device().ToString(), ComponentName(element, i))));
    tensors.push_back(std::move(t).value());
  }
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Event> event, gpu::NewEvent(stream_.device()));
  std::shared_ptr<Event> done(std::move(event));
  Status status;
  for (size_t i = 0; i < tensors.size() && status.ok(); ++i) {
    status = CopyToDeviceAsync(base + offsets[i], tensors[i], stream_);
    if (status.ok() && tensors[i].byte_size() > 0) {
      counters.copies++;
      counters.bytes += static_cast<int64_t>(tensors[i].byte_size());
    }
  }
  if (status.ok()) status = stream_.Record(*done);
  if (!status.ok()) {
    (void)stream_.Synchronize();  // copies already queued still read `staging`
    return status;
  }
  in_flight_.push_back({done, std::move(staging).value()});
  return DeviceElement(std::move(tensors), element.shared_names(), std::move(done));
}

}  // namespace sluice::gpu_internal
