#include "sluice/nn/device.h"

#include <cctype>
#include <charconv>

namespace sluice::nn {

Result<Device> Device::Parse(std::string_view text) {
  std::string lower;
  for (char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string_view kind = lower;
  int index = 0;
  if (size_t colon = lower.find(':'); colon != std::string::npos) {
    kind = std::string_view(lower).substr(0, colon);
    std::string_view digits = std::string_view(lower).substr(colon + 1);
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty() || index < 0) {
      return Status::InvalidArgument("device \"" + std::string(text) +
                                     "\": the index after ':' must be a number >= 0");
    }
  }
  if (kind == "cpu") return Device{DeviceKind::kCpu, index};
  if (kind == "gpu" || kind == "cuda") return Device{DeviceKind::kGpu, index};
  return Status::InvalidArgument("unknown device \"" + std::string(text) +
                                 "\" (expected cpu, gpu or gpu:N)");
}

std::string Device::ToString() const {
  return std::string(kind == DeviceKind::kCpu ? "cpu:" : "gpu:") + std::to_string(index);
}

}  // namespace sluice::nn
