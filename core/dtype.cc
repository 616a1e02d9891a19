#include "sluice/core/dtype.h"

#include <string>

namespace sluice {

size_t DTypeSize(DType dtype) {
  return VisitDType(dtype, [](auto v) { return sizeof(v); });
}

std::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kBool: return "bool";
    case DType::kUInt8: return "uint8";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kFloat16: return "float16";
    case DType::kBFloat16: return "bfloat16";
    case DType::kFloat32: return "float32";
    case DType::kFloat64: return "float64";
    case DType::kString: return "string";
  }
  return "invalid";
}

Result<DType> DTypeFromName(std::string_view name) {
  for (int i = 0; i < kNumDTypes; ++i) {
    const auto d = static_cast<DType>(i);
    if (DTypeName(d) == name) return d;
  }
  if (name == "half") return DType::kFloat16;
  if (name == "float") return DType::kFloat32;
  if (name == "double") return DType::kFloat64;
  if (name == "bytes") return DType::kString;
  return Status::InvalidArgument("unknown dtype '" + std::string(name) +
                                 "'; expected one of bool, uint8, int32, int64, float16, "
                                 "bfloat16, float32, float64, string");
}

}  // namespace sluice
