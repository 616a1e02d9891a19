// Tensor bundle checkpoints: TensorFlow's golden checkpoint read exactly,
// our writer's output round-tripped, corruption of either file giving
// DataLoss (never a crash), and atomic publication.
#include "sluice/records/tensor_bundle.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "internal_json.h"
#include "sluice/records/crc32c.h"
#include "test_util.h"

namespace sluice {
namespace {

using testing::Json;
using testing::ReadFileOrDie;
using testing::ScratchDir;
using testing::TestDataPath;
using testing::WriteFileOrDie;

std::string HexDecode(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

// The manifest's values as a tensor of `dtype` and `shape`.
Tensor FromManifest(const Json& entry) {
  DType dtype = DTypeFromName(entry["dtype"].str()).value();
  std::vector<int64_t> dims;
  for (const Json& d : entry["shape"].array()) dims.push_back(d.int64());
  const Shape shape(dims);
  Tensor t = Tensor::Allocate(dtype, shape).value();
  const auto& vals = entry["values"].array();
  EXPECT_EQ(static_cast<int64_t>(vals.size()), t.num_elements());
  std::vector<std::string> strings;
  for (size_t i = 0; i < vals.size(); ++i) {
    const std::string& s = vals[i].str();
    switch (dtype) {
      case DType::kFloat32: {
        uint32_t bits = static_cast<uint32_t>(std::stoul(s, nullptr, 16));
        std::memcpy(&t.flat<float>()[i], &bits, 4);
        break;
      }
      case DType::kFloat64: {
        uint64_t bits = std::stoull(s, nullptr, 16);
        std::memcpy(&t.flat<double>()[i], &bits, 8);
        break;
      }
      case DType::kFloat16: {
        const auto bits = static_cast<uint16_t>(std::stoul(s, nullptr, 16));
        std::memcpy(static_cast<void*>(&t.flat<float16>()[i]), &bits, 2);
        break;
      }
      case DType::kBool: t.flat<bool>()[i] = vals[i].boolean(); break;
      case DType::kInt32: t.flat<int32_t>()[i] = static_cast<int32_t>(vals[i].int64()); break;
      case DType::kInt64: t.flat<int64_t>()[i] = vals[i].int64(); break;
      case DType::kString: strings.push_back(HexDecode(s)); break;
      default: ADD_FAILURE() << "dtype " << DTypeName(dtype);
    }
  }
  if (dtype == DType::kString) {
    std::vector<std::string_view> views(strings.begin(), strings.end());
    return Tensor::FromStrings(views, shape).value();
  }
  return t;
}

TEST(TensorBundleTest, ReadsTensorFlowGoldenCheckpoint) {
  const std::string prefix = TestDataPath("checkpoint/golden");
  SLUICE_ASSERT_OK_AND_ASSIGN(BundleReader reader, BundleReader::Open(prefix));
  const Json manifest = Json::Parse(ReadFileOrDie(TestDataPath("checkpoint/golden_manifest.json")));
  std::vector<std::string> expected_keys;
  for (const auto& [key, value] : manifest.object()) {
    if (key != "__tensorflow_version__") expected_keys.push_back(key);
  }
  EXPECT_EQ(reader.Keys(), expected_keys);
  EXPECT_EQ(reader.num_shards(), 1);
  ASSERT_NE(std::find(expected_keys.begin(), expected_keys.end(), "_CHECKPOINTABLE_OBJECT_GRAPH"),
            expected_keys.end());
  ASSERT_NE(
      std::find(expected_keys.begin(), expected_keys.end(), "weights/.ATTRIBUTES/VARIABLE_VALUE"),
      expected_keys.end());
  for (const std::string& key : expected_keys) {
    SCOPED_TRACE(key);
    const Tensor want = FromManifest(manifest[key]);
    SLUICE_ASSERT_OK_AND_ASSIGN(BundleEntry entry, reader.Entry(key));
    ASSERT_TRUE(entry.dtype.has_value());
    EXPECT_EQ(*entry.dtype, want.dtype());
    EXPECT_EQ(entry.tf_dtype, TFDataType(want.dtype()));
    EXPECT_EQ(entry.shape, want.shape());
    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor got, reader.Lookup(key));
    EXPECT_TRUE(Identical(got, want)) << got.DebugString() << " vs " << want.DebugString();
  }
  // A few values spelled out, independent of the manifest.
  EXPECT_EQ(reader.Lookup("step/.ATTRIBUTES/VARIABLE_VALUE")->scalar<int64_t>(), -9007199254740993);
  EXPECT_EQ(reader.Lookup("name/.ATTRIBUTES/VARIABLE_VALUE")->scalar<std::string_view>(),
            std::string_view("caf\xc3\xa9 \x00"
                             "bytes",
                             12));
  EXPECT_EQ(reader.Lookup("weights/.ATTRIBUTES/VARIABLE_VALUE")->flat<float>()[0], 1.5f);
  EXPECT_EQ(reader.Lookup("vec/.ATTRIBUTES/VARIABLE_VALUE")->flat<double>()[1], -1e300);
  SLUICE_EXPECT_ERROR(reader.Lookup("nope"), StatusCode::kNotFound, "nope");
  SLUICE_EXPECT_ERROR(reader.Entry(""), StatusCode::kNotFound, "no tensor");
}

// Writing TensorFlow's tensors back in the order of their data offsets gives
// byte-identical files: same data layout, same table blocks and footer.
TEST(TensorBundleTest, RewritingGoldenIsByteIdentical) {
  const std::string prefix = TestDataPath("checkpoint/golden");
  SLUICE_ASSERT_OK_AND_ASSIGN(BundleReader reader, BundleReader::Open(prefix));
  std::vector<std::pair<int64_t, std::string>> by_offset;
  for (const std::string& key : reader.Keys())
    by_offset.emplace_back(reader.Entry(key)->offset, key);
  std::sort(by_offset.begin(), by_offset.end());
  ScratchDir dir;
  SLUICE_ASSERT_OK_AND_ASSIGN(BundleWriter w, BundleWriter::Create(dir.file("copy")));
  for (const auto& [offset, key] : by_offset) SLUICE_ASSERT_OK(w.Add(key, *reader.Lookup(key)));
  SLUICE_ASSERT_OK(w.Finish());
  EXPECT_EQ(ReadFileOrDie(dir.file("copy.data-00000-of-00001")),
            ReadFileOrDie(prefix + ".data-00000-of-00001"));
  EXPECT_EQ(ReadFileOrDie(dir.file("copy.index")), ReadFileOrDie(prefix + ".index"));
}

TEST(TensorBundleTest, DTypeMapping) {
  for (int i = 0; i < kNumDTypes; ++i) {
    const auto d = static_cast<DType>(i);
    EXPECT_EQ(DTypeFromTFDataType(TFDataType(d)), d);
  }
  EXPECT_EQ(TFDataType(DType::kFloat32), 1);
  EXPECT_EQ(TFDataType(DType::kString), 7);
  EXPECT_EQ(TFDataType(DType::kFloat16), 19);
  EXPECT_EQ(TFDataType(DType::kBFloat16), 14);
  EXPECT_FALSE(DTypeFromTFDataType(8).has_value());  // complex64
  EXPECT_EQ(BundleDataFilename("a/b", 3, 12), "a/b.data-00003-of-00012");
}

std::vector<std::pair<std::string, Tensor>> SampleTensors() {
  std::vector<std::pair<std::string, Tensor>> out;
  out.emplace_back(
      "w",
      Tensor::FromVector<float>(std::vector<float>{1, -2, 3.5f, 0, 7, 8}, Shape{2, 3}).value());
  out.emplace_back("a/step", Tensor::Scalar<int64_t>(42));
  out.emplace_back("b/flags", Tensor::Zeros(DType::kBool, Shape{0}).value());
  const std::array<bool, 3> bools{true, false, true};
  out.emplace_back("b/bools",
                   Tensor::FromVector<bool>(std::span<const bool>(bools), Shape{3}).value());
  out.emplace_back("c/u8", Tensor::FromVector<uint8_t>(std::vector<uint8_t>{0, 255, 7}).value());
  out.emplace_back("d/i32", Tensor::FromVector<int32_t>(std::vector<int32_t>{-1, 1 << 30}).value());
  out.emplace_back("e/f64", Tensor::Scalar<double>(-0.0));
  out.emplace_back("f/half",
                   Tensor::FromVector<float16>(std::vector<float16>{float16(1.5f)}).value());
  out.emplace_back("g/bf16",
                   Tensor::FromVector<bfloat16>(std::vector<bfloat16>{bfloat16(-3.0f)}).value());
  out.emplace_back("s/one", Tensor::StringScalar("hello"));
  out.emplace_back(
      "s/many",
      Tensor::FromStrings({"", "x", std::string(300, 'z'), std::string("\xff\x00", 2)}).value());
  out.emplace_back("s/none",
                   Tensor::FromStrings(std::span<const std::string_view>(), Shape{0, 2}).value());
  out.emplace_back("zz/empty", Tensor::Zeros(DType::kInt64, Shape{3, 0}).value());
  return out;
}

void WriteBundle(const std::string& prefix,
                 const std::vector<std::pair<std::string, Tensor>>& tensors) {
  SLUICE_ASSERT_OK_AND_ASSIGN(BundleWriter w, BundleWriter::Create(prefix));
  for (const auto& [key, t] : tensors) SLUICE_ASSERT_OK(w.Add(key, t));
  SLUICE_ASSERT_OK(w.Finish());
}

void ExpectBundle(const std::string& prefix,
                  const std::vector<std::pair<std::string, Tensor>>& tensors) {
  SLUICE_ASSERT_OK_AND_ASSIGN(BundleReader r, BundleReader::Open(prefix));
  std::vector<std::string> keys;
  for (const auto& [key, t] : tensors) keys.push_back(key);
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(r.Keys(), keys);
  for (const auto& [key, t] : tensors) {
    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor got, r.Lookup(key));
    EXPECT_TRUE(Identical(got, t)) << key << ": " << got.DebugString() << " vs " << t.DebugString();
  }
}

TEST(TensorBundleTest, WriterRoundTrips) {
  ScratchDir dir;
  auto tensors = SampleTensors();
  WriteBundle(dir.file("ckpt-1"), tensors);
  ExpectBundle(dir.file("ckpt-1"), tensors);
  EXPECT_TRUE(std::filesystem::exists(dir.file("ckpt-1.data-00000-of-00001")));
  // Only the two published files remain (no temporaries).
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()),
                          std::filesystem::directory_iterator()),
            2);
}

TEST(TensorBundleTest, ManyKeysSpanSeveralIndexBlocks) {
  ScratchDir dir;
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (int i = 0; i < 6000; ++i) {
    tensors.emplace_back("model/layer_" + std::to_string(i) + "/kernel/.ATTRIBUTES/VARIABLE_VALUE",
                         Tensor::Scalar<int32_t>(i));
  }
  WriteBundle(dir.file("big"), tensors);
  EXPECT_GT(ReadFileOrDie(dir.file("big.index")).size(), size_t{262144});
  ExpectBundle(dir.file("big"), tensors);
}

TEST(TensorBundleTest, WriterRejectsBadKeys) {
  ScratchDir dir;
  SLUICE_ASSERT_OK_AND_ASSIGN(BundleWriter w, BundleWriter::Create(dir.file("k")));
  SLUICE_EXPECT_ERROR(w.Add("", Tensor::Scalar<int32_t>(1)), StatusCode::kInvalidArgument,
                      "reserved");
  // The error sticks: nothing is published.
  SLUICE_EXPECT_ERROR(w.Finish(), StatusCode::kInvalidArgument, "reserved");
  EXPECT_FALSE(std::filesystem::exists(dir.file("k.index")));
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(TensorBundleTest, FailedFinishLeavesPreviousCheckpoint) {
  ScratchDir dir;
  const std::string prefix = dir.file("ckpt");
  const auto old_tensors = SampleTensors();
  WriteBundle(prefix, old_tensors);
  {
    SLUICE_ASSERT_OK_AND_ASSIGN(BundleWriter w, BundleWriter::Create(prefix));
    SLUICE_ASSERT_OK(w.Add("w", Tensor::Scalar<float>(9)));
    SLUICE_EXPECT_ERROR(w.Add("w", Tensor::Scalar<float>(10)), StatusCode::kInvalidArgument,
                        "duplicate key");
    EXPECT_FALSE(w.Finish().ok());
  }
  ExpectBundle(prefix, old_tensors);
  {
    // Abandoned mid-save (destroyed without Finish).
    SLUICE_ASSERT_OK_AND_ASSIGN(BundleWriter w, BundleWriter::Create(prefix));
    SLUICE_ASSERT_OK(w.Add("w", Tensor::Scalar<float>(9)));
  }
  ExpectBundle(prefix, old_tensors);
}

TEST(TensorBundleTest, FailedIndexRenameRestoresPreviousData) {
  ScratchDir dir;
  const std::string prefix = dir.file("ckpt");
  WriteBundle(prefix, SampleTensors());
  const std::string data_path = prefix + ".data-00000-of-00001";
  const std::string old_data = ReadFileOrDie(data_path);
  // A non-empty folder where the index goes makes its rename fail after the
  // data file was renamed: the previous data file must come back.
  std::filesystem::remove(prefix + ".index");
  std::filesystem::create_directories(prefix + ".index/x");
  {
    SLUICE_ASSERT_OK_AND_ASSIGN(BundleWriter w, BundleWriter::Create(prefix));
    SLUICE_ASSERT_OK(w.Add("other", Tensor::Scalar<float>(9)));
    EXPECT_FALSE(w.Finish().ok());
  }
  EXPECT_EQ(ReadFileOrDie(data_path), old_data);
  // Nothing else is left behind: the data file and the folder.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()),
                          std::filesystem::directory_iterator()),
            2);
}

// Reads every tensor; returns the first error (or OK).
Status ReadAll(const std::string& index, const std::string& data) {
  SLUICE_ASSIGN_OR_RETURN(BundleReader r, BundleReader::Open(NewMemoryFile("m.index", index),
                                                             NewMemoryFile("m.data", data)));
  for (const std::string& key : r.Keys()) {
    Result<BundleEntry> e = r.Entry(key);
    if (!e.ok()) return e.status();
    Result<Tensor> t = r.Lookup(key);
    if (!t.ok()) return t.status();
  }
  return Status::OK();
}

TEST(TensorBundleTest, CorruptIndexIsDataLoss) {
  const std::string prefix = TestDataPath("checkpoint/golden");
  const std::string index = ReadFileOrDie(prefix + ".index");
  const std::string data = ReadFileOrDie(prefix + ".data-00000-of-00001");
  SLUICE_ASSERT_OK(ReadAll(index, data));
  for (size_t n = 0; n < index.size(); ++n) {
    const Status s = ReadAll(index.substr(0, n), data);
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << n << ": " << s;
  }
  for (size_t i = 0; i < index.size(); ++i) {
    std::string bad = index;
    bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    const Status s = ReadAll(bad, data);
    // Only the footer's padding is unprotected.
    if (s.ok()) {
      EXPECT_GE(i, index.size() - 48) << i;
      continue;
    }
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << i << ": " << s;
  }
}

TEST(TensorBundleTest, CorruptDataIsDataLoss) {
  const std::string prefix = TestDataPath("checkpoint/golden");
  const std::string index = ReadFileOrDie(prefix + ".index");
  const std::string data = ReadFileOrDie(prefix + ".data-00000-of-00001");
  for (size_t n = 0; n < data.size(); ++n) {
    const Status s = ReadAll(index, data.substr(0, n));
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << n << ": " << s;
  }
  for (size_t i = 0; i < data.size(); ++i) {
    std::string bad = data;
    bad[i] = static_cast<char>(bad[i] ^ 0x01);
    const Status s = ReadAll(index, bad);
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << i << ": " << s;
    EXPECT_NE(s.message().find("m.data"), std::string_view::npos) << s;
  }
}

TEST(TensorBundleTest, MissingFiles) {
  ScratchDir dir;
  SLUICE_EXPECT_ERROR(BundleReader::Open(dir.file("none")), StatusCode::kNotFound, "none.index");
  WriteBundle(dir.file("x"), SampleTensors());
  std::filesystem::remove(dir.file("x.data-00000-of-00001"));
  SLUICE_ASSERT_OK_AND_ASSIGN(BundleReader r, BundleReader::Open(dir.file("x")));
  SLUICE_EXPECT_ERROR(r.Lookup("w"), StatusCode::kNotFound, "x.data-00000-of-00001");
}

// For tests/interop/checkpoint_bundle.sh: with SLUICE_BUNDLE_INTEROP_PREFIX
// set, writes SampleTensors() (plus a larger random-ish tensor) there.
TEST(TensorBundleTest, InteropWrite) {
  const char* prefix = std::getenv("SLUICE_BUNDLE_INTEROP_PREFIX");
  if (prefix == nullptr) GTEST_SKIP() << "SLUICE_BUNDLE_INTEROP_PREFIX not set";
  auto tensors = SampleTensors();
  std::vector<float> big(70000);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i) * 0.5f - 1000.0f;
  tensors.emplace_back(
      "big/.ATTRIBUTES/VARIABLE_VALUE",
      Tensor::FromVector<float>(std::span<const float>(big), Shape{700, 100}).value());
  WriteBundle(prefix, tensors);
}

}  // namespace
}  // namespace sluice
