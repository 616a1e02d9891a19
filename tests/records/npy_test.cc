// .npy / .npz readers against NumPy's goldens (tests/data/npy/make_golden.py),
// and hostile headers and archives.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "hex_util.h"
#include "sluice/records/npy.h"
#include "sluice/records/npy_rows_file.h"
#include "sluice/records/npz.h"
#include "test_util.h"

namespace sluice {
namespace {

using testing::TestDataPath;

nlohmann::json Golden() {
  std::ifstream in(TestDataPath("npy/golden.json"));
  return nlohmann::json::parse(in);
}

// Every record's bytes, concatenated (rows of one array are its elements).
std::string AllRecords(const IndexedRecordFile& f, size_t max_bytes) {
  std::string out;
  for (uint64_t i = 0; i < f.num_records();) {
    Result<std::vector<Record>> run = f.ReadRun(i, max_bytes);
    EXPECT_TRUE(run.ok()) << run.status();
    if (!run.ok()) break;
    for (const Record& r : *run) {
      EXPECT_EQ(r.number, i);
      out += r.data;
      ++i;
    }
  }
  return out;
}

void ExpectHeader(const NpyHeader& h, const nlohmann::json& want) {
  EXPECT_EQ(h.descr, want["descr"].get<std::string>());
  EXPECT_EQ(h.shape, want["shape"].get<std::vector<int64_t>>());
  EXPECT_EQ(h.major_version, want["version"][0].get<int>());
  EXPECT_EQ(h.data_offset, want["data_offset"].get<uint64_t>());
  EXPECT_EQ(h.data_bytes * 2, want["le_hex"].get<std::string>().size());
}

TEST(Npy, GoldenFilesReadAsNumPyReadsThem) {
  const nlohmann::json g = Golden();
  ASSERT_GE(g["npy"].size(), 15u);
  for (const auto& [name, want] : g["npy"].items()) {
    SCOPED_TRACE(name);
    SLUICE_ASSERT_OK_AND_ASSIGN(auto arrays, OpenNpyArrays(TestDataPath("npy/" + name)));
    ASSERT_EQ(arrays.size(), 1u);
    ExpectHeader(arrays[0].header, want);
    auto rows = NpyRowsFile::Make(name, arrays);
    if (want["shape"].empty()) {
      SLUICE_EXPECT_ERROR(rows, StatusCode::kInvalidArgument, "0-dimensional");
      continue;
    }
    SLUICE_ASSERT_OK(rows);
    EXPECT_EQ((*rows)->num_records(), want["shape"][0].get<uint64_t>());
    for (size_t max_bytes : {size_t{1}, size_t{24}, size_t{1} << 20}) {
      EXPECT_EQ(testing::Hex(AllRecords(**rows, max_bytes)), want["le_hex"].get<std::string>());
    }
  }
}

TEST(Npy, UnsupportedFilesAreRefusedByName) {
  const nlohmann::json g = Golden();
  for (const auto& [name, substring] : g["bad"].items()) {
    SCOPED_TRACE(name);
    SLUICE_EXPECT_ERROR(OpenNpyArrays(TestDataPath("npy/" + name)), StatusCode::kInvalidArgument,
                        substring.get<std::string>());
    SLUICE_EXPECT_ERROR(OpenNpyArrays(TestDataPath("npy/" + name)), StatusCode::kInvalidArgument,
                        name);
  }
}

TEST(Npy, WidenedDTypes) {
  bool widened = false;
  EXPECT_EQ(NpyValueDType({'u', 2, false}, &widened).value(), DType::kInt32);
  EXPECT_TRUE(widened);
  EXPECT_EQ(NpyValueDType({'u', 4, true}, &widened).value(), DType::kInt64);
  EXPECT_TRUE(widened);
  EXPECT_EQ(NpyValueDType({'f', 2, false}, &widened).value(), DType::kFloat16);
  EXPECT_FALSE(widened);
  SLUICE_EXPECT_ERROR(NpyValueDType({'u', 8, false}, &widened), StatusCode::kInvalidArgument,
                      "no sluice dtype");
}

TEST(Npz, MembersReadAsNumPyReadsThem) {
  const nlohmann::json g = Golden();
  for (const auto& [archive, members] : g["npz"].items()) {
    for (const auto& [key, want] : members.items()) {
      SCOPED_TRACE(archive + ":" + key);
      SLUICE_ASSERT_OK_AND_ASSIGN(auto arrays,
                                  OpenNpyArrays(TestDataPath("npy/" + archive), {key}));
      ASSERT_EQ(arrays.size(), 1u);
      EXPECT_EQ(arrays[0].key, key);
      ExpectHeader(arrays[0].header, want);
      // Stored members are read in place in the archive; deflated ones from memory.
      EXPECT_EQ(arrays[0].file->name() == TestDataPath("npy/" + archive), !want["compressed"]);
      SLUICE_ASSERT_OK_AND_ASSIGN(auto rows, NpyRowsFile::Make(archive, arrays));
      EXPECT_EQ(testing::Hex(AllRecords(*rows, 16)), want["le_hex"].get<std::string>());
    }
  }
}

TEST(Npz, SeveralMembersMakeOneRecordPerRow) {
  const nlohmann::json g = Golden();
  const auto& want = g["npz"]["mixed.npz"];
  SLUICE_ASSERT_OK_AND_ASSIGN(auto arrays,
                              OpenNpyArrays(TestDataPath("npy/mixed.npz"), {"y", "x"}));
  SLUICE_ASSERT_OK_AND_ASSIGN(auto rows, NpyRowsFile::Make("mixed.npz", arrays));
  ASSERT_EQ(rows->num_records(), 10u);
  EXPECT_EQ(rows->piece_bytes(0), 8u);   // one int64
  EXPECT_EQ(rows->piece_bytes(1), 12u);  // three float32
  EXPECT_EQ(rows->piece_offset(1) % 8, 0u);
  const std::string y = testing::Unhex(want["y"]["le_hex"].get<std::string>());
  const std::string x = testing::Unhex(want["x"]["le_hex"].get<std::string>());
  for (size_t max_bytes : {size_t{1}, size_t{50}, size_t{1} << 20}) {
    for (uint64_t i = 0; i < 10;) {
      SLUICE_ASSERT_OK_AND_ASSIGN(auto run, rows->ReadRun(i, max_bytes));
      for (const Record& r : run) {
        EXPECT_EQ(r.data.substr(rows->piece_offset(0), 8), y.substr(i * 8, 8));
        EXPECT_EQ(r.data.substr(rows->piece_offset(1), 12), x.substr(i * 12, 12));
        ++i;
      }
    }
  }
  // All members: z has 4 rows, not 10.
  SLUICE_ASSERT_OK_AND_ASSIGN(auto all, OpenNpyArrays(TestDataPath("npy/mixed.npz")));
  SLUICE_EXPECT_ERROR(NpyRowsFile::Make("mixed.npz", all), StatusCode::kInvalidArgument,
                      "have 10 and 4 rows");
  SLUICE_EXPECT_ERROR(OpenNpyArrays(TestDataPath("npy/mixed.npz"), {"w"}), StatusCode::kNotFound,
                      "it has: x, y, z");
}

TEST(Npy, TokenWindows) {
  const nlohmann::json g = Golden();
  const std::string tokens =
      testing::Unhex(g["npy"]["uint16_tokens.npy"]["le_hex"].get<std::string>());
  SLUICE_ASSERT_OK_AND_ASSIGN(auto arrays, OpenNpyArrays(TestDataPath("npy/uint16_tokens.npy")));
  for (int64_t L : {1, 7, 64, 999, 1000}) {
    SCOPED_TRACE(L);
    SLUICE_ASSERT_OK_AND_ASSIGN(auto w, NpyRowsFile::Make("tokens", arrays, L));
    const uint64_t n = 1000;
    EXPECT_EQ(w->num_records(), L + 1 > static_cast<int64_t>(n) ? 0 : (n - 1) / L);
    for (uint64_t i = 0; i < w->num_records(); i += 5) {
      SLUICE_ASSERT_OK_AND_ASSIGN(Record r, w->Read(i));
      EXPECT_EQ(r.data, tokens.substr(i * L * 2, (L + 1) * 2));
    }
    if (w->num_records() >= 10) {
      SLUICE_ASSERT_OK_AND_ASSIGN(auto run, w->ReadRun(1, (4 * L + 1) * 2, 2));
      ASSERT_EQ(run.size(), 2u);  // windows 1..4, every 2nd
      EXPECT_EQ(run[1].number, 3u);
      EXPECT_EQ(run[1].data, tokens.substr(3 * L * 2, (L + 1) * 2));
    }
  }
  SLUICE_ASSERT_OK_AND_ASSIGN(auto matrix, OpenNpyArrays(TestDataPath("npy/int32_4x2x3.npy")));
  SLUICE_EXPECT_ERROR(NpyRowsFile::Make("m", matrix, 4), StatusCode::kInvalidArgument,
                      "one 1-D array");
}

// ----------------------------------------------------------------- hostile

std::string Npy(std::string_view dict, int major = 1, std::string data = "") {
  std::string h(dict);
  std::string out(kNpyMagic);
  out += static_cast<char>(major);
  out += '\0';
  const uint32_t len = static_cast<uint32_t>(h.size());
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>((len >> 8) & 0xff);
  if (major > 1) {
    out += static_cast<char>((len >> 16) & 0xff);
    out += static_cast<char>(len >> 24);
  }
  return out + h + data;
}

Status Parse(const std::string& bytes) {
  auto f = NewMemoryFile("hostile.npy", bytes);
  return ReadNpyHeader(*f, 0, bytes.size()).status();
}

TEST(Npy, HostileHeaders) {
  const std::string ok = "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }\n";
  SLUICE_EXPECT_OK(Parse(Npy(ok, 1, std::string(8, 'x'))));
  SLUICE_EXPECT_OK(Parse(
      Npy("{\"shape\":(2L,),\"descr\":\"<i4\",\"fortran_order\":False}", 2, std::string(8, 'x'))));
  struct Case {
    std::string bytes;
    StatusCode code;
    std::string substring;
  };
  std::string past = Npy(ok, 1, std::string(8, 'x'));
  past[8] = '\xff';  // header length 0x??ff past the file
  std::string huge_v2 = Npy(ok, 2, std::string(8, 'x'));
  huge_v2[8] = huge_v2[9] = huge_v2[10] = huge_v2[11] = '\xff';
  const std::vector<Case> cases = {
      {"", StatusCode::kDataLoss, "hostile.npy: offset 0: not an .npy file"},
      {std::string("\x93NUMPX\x01\x00\x10\x00", 10), StatusCode::kDataLoss, "magic"},
      {Npy(ok, 4), StatusCode::kDataLoss, "offset 6: .npy format version 4.0"},
      {past, StatusCode::kDataLoss, "offset 8: the header length"},
      {huge_v2, StatusCode::kDataLoss, "offset 8: the header length 4294967295 runs past"},
      {Npy(ok), StatusCode::kDataLoss, "truncated: the array ('<i4', 1 dims) needs 8 bytes"},
      {Npy("{'descr': '<i4', 'fortran_order': False, 'shape': (4611686018427387904, 8), }"),
       StatusCode::kDataLoss, "overflows"},
      {Npy("{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999,), }"),
       StatusCode::kDataLoss, "overflows int64"},
      {Npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1000000, 1000000), }"),
       StatusCode::kDataLoss, "needs 8000000000000 bytes but the file has 0"},
      {Npy("{'descr': '<i4', 'fortran_order': True, 'shape': (2,), }"),
       StatusCode::kInvalidArgument, "Fortran order"},
      {Npy("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }"),
       StatusCode::kInvalidArgument, "object arrays"},
      {Npy("{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (2,), }"),
       StatusCode::kInvalidArgument, "structured"},
      {Npy("{'descr': '<U3', 'fortran_order': False, 'shape': (2,), }"),
       StatusCode::kInvalidArgument, "unicode"},
      {Npy("{'descr': '<i4', 'fortran_order': False, 'shape': (2,), 'x': 1}"),
       StatusCode::kDataLoss, "unexpected key 'x'"},
      {Npy("{'descr': '<i4', 'shape': (2,)}"), StatusCode::kDataLoss, "needs the keys"},
      {Npy("{'descr': '<i4', 'fortran_order': False, 'shape': (2,"), StatusCode::kDataLoss,
       "offset"},
      {Npy("{'descr': '<i4, 'fortran_order': False}"), StatusCode::kDataLoss, "hostile.npy"},
      {Npy("{'descr': '<i4', 'fortran_order': False, 'shape': (" + std::string(200, '1') + "2,)}"),
       StatusCode::kDataLoss, "overflows int64"},
      {Npy("{'descr': '<i4', 'fortran_order': False, 'shape': (" +
           [] {
             std::string s;
             for (int i = 0; i < 70; ++i) s += "1,";
             return s;
           }() +
           ")}"),
       StatusCode::kDataLoss, "more than 64 dimensions"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(i);
    SLUICE_EXPECT_ERROR(Parse(cases[i].bytes), cases[i].code, cases[i].substring);
    SLUICE_EXPECT_ERROR(Parse(cases[i].bytes), cases[i].code, "hostile.npy");
  }
}

TEST(Npz, HostileArchives) {
  const std::string good = testing::ReadFileOrDie(TestDataPath("npy/deflated.npz"));
  auto list = [](std::string bytes) {
    auto f = NewMemoryFile("hostile.npz", std::move(bytes));
    return ListNpzMembers(*f);
  };
  SLUICE_ASSERT_OK_AND_ASSIGN(auto members, list(good));
  ASSERT_EQ(members.size(), 2u);
  EXPECT_TRUE(members[0].deflated);

  SLUICE_EXPECT_ERROR(list(good.substr(0, good.size() - 5)), StatusCode::kDataLoss,
                      "no end-of-central-directory");
  SLUICE_EXPECT_ERROR(list("PK"), StatusCode::kDataLoss, "not a zip");
  // The directory's offset pointed past the file.
  std::string moved = good;
  const size_t eocd = moved.rfind("PK\x05\x06");
  ASSERT_NE(eocd, std::string::npos);
  moved[eocd + 16] = '\x7f';
  moved[eocd + 17] = '\x7f';
  SLUICE_EXPECT_ERROR(list(moved), StatusCode::kDataLoss, "central directory");

  // A member whose declared size is over the limit, and one whose deflate
  // data is damaged.
  auto archive = std::shared_ptr<ReadableFile>(NewMemoryFile("hostile.npz", good));
  SLUICE_EXPECT_ERROR(OpenNpzMember(archive, members[0], 64), StatusCode::kResourceExhausted,
                      "over the limit of 64");
  NpzMember liar = members[0];
  liar.size = uint64_t{1} << 40;
  SLUICE_EXPECT_ERROR(OpenNpzMember(archive, liar), StatusCode::kResourceExhausted, "inflates");
  liar.size = members[0].compressed_size * 2000;
  SLUICE_EXPECT_ERROR(OpenNpzMember(archive, liar), StatusCode::kDataLoss, "claims");
  std::string damaged = good;
  for (size_t k = 0; k < 8; ++k) damaged[members[0].local_header_offset + 80 + k] ^= 0x5a;
  auto bad = std::shared_ptr<ReadableFile>(NewMemoryFile("hostile.npz", damaged));
  EXPECT_FALSE(OpenNpzMember(bad, members[0]).ok());
  SLUICE_EXPECT_ERROR(OpenNpzMember(bad, members[0]), StatusCode::kDataLoss, "hostile.npz");
}

}  // namespace
}  // namespace sluice
