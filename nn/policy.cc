#include "sluice/nn/policy.h"

#include <atomic>
#include <string>

namespace sluice::nn {
namespace {
std::atomic<DType> global_compute{DType::kFloat32};
}  // namespace

Result<DTypePolicy> DTypePolicy::FromName(std::string_view name) {
  if (name == "float32") return Float32();
  if (name == "mixed_bfloat16") return MixedBFloat16();
  std::string msg =
      "unknown dtype policy \"" + std::string(name) + "\": choose float32 or mixed_bfloat16";
  if (name == "mixed_float16")
    msg += " (mixed_float16 needs loss scaling, which sluice does not do)";
  return Status::InvalidArgument(msg);
}

std::string_view DTypePolicy::name() const {
  return compute_ == DType::kBFloat16 ? "mixed_bfloat16" : "float32";
}

void SetGlobalPolicy(const DTypePolicy& policy) {
  global_compute.store(policy.compute_dtype(), std::memory_order_relaxed);
}

DTypePolicy GlobalPolicy() {
  return global_compute.load(std::memory_order_relaxed) == DType::kBFloat16
             ? DTypePolicy::MixedBFloat16()
             : DTypePolicy::Float32();
}

}  // namespace sluice::nn
