#include "sluice/gpu/stream.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <string>

#include "sluice/gpu/internal/device_runtime.h"
#include "sluice/gpu/internal/stream_backends.h"

namespace sluice::gpu {

Result<Device> Device::Parse(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string_view rest = lower;
  for (std::string_view prefix : {"/device:", "/"}) {
    if (rest.starts_with(prefix)) {
      rest.remove_prefix(prefix.size());
      break;
    }
  }
  Kind kind;
  if (rest.starts_with("gpu")) {
    kind = Kind::kGpu;
  } else if (rest.starts_with("cpu")) {
    kind = Kind::kHost;
  } else {
    return Status::InvalidArgument(
        fmt::format("device \"{}\": expected \"/gpu:<index>\" or \"/cpu:0\"", name));
  }
  rest.remove_prefix(3);
  int index = 0;
  if (!rest.empty()) {
    const char* end = rest.data() + rest.size();
    auto [ptr, ec] = rest.size() > 1 && rest[0] == ':'
                         ? std::from_chars(rest.data() + 1, end, index)
                         : std::from_chars_result{rest.data(), std::errc::invalid_argument};
    if (ec != std::errc() || ptr != end || index < 0) {
      return Status::InvalidArgument(
          fmt::format("device \"{}\": expected \"/gpu:<index>\" or \"/cpu:0\"", name));
    }
  }
  if (kind == Kind::kHost && index != 0) {
    return Status::InvalidArgument(fmt::format("device \"{}\": the host device is /cpu:0", name));
  }
  return Device(kind, index);
}

std::string Device::ToString() const {
  return fmt::format("/{}:{}", is_host() ? "cpu" : "gpu", index_);
}

Result<std::unique_ptr<Stream>> NewStream(const Device& device) {
  if (device.is_host()) return gpu_internal::NewHostStream();
  SLUICE_ASSIGN_OR_RETURN(const gpu_internal::DeviceRuntime* runtime,
                          gpu_internal::GetDeviceRuntime(device));
  return gpu_internal::NewCudaStream(device, runtime->cuda_ordinal);
}

Result<std::unique_ptr<Event>> NewEvent(const Device& device) {
  if (device.is_host()) return gpu_internal::NewHostEvent();
  SLUICE_ASSIGN_OR_RETURN(const gpu_internal::DeviceRuntime* runtime,
                          gpu_internal::GetDeviceRuntime(device));
  return gpu_internal::NewCudaEvent(device, runtime->cuda_ordinal);
}

}  // namespace sluice::gpu
