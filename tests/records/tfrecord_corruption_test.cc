// The corruption matrix: for every compression, a flipped bit in each field,
// truncation at every byte of the last record, an empty file, a length larger
// than the file and garbage after a valid stream. Each must give DataLoss
// naming the file, the offset and the record, and never crash or allocate
// what a corrupt length claims.
#include <gtest/gtest.h>

#include <zlib.h>

#include "sluice/records/tfrecord_format.h"
#include "sluice/records/tfrecord_reader.h"
#include "test_util.h"
#include "tfrecord_test_util.h"

namespace sluice {
namespace {

using testing::GoldenPayload;
using testing::ScratchDir;

struct Outcome {
  std::vector<std::string> records;  // read before the error or end
  Status error;                      // OK if the file ended cleanly
};

Outcome ReadFile(std::string bytes, Compression c, bool allow_truncated = false) {
  TFRecordReaderOptions opts;
  opts.compression = c;
  opts.buffer_size = 64;  // exercise refills everywhere
  opts.allow_truncated_tail = allow_truncated;
  Outcome out;
  Result<TFRecordReader> reader = TFRecordReader::Open(NewMemoryFile("bad.tfrecord", bytes), opts);
  if (!reader.ok()) {
    out.error = reader.status();
    return out;
  }
  for (int guard = 0; guard < 1000; ++guard) {
    Result<std::optional<Record>> r = reader->Next();
    if (!r.ok()) {
      out.error = r.status();
      return out;
    }
    if (!*r) return out;
    out.records.emplace_back((*r)->data);
  }
  ADD_FAILURE() << "reader did not stop";
  return out;
}

// The uncompressed stream of three records: "alpha", 300 bytes, "omega".
std::vector<std::string> Records() { return {"alpha", GoldenPayload(1, 300), "omega"}; }

std::string Compress(const std::string& raw, Compression c) {
  if (c == Compression::kNone) return raw;
  z_stream s{};
  deflateInit2(&s, Z_DEFAULT_COMPRESSION, Z_DEFLATED,
               c == Compression::kGzip ? tfrecord::kGzipWindowBits : tfrecord::kZlibWindowBits,
               tfrecord::kZlibMemLevel, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&s, raw.size()) + 64, '\0');
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  s.avail_in = static_cast<uInt>(raw.size());
  s.next_out = reinterpret_cast<Bytef*>(out.data());
  s.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&s, Z_FINISH), Z_STREAM_END);
  out.resize(s.total_out);
  deflateEnd(&s);
  return out;
}

class CorruptionTest : public ::testing::TestWithParam<Compression> {
 protected:
  Compression c() const { return GetParam(); }
  std::string Raw() {
    ScratchDir dir;
    return testing::WriteRecordsToBytes(dir.path(), Records(), Compression::kNone);
  }
};

INSTANTIATE_TEST_SUITE_P(All, CorruptionTest,
                         ::testing::Values(Compression::kNone, Compression::kZlib,
                                           Compression::kGzip),
                         [](const auto& info) { return std::string(CompressionName(info.param)); });

// A flipped bit in the length, the length CRC, the data and the data CRC of
// the second record (offsets in the uncompressed stream).
TEST_P(CorruptionTest, FlippedBitInEveryFieldOfTheStream) {
  const std::string raw = Raw();
  const size_t second = 5 + tfrecord::kFramingSize;  // offset of record 1
  struct Case {
    const char* field;
    size_t byte;
    const char* expect;
  };
  const Case cases[] = {
      {"length", second + 0, "length checksum"},
      {"length high byte", second + 7, "length checksum"},
      {"length crc", second + 9, "length checksum"},
      {"data", second + 12 + 150, "data checksum"},
      {"data crc", second + 12 + 300 + 2, "data checksum"},
  };
  for (const Case& k : cases) {
    for (int bit : {0, 7}) {
      std::string bad = raw;
      bad[k.byte] ^= static_cast<char>(1 << bit);
      Outcome o = ReadFile(Compress(bad, c()), c());
      SCOPED_TRACE(std::string(k.field) + " bit " + std::to_string(bit));
      EXPECT_EQ(o.records, std::vector<std::string>{"alpha"});
      SLUICE_EXPECT_ERROR(o.error, StatusCode::kDataLoss, k.expect);
      SLUICE_EXPECT_ERROR(o.error, StatusCode::kDataLoss, "bad.tfrecord: record 1 at offset 21");
    }
  }
}

TEST_P(CorruptionTest, DataChecksumErrorCanBeSkipped) {
  std::string raw = Raw();
  raw[5 + 16 + 12 + 10] ^= 1;
  TFRecordReaderOptions opts;
  opts.compression = c();
  SLUICE_ASSERT_OK_AND_ASSIGN(TFRecordReader reader,
                              TFRecordReader::Open(NewMemoryFile("f", Compress(raw, c())), opts));
  EXPECT_EQ((*reader.Next())->data, "alpha");
  SLUICE_EXPECT_ERROR(reader.Next(), StatusCode::kDataLoss, "record 1");
  EXPECT_EQ((*reader.Next())->data, "omega");
  EXPECT_FALSE(reader.Next()->has_value());
  // Unchecked, the damaged record is returned as is.
  opts.verify_checksums = false;
  SLUICE_ASSERT_OK_AND_ASSIGN(reader,
                              TFRecordReader::Open(NewMemoryFile("f", Compress(raw, c())), opts));
  (void)reader.Next();
  SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<Record> r, reader.Next());
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->data.size(), 300u);
}

// Flipped bits anywhere in the compressed bytes: DataLoss or (rarely, in
// stored-block bytes zlib cannot check) a CRC error; never a crash.
TEST_P(CorruptionTest, FlippedBitAnywhereInTheFile) {
  const std::string file = Compress(Raw(), c());
  for (size_t i = 0; i < file.size(); ++i) {
    std::string bad = file;
    bad[i] ^= static_cast<char>(1 << (i % 8));
    Outcome o = ReadFile(bad, c());
    if (o.error.ok()) {
      // Only possible where the flip is invisible (e.g. gzip header mtime/OS bytes).
      EXPECT_EQ(o.records, Records()) << "byte " << i;
    } else {
      EXPECT_EQ(o.error.code(), StatusCode::kDataLoss) << "byte " << i << ": " << o.error;
      EXPECT_NE(o.error.message().find("bad.tfrecord"), std::string::npos) << o.error;
    }
  }
}

TEST_P(CorruptionTest, TruncationAtEveryByteOfTheLastRecord) {
  const std::string raw = Raw();
  const size_t last = raw.size() - (5 + tfrecord::kFramingSize);
  for (size_t cut = last + 1; cut < raw.size(); ++cut) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    const std::string file = Compress(raw.substr(0, cut), c());
    Outcome o = ReadFile(file, c());
    EXPECT_EQ(o.records.size(), 2u);
    SLUICE_EXPECT_ERROR(o.error, StatusCode::kDataLoss,
                        "record 2 at offset " + std::to_string(last));
    SLUICE_EXPECT_ERROR(o.error, StatusCode::kDataLoss, "truncated");
    Outcome tolerant = ReadFile(file, c(), /*allow_truncated=*/true);
    EXPECT_TRUE(tolerant.error.ok()) << tolerant.error;
    EXPECT_EQ(tolerant.records.size(), 2u);
  }
}

// Cuts in the compressed bytes themselves (zlib and gzip only).
class CompressedCorruptionTest : public CorruptionTest {};

INSTANTIATE_TEST_SUITE_P(Compressed, CompressedCorruptionTest,
                         ::testing::Values(Compression::kZlib, Compression::kGzip),
                         [](const auto& info) { return std::string(CompressionName(info.param)); });

TEST_P(CompressedCorruptionTest, TruncatedCompressedFileAtEveryByte) {
  const std::string file = Compress(Raw(), c());
  for (size_t cut = 1; cut < file.size(); ++cut) {
    Outcome o = ReadFile(file.substr(0, cut), c());
    EXPECT_EQ(o.error.code(), StatusCode::kDataLoss) << "cut " << cut << ": " << o.error;
    EXPECT_LE(o.records.size(), 3u);
    Outcome tolerant = ReadFile(file.substr(0, cut), c(), true);
    EXPECT_TRUE(tolerant.error.ok() || tolerant.error.code() == StatusCode::kDataLoss);
  }
}

TEST_P(CorruptionTest, EmptyAndTinyFiles) {
  EXPECT_TRUE(ReadFile("", c()).error.ok());
  EXPECT_TRUE(ReadFile("", Compression::kAuto).records.empty());
  for (size_t n = 1; n < tfrecord::kHeaderSize; ++n) {
    Outcome o = ReadFile(std::string(n, '\x01'), c());
    EXPECT_EQ(o.error.code(), StatusCode::kDataLoss) << n << ": " << o.error;
  }
}

TEST_P(CorruptionTest, LengthLargerThanTheFileIsNotAllocated) {
  for (uint64_t length : {uint64_t{1000}, uint64_t{1} << 40, ~uint64_t{0} - 20}) {
    uint8_t header[tfrecord::kHeaderSize];
    tfrecord::EncodeHeader(length, header);
    std::string raw(reinterpret_cast<char*>(header), sizeof(header));
    raw += "only a few bytes";
    Outcome o = ReadFile(Compress(raw, c()), c());
    SCOPED_TRACE("length " + std::to_string(length));
    EXPECT_EQ(o.error.code(), StatusCode::kDataLoss) << o.error;
    EXPECT_NE(o.error.message().find("record 0 at offset 0"), std::string::npos) << o.error;
  }
}

TEST_P(CorruptionTest, GarbageAfterAValidStream) {
  const std::string file = Compress(Raw(), c()) + "garbage that is not a record";
  Outcome o = ReadFile(file, c());
  EXPECT_EQ(o.records, Records());
  EXPECT_EQ(o.error.code(), StatusCode::kDataLoss) << o.error;
  if (c() != Compression::kNone) {
    SLUICE_EXPECT_ERROR(o.error, StatusCode::kDataLoss, "garbage after the end");
  }
}

TEST(CorruptionTest, HeaderErrorIsStickyAndDoesNotAdvance) {
  std::string raw = "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d";
  SLUICE_ASSERT_OK_AND_ASSIGN(TFRecordReader reader,
                              TFRecordReader::Open(NewMemoryFile("junk", raw)));
  for (int i = 0; i < 3; ++i) {
    SLUICE_EXPECT_ERROR(reader.Next(), StatusCode::kDataLoss,
                        "junk: record 0 at offset 0: corrupt record header");
  }
}

TEST(CorruptionTest, MaxRecordSizeCapsDecompressedLengths) {
  ScratchDir dir;
  const std::string file =
      testing::WriteRecordsToBytes(dir.path(), {std::string(5000, 'z')}, Compression::kGzip);
  TFRecordReaderOptions opts;
  opts.max_record_size = 4096;
  SLUICE_ASSERT_OK_AND_ASSIGN(TFRecordReader reader,
                              TFRecordReader::Open(NewMemoryFile("big", file), opts));
  SLUICE_EXPECT_ERROR(reader.Next(), StatusCode::kDataLoss, "exceeds max_record_size 4096");
}

}  // namespace
}  // namespace sluice
