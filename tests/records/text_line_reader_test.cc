// TextLineReader: tf.data's line semantics (the goldens made by TensorFlow
// are checked in tests/pipeline/text_golden_test.cc), buffers, compression
// and errors.
#include "sluice/records/text_line_reader.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_util.h"
#include "text_test_util.h"

namespace sluice {
namespace {

using testing::Compress;

struct Read {
  std::vector<std::string> lines;
  std::vector<Record> records;
  Status error;
};

Read ReadAll(std::string bytes, TextLineReaderOptions opts = {}, std::string name = "t.txt") {
  Read out;
  auto reader = OpenTextLineReader(NewMemoryFile(name, std::move(bytes)), opts);
  if (!reader.ok()) {
    out.error = reader.status();
    return out;
  }
  while (true) {
    auto r = (*reader)->Next();
    if (!r.ok()) {
      out.error = r.status();
      return out;
    }
    if (!r->has_value()) return out;
    out.lines.emplace_back((*r)->data);
    out.records.push_back(**r);
  }
}

using Lines = std::vector<std::string>;

TEST(TextLineReader, TensorFlowLineEnds) {
  EXPECT_EQ(ReadAll("a\nb").lines, (Lines{"a", "b"}));
  EXPECT_EQ(ReadAll("a\r\nb\r\n").lines, (Lines{"a", "b"}));
  EXPECT_EQ(ReadAll("a\n\nb\n\n").lines, (Lines{"a", "", "b", ""}));
  EXPECT_EQ(ReadAll("").lines, Lines{});
  EXPECT_EQ(ReadAll("\n").lines, Lines{""});
  // TensorFlow drops every '\r', and a last "line" that is only "\r".
  EXPECT_EQ(ReadAll("a\rb\nc\r").lines, (Lines{"ab", "c"}));
  EXPECT_EQ(ReadAll("a\n\r").lines, Lines{"a"});
  EXPECT_EQ(ReadAll("x\r\r\ny").lines, (Lines{"x", "y"}));
}

TEST(TextLineReader, NumbersLinesAndOffsets) {
  Read r = ReadAll("ab\n\ncde\nf");
  ASSERT_TRUE(r.error.ok()) << r.error;
  ASSERT_EQ(r.records.size(), 4u);
  const uint64_t offsets[] = {0, 3, 4, 8};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(r.records[i].number, i);
    EXPECT_EQ(r.records[i].line, i + 1);
    EXPECT_EQ(r.records[i].offset, offsets[i]);
  }
}

std::string ManyLines(int n, size_t max_len) {
  std::string s;
  for (int i = 0; i < n; ++i) {
    s += std::to_string(i) + ":" + std::string((i * 7919) % max_len, static_cast<char>('a' + i % 26));
    s += i % 3 == 0 ? "\r\n" : "\n";
  }
  return s;
}

Lines Expected(int n, size_t max_len) {
  Lines out;
  for (int i = 0; i < n; ++i) {
    out.push_back(std::to_string(i) + ":" +
                  std::string((i * 7919) % max_len, static_cast<char>('a' + i % 26)));
  }
  return out;
}

// Lines longer than the buffer, and lines crossing buffer ends, in every
// compression; the records stay valid after the reader moved on.
TEST(TextLineReader, LinesAcrossAndLongerThanBuffers) {
  const std::string text = ManyLines(300, 20000);
  for (Compression c : {Compression::kNone, Compression::kGzip, Compression::kZlib}) {
    for (Compression asked : {c, Compression::kAuto}) {
      SCOPED_TRACE(std::string(CompressionName(c)) + " read as " +
                   std::string(CompressionName(asked)));
      Read r = ReadAll(Compress(text, c), {.compression = asked, .buffer_size = 4096});
      ASSERT_TRUE(r.error.ok()) << r.error;
      EXPECT_EQ(r.lines, Expected(300, 20000));
      for (size_t i = 0; i < r.records.size(); ++i) {
        ASSERT_EQ(std::string(r.records[i].data), r.lines[i]);
      }
    }
  }
}

TEST(TextLineReader, LongLineIsAnErrorAndIsSkipped) {
  const std::string text = "short\n" + std::string(100000, 'x') + "\nafter\n";
  for (Compression c : {Compression::kNone, Compression::kGzip}) {
    auto reader = OpenTextLineReader(NewMemoryFile("big.txt", Compress(text, c)),
                                     {.buffer_size = 4096, .max_line_size = 10000});
    ASSERT_TRUE(reader.ok());
    auto first = (*reader)->Next();
    ASSERT_TRUE(first.ok() && first->has_value());
    auto bad = (*reader)->Next();
    SLUICE_EXPECT_ERROR(bad, StatusCode::kInvalidArgument, "big.txt: line 2 at offset 6");
    EXPECT_EQ((*reader)->next_record_number(), 2u);  // moved past it
    EXPECT_LE((*reader)->buffer_bytes(), size_t{64} << 10);
    auto after = (*reader)->Next();
    ASSERT_TRUE(after.ok() && after->has_value()) << after.status();
    EXPECT_EQ((*after)->data, "after");
    EXPECT_EQ((*after)->line, 3u);
    EXPECT_EQ((*after)->number, 2u);
    auto end = (*reader)->Next();
    ASSERT_TRUE(end.ok() && !end->has_value());
  }
}

Lines Expected(int n, size_t max_len);

TEST(TextLineReader, TruncatedGzipNamesFileAndOffset) {
  const std::string gz = Compress(ManyLines(2000, 50), Compression::kGzip);
  for (size_t cut : {gz.size() - 3, gz.size() / 2}) {
    Read r = ReadAll(gz.substr(0, cut), {.compression = Compression::kGzip, .buffer_size = 4096},
                     "cut.txt.gz");
    EXPECT_EQ(r.error.code(), StatusCode::kDataLoss) << r.error;
    EXPECT_NE(r.error.message().find("cut.txt.gz: line"), std::string::npos) << r.error;
    EXPECT_NE(r.error.message().find("truncated"), std::string::npos) << r.error;
    EXPECT_NE(r.error.message().find("compressed offset"), std::string::npos) << r.error;
    // Cut in the trailer, every line is there; in the middle, some are not.
    if (cut == gz.size() / 2) {
      EXPECT_LT(r.lines.size(), 2000u);
    }
    const Lines all = Expected(2000, 50);
    EXPECT_EQ(r.lines, Lines(all.begin(), all.begin() + static_cast<ptrdiff_t>(r.lines.size())));
  }
}

TEST(TextLineReader, CorruptZlibIsDataLossAndStays) {
  std::string z = Compress(ManyLines(2000, 50), Compression::kZlib);
  z[z.size() / 2] ^= 0x55;
  z[z.size() / 2 + 1] ^= 0xaa;
  auto reader = OpenTextLineReader(NewMemoryFile("bad.zlib", z),
                                   {.compression = Compression::kZlib, .buffer_size = 4096});
  ASSERT_TRUE(reader.ok());
  Status error;
  for (int i = 0; i < 3000 && error.ok(); ++i) {
    auto r = (*reader)->Next();
    if (!r.ok()) error = r.status();
    else if (!r->has_value()) break;
  }
  ASSERT_EQ(error.code(), StatusCode::kDataLoss) << error;
  EXPECT_NE(error.message().find("bad.zlib"), std::string::npos);
  const uint64_t n = (*reader)->next_record_number();
  EXPECT_FALSE((*reader)->Next().ok());  // stays
  EXPECT_EQ((*reader)->next_record_number(), n);
}

TEST(TextLineReader, AutoDoesNotMistakeTextForZlib) {
  // "x^" passes zlib's two-byte header check.
  EXPECT_EQ(ReadAll("x^ is not zlib\nsecond\n").lines, (Lines{"x^ is not zlib", "second"}));
  EXPECT_EQ(ReadAll(std::string("\x1f", 1) + "a\n").lines, Lines{"\x1f" "a"});
}

TEST(TextLineReader, OpenMissingFileNamesIt) {
  SLUICE_EXPECT_ERROR(OpenTextLineReader("/nonexistent/x.txt"), StatusCode::kNotFound,
                      "/nonexistent/x.txt");
}

}  // namespace
}  // namespace sluice
