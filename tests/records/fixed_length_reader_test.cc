// FixedLengthRecord readers against TensorFlow's goldens
// (tests/data/fixed_length/make_golden.py), and their error contract.
#include "sluice/records/fixed_length_reader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "hex_util.h"
#include "test_util.h"

namespace sluice {
namespace {

using testing::TestDataPath;

nlohmann::json Golden() {
  std::ifstream in(TestDataPath("fixed_length/golden.json"));
  return nlohmann::json::parse(in);
}

FixedLengthRecordOptions OptionsOf(const nlohmann::json& c, size_t buffer_size) {
  FixedLengthRecordOptions o;
  o.record_bytes = c["record_bytes"];
  o.header_bytes = c["header_bytes"];
  o.footer_bytes = c["footer_bytes"];
  o.compression = ParseCompression(c["compression"].get<std::string>()).value();
  o.buffer_size = buffer_size;
  return o;
}

StatusCode CodeOf(const std::string& tf_class) {
  if (tf_class == "InvalidArgumentError") return StatusCode::kInvalidArgument;
  if (tf_class == "DataLossError") return StatusCode::kDataLoss;
  ADD_FAILURE() << "unexpected class " << tf_class;
  return StatusCode::kInternal;
}

TEST(FixedLengthReader, MatchesTensorFlow) {
  const nlohmann::json g = Golden();
  ASSERT_GE(g["cases"].size(), 10u);
  for (const auto& c : g["cases"]) {
    for (size_t buffer_size : {size_t{1}, size_t{16}, size_t{1000}, size_t{1} << 20}) {
      SCOPED_TRACE(c["file"].get<std::string>() + " buffer " + std::to_string(buffer_size));
      const std::string path = TestDataPath("fixed_length/" + c["file"].get<std::string>());
      std::vector<std::string> got;
      Status error;
      Result<std::unique_ptr<RecordReader>> reader =
          OpenFixedLengthRecordReader(path, OptionsOf(c, buffer_size));
      if (!reader.ok()) {
        error = reader.status();
      } else {
        for (;;) {
          Result<std::optional<Record>> r = (*reader)->Next();
          if (!r.ok()) {
            error = r.status();
            // The reader stays: the same error again, no record passed.
            const uint64_t n = (*reader)->next_record_number();
            EXPECT_EQ((*reader)->Next().status().code(), error.code());
            EXPECT_EQ((*reader)->next_record_number(), n);
            break;
          }
          if (!r->has_value()) break;
          EXPECT_EQ((**r).number, got.size());
          EXPECT_EQ((**r).offset, c["header_bytes"].get<uint64_t>() +
                                      got.size() * c["record_bytes"].get<uint64_t>());
          got.push_back(testing::Hex((**r).data));
        }
      }
      EXPECT_EQ(got, c["records"].get<std::vector<std::string>>());
      if (c["error"].is_null()) {
        SLUICE_EXPECT_OK(error);
      } else {
        EXPECT_EQ(error.code(), CodeOf(c["error"]["class"]));
        EXPECT_NE(error.message().find("not a multiple of record_bytes"), std::string::npos)
            << error;
        EXPECT_NE(error.message().find(path), std::string::npos) << error;
      }
    }
  }
}

TEST(FixedLengthReader, RandomAccessMatchesTensorFlow) {
  const nlohmann::json g = Golden();
  int checked = 0;
  for (const auto& c : g["cases"]) {
    if (c["compression"] != "" || !c["error"].is_null()) continue;
    SCOPED_TRACE(c["file"].get<std::string>());
    const auto want = c["records"].get<std::vector<std::string>>();
    SLUICE_ASSERT_OK_AND_ASSIGN(
        auto file,
        OpenFixedLengthRecordFile(TestDataPath("fixed_length/" + c["file"].get<std::string>()),
                                  OptionsOf(c, 1)));
    ASSERT_EQ(file->num_records(), want.size());
    for (size_t i = 0; i < want.size(); i += 3) {
      SLUICE_ASSERT_OK_AND_ASSIGN(Record r, file->Read(i));
      EXPECT_EQ(testing::Hex(r.data), want[i]);
      EXPECT_EQ(r.number, i);
    }
    if (want.size() >= 10) {
      // A run of up to 7 records, every 3rd: records 2, 5, 8 from one read.
      const uint64_t rb = c["record_bytes"];
      SLUICE_ASSERT_OK_AND_ASSIGN(auto run, file->ReadRun(2, 7 * rb, 3));
      ASSERT_EQ(run.size(), 3u);
      for (size_t k = 0; k < 3; ++k) {
        EXPECT_EQ(run[k].number, 2 + 3 * k);
        EXPECT_EQ(testing::Hex(run[k].data), want[2 + 3 * k]);
        EXPECT_TRUE(run[k].owner.SameAllocation(run[0].owner));
      }
    }
    SLUICE_EXPECT_ERROR(file->Read(want.size()), StatusCode::kOutOfRange, "cannot read record");
    ++checked;
  }
  EXPECT_GE(checked, 4);
}

TEST(FixedLengthReader, SeekIsExactWhenUncompressed) {
  const nlohmann::json g = Golden();
  for (const auto& c : g["cases"]) {
    if (c["name"] != "many") continue;
    const auto want = c["records"].get<std::vector<std::string>>();
    SLUICE_ASSERT_OK_AND_ASSIGN(
        auto reader,
        OpenFixedLengthRecordReader(TestDataPath("fixed_length/" + c["file"].get<std::string>()),
                                    OptionsOf(c, 100)));
    if (c["compression"] != "") {
      SLUICE_ASSERT_OK_AND_ASSIGN(bool moved, reader->Seek(3));
      EXPECT_FALSE(moved);  // compressed: the caller reads forward
      continue;
    }
    for (uint64_t to : {uint64_t{150}, uint64_t{7}, uint64_t{199}}) {
      SLUICE_ASSERT_OK_AND_ASSIGN(bool moved, reader->Seek(to));
      ASSERT_TRUE(moved);
      EXPECT_EQ(reader->next_record_number(), to);
      SLUICE_ASSERT_OK_AND_ASSIGN(auto r, reader->Next());
      ASSERT_TRUE(r.has_value());
      EXPECT_EQ(testing::Hex(r->data), want[to]);
    }
    SLUICE_ASSERT_OK_AND_ASSIGN(auto end, reader->Next());
    EXPECT_FALSE(end.has_value());
    SLUICE_EXPECT_ERROR(reader->Seek(201), StatusCode::kOutOfRange, "cannot seek");
  }
}

TEST(FixedLengthReader, BadOptionsAndShortFiles) {
  auto mem = [](std::string bytes) {
    return std::shared_ptr<ReadableFile>(NewMemoryFile("mem.bin", std::move(bytes)));
  };
  FixedLengthRecordOptions o;
  SLUICE_EXPECT_ERROR(OpenFixedLengthRecordReader(mem("abcd"), o), StatusCode::kInvalidArgument,
                      "record_bytes must be > 0");
  o.record_bytes = 2;
  o.compression = Compression::kAuto;
  SLUICE_EXPECT_ERROR(OpenFixedLengthRecordReader(mem("abcd"), o), StatusCode::kInvalidArgument,
                      "compression named");
  o.compression = Compression::kNone;
  o.header_bytes = 3;
  o.footer_bytes = 2;
  SLUICE_EXPECT_ERROR(OpenFixedLengthRecordReader(mem("abcd"), o), StatusCode::kInvalidArgument,
                      "fewer than the header (3 bytes) and footer (2 bytes)");
  o.compression = Compression::kGzip;
  SLUICE_EXPECT_ERROR(OpenFixedLengthRecordFile(mem("abcd"), o), StatusCode::kInvalidArgument,
                      "gzip-compressed");
  // A gzip stream of "abcd" (as gzip.compress(b"abcd", mtime=0)).
  const std::string gz = testing::Unhex(
      "1f8b0800000000000203"  // header
      "4b4c4a4e0100"          // deflate "abcd"
      "11cd82ed04000000");    // crc32, size
  SLUICE_ASSERT_OK_AND_ASSIGN(auto reader, OpenFixedLengthRecordReader(mem(gz), o));
  SLUICE_EXPECT_ERROR(reader->Next(), StatusCode::kDataLoss, "fewer than the header");
}

TEST(FixedLengthReader, FileThatShrinksIsDataLoss) {
  testing::ScratchDir dir;
  const std::string path = dir.file("shrinks.bin");
  testing::WriteFileOrDie(path, std::string(100, 'x'));
  FixedLengthRecordOptions o;
  o.record_bytes = 10;
  SLUICE_ASSERT_OK_AND_ASSIGN(auto file, OpenFixedLengthRecordFile(path, o));
  ASSERT_EQ(truncate(path.c_str(), 55), 0);
  SLUICE_EXPECT_OK(file->Read(4));
  SLUICE_EXPECT_ERROR(file->Read(5), StatusCode::kDataLoss, "shrinks.bin: record 5 at offset 50");
}

}  // namespace
}  // namespace sluice
