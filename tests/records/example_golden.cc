#include "example_golden.h"

#include <bit>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "test_util.h"

namespace sluice::testing {
namespace {

DType DTypeFromGolden(const std::string& name) {
  if (name == "int64") return DType::kInt64;
  if (name == "float32") return DType::kFloat32;
  if (name == "string") return DType::kString;
  throw std::runtime_error("golden: unexpected dtype " + name);
}

Shape ShapeFromGolden(const Json& dims) {
  std::vector<int64_t> d;
  for (const Json& x : dims.array()) d.push_back(x.int64());
  return Shape(d);
}

float FloatFromGolden(const Json& v) {
  if (v.type() == Json::Type::kString) {
    return std::bit_cast<float>(static_cast<uint32_t>(std::stoul(v.str(), nullptr, 16)));
  }
  return std::strtof(v.str().c_str(), nullptr);
}

// Values of `dtype` from a scalar or an array of golden values.
Tensor ValuesTensor(DType dtype, const Json& values, const Shape& shape) {
  std::vector<const Json*> items;
  if (values.type() == Json::Type::kArray) {
    for (const Json& v : values.array()) items.push_back(&v);
  } else {
    items.push_back(&values);
  }
  switch (dtype) {
    case DType::kInt64: {
      std::vector<int64_t> v;
      for (const Json* j : items) v.push_back(j->int64());
      return Tensor::FromVector<int64_t>(v, shape).value();
    }
    case DType::kFloat32: {
      std::vector<float> v;
      for (const Json* j : items) v.push_back(FloatFromGolden(*j));
      return Tensor::FromVector<float>(v, shape).value();
    }
    default: {
      std::vector<std::string> bytes;
      for (const Json* j : items) bytes.push_back(FromHex(j->str()));
      std::vector<std::string_view> views(bytes.begin(), bytes.end());
      return Tensor::FromStrings(views, shape).value();
    }
  }
}

}  // namespace

std::vector<std::string> ReadTFRecordPayloads(const std::string& path) {
  const std::string file = ReadFileOrDie(path);
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos + 12 <= file.size()) {
    uint64_t len;
    std::memcpy(&len, file.data() + pos, 8);
    pos += 12;  // length and its CRC
    if (len > file.size() - pos || file.size() - pos - len < 4) {
      ADD_FAILURE() << "truncated TFRecord in " << path;
      break;
    }
    out.push_back(file.substr(pos, len));
    pos += len + 4;  // payload and its CRC
  }
  EXPECT_EQ(pos, file.size()) << path;
  return out;
}

std::string FromHex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

std::string ToHex(std::string_view bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

Json ReadGoldenJson(const std::string& name) {
  return Json::Parse(ReadFileOrDie(TestDataPath("tf/" + name)));
}

ParseSpec GoldenSpec(const Json& spec) {
  ParseSpec out;
  for (const auto& [key, s] : spec.object()) {
    const std::string& type = s["type"].str();
    const DType dtype = DTypeFromGolden(s["dtype"].str());
    if (type == "VarLenFeature") {
      out.emplace_back(key, VarLenFeature(dtype));
      continue;
    }
    const Shape shape = ShapeFromGolden(s["shape"]);
    std::optional<Tensor> def;
    if (s.has("default_value") && !s["default_value"].is_null()) {
      def = ValuesTensor(dtype, s["default_value"], type == "FixedLenFeature" ? shape : Shape{});
    }
    if (type == "FixedLenFeature") {
      out.emplace_back(key, FixedLenFeature(dtype, shape, def));
    } else {
      const bool allow_missing = s.has("allow_missing") && s["allow_missing"].boolean();
      out.emplace_back(key, FixedLenSequenceFeature(dtype, shape, allow_missing, def));
    }
  }
  return out;
}

Tensor GoldenTensor(const Json& t) {
  const DType dtype = DTypeFromGolden(t["dtype"].str());
  return ValuesTensor(dtype, t["values"], ShapeFromGolden(t["shape"]));
}

std::string CompareGolden(const Json& golden, const Tensor& actual, const Tensor* row_lengths,
                          bool batch) {
  if (!golden.has("sparse")) {
    const Tensor expected = GoldenTensor(golden);
    if (!Identical(expected, actual)) {
      return "expected " + expected.DebugString(64) + "\n  actual " + actual.DebugString(64);
    }
    return "";
  }
  // Sparse: values must match ours; indices and dense_shape follow from
  // the row lengths.
  const Tensor values = GoldenTensor(golden["values"]);
  if (!Identical(values, actual)) {
    return "sparse values: expected " + values.DebugString(64) + "\n  actual " +
           actual.DebugString(64);
  }
  std::vector<int64_t> indices;
  std::vector<int64_t> dense_shape;
  if (batch) {
    if (row_lengths == nullptr) return "missing row lengths";
    int64_t max_len = 0;
    const auto lengths = row_lengths->flat<int64_t>();
    for (size_t r = 0; r < lengths.size(); ++r) {
      for (int64_t j = 0; j < lengths[r]; ++j) {
        indices.push_back(static_cast<int64_t>(r));
        indices.push_back(j);
      }
      max_len = std::max(max_len, lengths[r]);
    }
    dense_shape = {static_cast<int64_t>(lengths.size()), max_len};
  } else {
    for (int64_t j = 0; j < actual.num_elements(); ++j) indices.push_back(j);
    dense_shape = {actual.num_elements()};
  }
  const Tensor golden_indices = GoldenTensor(golden["indices"]);
  const auto gi = golden_indices.flat<int64_t>();
  if (!std::equal(gi.begin(), gi.end(), indices.begin(), indices.end())) {
    return "sparse indices differ: golden " + golden_indices.DebugString(64);
  }
  const Tensor golden_shape = GoldenTensor(golden["dense_shape"]);
  const auto gs = golden_shape.flat<int64_t>();
  if (!std::equal(gs.begin(), gs.end(), dense_shape.begin(), dense_shape.end())) {
    return "sparse dense_shape differs: golden " + golden_shape.DebugString();
  }
  return "";
}

}  // namespace sluice::testing
