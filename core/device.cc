#include "sluice/core/device.h"

#include <cctype>
#include <charconv>

namespace sluice {

Result<Device> Device::Parse(std::string_view name) {
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument("device \"" + std::string(name) + "\": " + std::string(why));
  };
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string_view rest = lower;
  for (std::string_view prefix : {"/device:", "/"}) {
    if (rest.starts_with(prefix)) {
      rest.remove_prefix(prefix.size());
      break;
    }
  }
  DeviceKind kind;
  if (rest.starts_with("cpu")) {
    kind = DeviceKind::kCpu;
    rest.remove_prefix(3);
  } else if (rest.starts_with("gpu")) {
    kind = DeviceKind::kGpu;
    rest.remove_prefix(3);
  } else if (rest.starts_with("cuda")) {
    kind = DeviceKind::kGpu;
    rest.remove_prefix(4);
  } else {
    return bad("expected cpu, cpu:0, gpu or gpu:N (TensorFlow's /device:GPU:N too)");
  }
  int index = 0;
  if (!rest.empty()) {
    if (rest.size() < 2 || rest[0] != ':') return bad("expected ':' and an index after the kind");
    const char* end = rest.data() + rest.size();
    auto [ptr, ec] = std::from_chars(rest.data() + 1, end, index);
    if (ec != std::errc() || ptr != end || index < 0) {
      return bad("the index after ':' must be a number >= 0");
    }
  }
  return Device(kind, index);
}

std::string Device::ToString() const {
  return std::string(is_cpu() ? "cpu:" : "gpu:") + std::to_string(index_);
}

}  // namespace sluice
