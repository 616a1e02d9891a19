// FixedLengthRecordDataset and NumpyDataset on the file source: the shared
// conformance suite over TF's and NumPy's goldens, errors, ignore_errors,
// random access and global_shuffle over token windows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "conformance.h"
#include "sluice/pipeline/fixed_length_record_dataset.h"
#include "sluice/pipeline/numpy_dataset.h"
#include "test_util.h"

namespace sluice {
namespace {

using testing::ReadAll;
using testing::RunConformance;
using testing::TestDataPath;

nlohmann::json Golden(const std::string& format) {
  std::ifstream in(TestDataPath(format + "/golden.json"));
  return nlohmann::json::parse(in);
}

std::string Unhex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out += static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16));
  }
  return out;
}

std::string StringElement(const std::string& bytes) {
  return Element({Tensor::StringScalar(bytes)}).DebugString(1000);
}

const nlohmann::json& Case(const nlohmann::json& g, const std::string& file) {
  for (const auto& c : g["cases"]) {
    if (c["file"] == file) return c;
  }
  ADD_FAILURE() << "no golden case " << file;
  static const nlohmann::json none;
  return none;
}

std::vector<std::string> FixedLengthWant(const nlohmann::json& c) {
  std::vector<std::string> want;
  for (const auto& hex : c["records"]) want.push_back(StringElement(Unhex(hex.get<std::string>())));
  return want;
}

std::string Fl(const std::string& f) { return TestDataPath("fixed_length/" + f); }

TEST(FixedLengthRecordDatasetTest, ConformanceOverTensorFlowGoldens) {
  const nlohmann::json g = Golden("fixed_length");
  const auto& basic = Case(g, "basic.bin");
  const auto& many = Case(g, "many.bin");
  std::vector<std::string> want = FixedLengthWant(basic);
  for (const auto& e : FixedLengthWant(many)) want.push_back(e);
  const FixedLengthRecordDatasetOptions basic_o{.header_bytes = 5, .footer_bytes = 3};
  // One format per dataset: both files share record_bytes only if equal, so
  // read them through interleave-free concatenation.
  auto make = [&](const std::string& b, const std::string& m, FixedLengthRecordDatasetOptions o) {
    return FixedLengthRecordDataset({Fl(b)}, 7, o)
        .concatenate(FixedLengthRecordDataset({Fl(m)}, 40,
                                              {.header_bytes = 10,
                                               .footer_bytes = 6,
                                               .compression = o.compression,
                                               .buffer_size = o.buffer_size}));
  };
  Dataset plain = make("basic.bin", "many.bin", basic_o);
  EXPECT_EQ(plain.cardinality(), 212);
  EXPECT_TRUE(
      FixedLengthRecordDataset({Fl("many.bin")}, 40, {.header_bytes = 10, .footer_bytes = 6})
          .random_access());
  RunConformance({.name = "fixed_length_none",
                  .make = [&](int) { return make("basic.bin", "many.bin", basic_o); },
                  .expected = want});
  FixedLengthRecordDatasetOptions gz = basic_o;
  gz.compression = Compression::kGzip;
  gz.buffer_size = 64;
  EXPECT_EQ(make("basic.bin.gz", "many.bin.gz", gz).cardinality(), kUnknownCardinality);
  RunConformance({.name = "fixed_length_gzip",
                  .make = [&](int) { return make("basic.bin.gz", "many.bin.gz", gz); },
                  .expected = want});
}

TEST(FixedLengthRecordDatasetTest, ParallelReadsRotateFiles) {
  // Three copies of plain16.bin, read 3 at a time: record by record in turn.
  const nlohmann::json g = Golden("fixed_length");
  const auto one = FixedLengthWant(Case(g, "plain16.bin"));
  std::vector<std::string> want;
  for (const auto& e : one) want.insert(want.end(), 3, e);
  const std::vector<std::string> files(3, Fl("plain16.bin"));
  RunConformance(
      {.name = "fixed_length_parallel",
       .make = [&](int) { return FixedLengthRecordDataset(files, 16, {.num_parallel_reads = 3}); },
       .expected = want});
}

TEST(FixedLengthRecordDatasetTest, PartialTailAsTensorFlowDoes) {
  const nlohmann::json g = Golden("fixed_length");
  const FixedLengthRecordDatasetOptions o{.header_bytes = 5, .footer_bytes = 3};
  // Uncompressed: the error before any record, naming the file.
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it,
                              FixedLengthRecordDataset({Fl("partial.bin")}, 7, o).iterator());
  SLUICE_EXPECT_ERROR(it.next(), StatusCode::kInvalidArgument, "partial.bin");
  // Compressed: the whole records, then DataLoss; ignore_errors keeps them.
  FixedLengthRecordDatasetOptions gz = o;
  gz.compression = Compression::kGzip;
  Dataset d = FixedLengthRecordDataset({Fl("partial.bin.gz"), Fl("basic.bin.gz")}, 7, gz);
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it2, d.iterator());
  const auto want = FixedLengthWant(Case(g, "partial.bin.gz"));
  for (const auto& w : want) {
    SLUICE_ASSERT_OK_AND_ASSIGN(auto e, it2.next());
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->DebugString(1000), w);
  }
  SLUICE_EXPECT_ERROR(it2.next(), StatusCode::kDataLoss, "not a multiple of record_bytes");
  std::vector<std::string> kept = want;
  for (const auto& e : FixedLengthWant(Case(g, "basic.bin.gz"))) kept.push_back(e);
  EXPECT_EQ(ReadAll(d.ignore_errors()), kept);
  RunConformance(
      {.name = "fixed_length_failing",
       .make = [&](int) { return FixedLengthRecordDataset({Fl("basic.bin")}, 7, o); },
       .expected = FixedLengthWant(Case(g, "basic.bin")),
       .make_failing = [&] { return FixedLengthRecordDataset({Fl("partial.bin")}, 7, o); },
       .error_substring = "not a multiple of record_bytes"});
  EXPECT_FALSE(FixedLengthRecordDataset({Fl("basic.bin")}, 0).status().ok());
}

TEST(FixedLengthRecordDatasetTest, GlobalShuffleIsAPermutation) {
  const nlohmann::json g = Golden("fixed_length");
  auto want = FixedLengthWant(Case(g, "many.bin"));
  auto make = [] {
    return FixedLengthRecordDataset({Fl("many.bin")}, 40, {.header_bytes = 10, .footer_bytes = 6})
        .global_shuffle({.seed = 11, .reshuffle_each_iteration = false});
  };
  RunConformance({.name = "fixed_length_global_shuffle",
                  .make = [&](int) { return make(); },
                  .max_save_positions = 16});
  auto got = ReadAll(make());
  EXPECT_NE(got, want);
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want);
}

// ---------------------------------------------------------------- NumPy

std::string Np(const std::string& f) { return TestDataPath("npy/" + f); }

// The rows of a golden array as elements (little-endian bytes -> tensors).
std::vector<Tensor> Rows(const nlohmann::json& a, DType dtype) {
  const std::string bytes = Unhex(a["le_hex"].get<std::string>());
  const auto shape = a["shape"].get<std::vector<int64_t>>();
  const Shape row(std::vector<int64_t>(shape.begin() + 1, shape.end()));
  const size_t row_bytes = bytes.size() / static_cast<size_t>(shape[0]);
  std::vector<Tensor> out;
  for (int64_t i = 0; i < shape[0]; ++i) {
    Tensor t = Tensor::Allocate(dtype, row).value();
    std::memcpy(t.raw_data(), bytes.data() + i * row_bytes, row_bytes);
    out.push_back(t);
  }
  return out;
}

TEST(NumpyDatasetTest, RowsOfGoldenFiles) {
  const nlohmann::json g = Golden("npy");
  struct F {
    std::string file;
    DType dtype;
  };
  for (const F& f : std::vector<F>{{"float32_10x3.npy", DType::kFloat32},
                                   {"int32_be_6x2.npy", DType::kInt32},
                                   {"float64_be_4.npy", DType::kFloat64},
                                   {"float16_3x4.npy", DType::kFloat16},
                                   {"bool_6.npy", DType::kBool},
                                   {"uint8_5x3.npy", DType::kUInt8},
                                   {"int32_4x2x3.npy", DType::kInt32},
                                   {"v2_float32_6x2.npy", DType::kFloat32},
                                   {"v3_int32_5.npy", DType::kInt32}}) {
    SCOPED_TRACE(f.file);
    std::vector<std::string> want;
    for (const Tensor& t : Rows(g["npy"][f.file], f.dtype))
      want.push_back(Element({t}).DebugString(1000));
    // Two copies of the file, read 2 at a time: each row twice in turn.
    std::vector<std::string> twice;
    for (const auto& w : want) twice.insert(twice.end(), 2, w);
    Dataset d =
        NumpyDataset({Np(f.file), Np(f.file)}, {.buffer_size = 40, .num_parallel_reads = 2});
    SLUICE_ASSERT_OK(d.status());
    EXPECT_EQ(d.cardinality(), static_cast<int64_t>(twice.size()));
    EXPECT_TRUE(d.random_access());
    RunConformance({.name = "numpy_" + f.file,
                    .make =
                        [&](int) {
                          return NumpyDataset({Np(f.file), Np(f.file)},
                                              {.buffer_size = 40, .num_parallel_reads = 2});
                        },
                    .expected = twice,
                    .max_save_positions = 12});
  }
  // Rows are views of the read buffer, not copies.
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, NumpyDataset({Np("float32_10x3.npy")}).iterator());
  SLUICE_ASSERT_OK_AND_ASSIGN(auto e, it.next());
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ((*e)[0].shape(), Shape({3}));
  EXPECT_GE((*e)[0].buffer().size(), 10u * 12);
}

TEST(NumpyDatasetTest, NpzMembersAreNamedComponents) {
  const nlohmann::json g = Golden("npy");
  for (const std::string archive : {"stored.npz", "deflated.npz", "mixed.npz"}) {
    SCOPED_TRACE(archive);
    const auto x = Rows(g["npz"][archive]["x"], DType::kFloat32);
    const auto y = Rows(g["npz"][archive]["y"], DType::kInt64);
    std::vector<std::string> want;
    for (size_t i = 0; i < x.size(); ++i)
      want.push_back(Element({y[i], x[i]}, {"y", "x"}).DebugString(1000));
    auto make = [&] {
      return NumpyDataset({Np(archive)}, {.keys = {"y", "x"}, .buffer_size = 30});
    };
    ASSERT_EQ(make().element_spec().DebugString(), "(y: int64[], x: float32[3])");
    RunConformance({.name = "npz", .make = [&](int) { return make(); }, .expected = want});
  }
  SLUICE_EXPECT_ERROR(NumpyDataset({Np("stored.npz")}).status(), StatusCode::kInvalidArgument,
                      "have 10 and 4 rows");
  SLUICE_EXPECT_ERROR(NumpyDataset({Np("stored.npz")}, {.keys = {"q"}}).status(),
                      StatusCode::kNotFound, "it has: x, y, z");
}

TEST(NumpyDatasetTest, TokenWindowsWithGlobalShuffle) {
  const nlohmann::json g = Golden("npy");
  const std::string bytes = Unhex(g["npy"]["uint16_tokens.npy"]["le_hex"].get<std::string>());
  const int64_t L = 16;
  std::vector<std::string> want;
  for (int64_t i = 0; (i + 1) * L + 1 <= 1000; ++i) {
    std::vector<int32_t> w;
    for (int64_t k = 0; k <= L; ++k) {
      uint16_t v;
      std::memcpy(&v, bytes.data() + 2 * (i * L + k), 2);
      w.push_back(v);
    }
    want.push_back(Element({Tensor::FromVector(w).value()}).DebugString(1000));
  }
  ASSERT_EQ(want.size(), 62u);
  auto make = [&] {
    return NumpyDataset({Np("uint16_tokens.npy")}, {.sequence_length = L, .buffer_size = 100});
  };
  EXPECT_EQ(make().cardinality(), 62);
  EXPECT_EQ(make().element_spec().DebugString(), "(int32[17])");
  RunConformance({.name = "windows", .make = [&](int) { return make(); }, .expected = want});

  auto shuffled = [&] {
    return make().global_shuffle({.seed = 7, .reshuffle_each_iteration = false});
  };
  RunConformance({.name = "windows_global_shuffle", .make = [&](int) { return shuffled(); }});
  auto got = ReadAll(shuffled());
  EXPECT_EQ(got, ReadAll(shuffled()));
  EXPECT_NE(got, want);
  std::sort(got.begin(), got.end());
  auto sorted = want;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(got, sorted);
  // int32 tokens are views; windows over a 2-D array are refused.
  auto i32 = NumpyDataset({Np("int32_tokens.npy")}, {.sequence_length = 100});
  EXPECT_EQ(i32.cardinality(), 9);
  SLUICE_EXPECT_ERROR(NumpyDataset({Np("float32_10x3.npy")}, {.sequence_length = 4}).status(),
                      StatusCode::kInvalidArgument, "one 1-D array");
}

TEST(NumpyDatasetTest, FilesThatDoNotMatchAreErrorsNamingThem) {
  Dataset d = NumpyDataset({Np("float32_10x3.npy"), Np("float64_5x2.npy")});
  std::vector<std::string> got;
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, d.iterator());
  Status error;
  for (;;) {
    auto e = it.next();
    if (!e.ok()) {
      error = e.status();
      break;
    }
    if (!e->has_value()) break;
    got.push_back("row");
  }
  EXPECT_EQ(got.size(), 10u);
  SLUICE_EXPECT_ERROR(error, StatusCode::kInvalidArgument, "float64_5x2.npy");
  SLUICE_EXPECT_ERROR(NumpyDataset({Np("object.npy")}).status(), StatusCode::kInvalidArgument,
                      "object arrays");
  SLUICE_EXPECT_ERROR(NumpyDataset({Np("fortran_3x2.npy")}).status(), StatusCode::kInvalidArgument,
                      "Fortran order");
}

TEST(NpyDatasetsTest, InterleaveOverListFiles) {
  // Two golden files through list_files + interleave, one file at a time.
  const nlohmann::json g = Golden("npy");
  std::vector<std::string> want;
  for (const std::string f : {"v2_float32_6x2.npy", "v3_int32_5.npy"}) {
    const DType dt = f[1] == '2' ? DType::kFloat32 : DType::kInt32;
    for (const Tensor& t : Rows(g["npy"][f], dt)) want.push_back(Element({t}).DebugString(1000));
  }
  Dataset files = Dataset::list_files(TestDataPath("npy/v[23]_*.npy"));
  EXPECT_EQ(ReadAll(files.interleave(numpy_arrays(), {.cycle_length = 1})), want);

  const nlohmann::json fl = Golden("fixed_length");
  auto plain = FixedLengthWant(Case(fl, "plain16.bin"));
  std::vector<std::string> twice = plain;
  twice.insert(twice.end(), plain.begin(), plain.end());
  Dataset names = Dataset::list_files(TestDataPath("fixed_length/plain16.bin*")).take(1).repeat(2);
  EXPECT_EQ(ReadAll(names.interleave(fixed_length_records(16), {.cycle_length = 1})), twice);
}

}  // namespace
}  // namespace sluice
