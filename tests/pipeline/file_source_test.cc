// The file source (file_source.h) with a format written here: the mechanism
// gives any format the rotation, reads ahead, restore, sharding, random
// access and ignore_errors (docs/pipeline.md, "Adding a file format", uses
// this format as its example).
//
// The format: a file is numbers in decimal, one per line ("12\n7\n"); a
// record is a line and its element an int64 scalar. Random access comes from
// the line offsets, found when the file opens; a line that is not a number
// is the record's own error (ToElement), the next one goes on.
#include <gtest/gtest.h>

#include <charconv>
#include <string>
#include <vector>

#include "conformance.h"
#include "ignore_errors_util.h"
#include "sluice/core/file.h"
#include "sluice/pipeline/file_source.h"
#include "test_util.h"

namespace sluice {
namespace {

using testing::RunConformance;
using testing::ScratchDir;
using testing::WriteFileOrDie;

// The lines of a whole file: records are views into its one buffer.
struct Lines {
  std::string path;
  WholeFile file;
  std::vector<RecordExtent> extents;  // without the '\n'

  static Result<Lines> Read(const std::string& path) {
    Lines l{path, {}, {}};
    SLUICE_ASSIGN_OR_RETURN(l.file, ReadWholeFile(path));
    const std::string_view b = l.file.bytes();
    for (size_t at = 0; at < b.size();) {
      const size_t end = std::min(b.find('\n', at), b.size());
      l.extents.push_back({at, end - at});
      at = end + 1;
    }
    return l;
  }
  Record At(uint64_t i) const {
    const RecordExtent& e = extents[i];
    return {file.bytes().substr(e.offset, e.length), file.buffer, e.offset, i, i + 1};
  }
};

class LineReader : public RecordReader {
 public:
  explicit LineReader(Lines lines) : lines_(std::move(lines)) {}
  Result<std::optional<Record>> Next() override {
    if (next_ >= lines_.extents.size()) return std::optional<Record>();
    return std::optional<Record>(lines_.At(next_++));
  }
  uint64_t next_record_number() const override { return next_; }
  Result<bool> Seek(uint64_t n) override {
    if (n > lines_.extents.size()) return Status::OutOfRange(lines_.path + ": past the end");
    next_ = n;
    return true;
  }
  size_t buffer_bytes() const override { return lines_.file.size; }
  const std::string& filename() const override { return lines_.path; }

 private:
  Lines lines_;
  uint64_t next_ = 0;
};

class IndexedLines : public IndexedRecordFile {
 public:
  explicit IndexedLines(Lines lines) : lines_(std::move(lines)) {}
  uint64_t num_records() const override { return lines_.extents.size(); }
  const std::string& path() const override { return lines_.path; }
  RecordExtent extent(uint64_t i) const override { return lines_.extents[i]; }
  Result<std::vector<Record>> ReadRun(uint64_t first, size_t max_bytes,
                                      uint64_t stride) const override {
    if (first >= num_records()) return Status::OutOfRange(path() + ": no such line");
    std::vector<Record> run;
    const uint64_t start = lines_.extents[first].offset;
    for (uint64_t i = first; i < num_records(); i += stride) {
      const RecordExtent& e = lines_.extents[i];
      if (!run.empty() && e.offset + e.length - start > max_bytes) break;
      run.push_back(lines_.At(i));
    }
    return run;
  }

 private:
  Lines lines_;
};

class NumberLines : public FileFormat {
 public:
  explicit NumberLines(bool indexed) : indexed_(indexed) {}
  std::string kind() const override { return "NumberLines"; }
  ElementSpec element_spec() const override { return ElementSpec({{"", DType::kInt64, Shape{}}}); }
  Result<std::unique_ptr<RecordReader>> Open(const std::string& path, size_t) const override {
    SLUICE_ASSIGN_OR_RETURN(Lines lines, Lines::Read(path));
    return std::unique_ptr<RecordReader>(std::make_unique<LineReader>(std::move(lines)));
  }
  Result<std::shared_ptr<const IndexedRecordFile>> OpenIndexed(
      const std::string& path) const override {
    if (!indexed_) return std::shared_ptr<const IndexedRecordFile>();
    SLUICE_ASSIGN_OR_RETURN(Lines lines, Lines::Read(path));
    return std::shared_ptr<const IndexedRecordFile>(
        std::make_shared<IndexedLines>(std::move(lines)));
  }
  bool records_are_elements() const override { return false; }
  Result<Element> ToElement(const Record& rec, const std::string& path) const override {
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(rec.data.data(), rec.data.data() + rec.data.size(), v);
    if (ec != std::errc() || end != rec.data.data() + rec.data.size()) {
      return Status::DataLoss(path + ":" + std::to_string(rec.line) + ": not a number: '" +
                              std::string(rec.data) + "'");
    }
    return Element({Tensor::Scalar(v)});
  }

 private:
  const bool indexed_;
};

// Three files of 1..9, 10..14, 15..22.
std::vector<std::string> WriteNumbers(ScratchDir& dir) {
  std::vector<std::string> files;
  int64_t v = 1;
  for (int count : {9, 5, 8}) {
    std::string text;
    for (int i = 0; i < count; ++i) text += std::to_string(v++) + "\n";
    files.push_back(dir.file("n" + std::to_string(files.size()) + ".txt"));
    WriteFileOrDie(files.back(), text);
  }
  return files;
}

std::vector<int64_t> Ints(const Dataset& ds) {
  std::vector<int64_t> out;
  for (const Element& e : ds) out.push_back(e[0].scalar<int64_t>());
  return out;
}

TEST(FileSourceTest, AnyFormatGetsTheRotationInBothModes) {
  ScratchDir dir;
  const std::vector<std::string> files = WriteNumbers(dir);
  for (bool indexed : {false, true}) {
    SCOPED_TRACE(indexed ? "indexed" : "in order");
    auto format = std::make_shared<NumberLines>(indexed);
    Dataset one = FileSourceDataset(files, format);
    std::vector<int64_t> all(22);
    for (int i = 0; i < 22; ++i) all[static_cast<size_t>(i)] = i + 1;
    EXPECT_EQ(Ints(one), all);
    EXPECT_EQ(one.random_access(), indexed);
    EXPECT_EQ(one.cardinality(), indexed ? 22 : kUnknownCardinality);
    EXPECT_NE(one.DebugString().find("NumberLines"), std::string::npos);
    // Two files open at once, one record of each in turn (tf.data's
    // interleave with cycle_length 2); the third takes the slot of the first
    // to end.
    Dataset two = FileSourceDataset(files, format, {.num_parallel_reads = 2});
    EXPECT_EQ(Ints(two), (std::vector<int64_t>{1,  10, 2,  11, 3,  12, 4,  13, 5,  14, 6,
                                               15, 7,  16, 8,  17, 9,  18, 19, 20, 21, 22}));
    for (int reads : {1, 2, 3}) {
      RunConformance({.name = std::string("NumberLines_") + (indexed ? "indexed" : "sequential") +
                              std::to_string(reads),
                      .make = [&, reads](int) {
                        return FileSourceDataset(files, format, {.num_parallel_reads = reads});
                      }});
    }
  }
}

TEST(FileSourceTest, ShardsByFileAndByRecord) {
  ScratchDir dir;
  const std::vector<std::string> files = WriteNumbers(dir);
  Dataset ds = FileSourceDataset(files, std::make_shared<NumberLines>(true));
  EXPECT_EQ(ds.source_files(), files);
  EXPECT_EQ(Ints(ds.with_source_files({files[1]})), (std::vector<int64_t>{10, 11, 12, 13, 14}));
  // Record-level: with random access, element 1 of every 4 and a global
  // shuffle that is a permutation.
  EXPECT_EQ(Ints(ds.shard(4, 1)), (std::vector<int64_t>{2, 6, 10, 14, 18, 22}));
  std::vector<int64_t> shuffled = Ints(ds.global_shuffle({.seed = 3}));
  std::sort(shuffled.begin(), shuffled.end());
  EXPECT_EQ(shuffled, Ints(ds));
}

TEST(FileSourceTest, IgnoreErrorsSkipsExactlyTheBadRecord) {
  ScratchDir dir;
  std::vector<std::string> files = {dir.file("a.txt"), dir.file("b.txt")};
  WriteFileOrDie(files[0], "1\n2\nx\n4\n");
  WriteFileOrDie(files[1], "5\ny\n7\n");
  for (bool indexed : {false, true}) {
    for (int reads : {1, 2}) {
      SCOPED_TRACE(std::to_string(reads) + (indexed ? " indexed" : " in order"));
      Dataset ds = FileSourceDataset(files, std::make_shared<NumberLines>(indexed),
                                     {.num_parallel_reads = reads});
      auto it = ds.iterator();
      ASSERT_TRUE(it.ok());
      Result<std::optional<Element>> e = it->next();
      while (e.ok() && e->has_value()) e = it->next();
      ASSERT_FALSE(e.ok());
      EXPECT_NE(std::string(e.status().message()).find("not a number"), std::string::npos)
          << e.status();
      std::vector<int64_t> kept;
      for (const Element& x : ds.ignore_errors()) kept.push_back(x[0].scalar<int64_t>());
      const std::vector<int64_t> want =
          reads == 1 ? std::vector<int64_t>{1, 2, 4, 5, 7} : std::vector<int64_t>{1, 5, 2, 7, 4};
      EXPECT_EQ(kept, want);
    }
  }
}

TEST(FileSourceTest, BadArgumentsNameTheFormat) {
  auto format = std::make_shared<NumberLines>(false);
  EXPECT_NE(FileSourceDataset({}, format).status().ToString().find("NumberLines: no files"),
            std::string::npos);
  EXPECT_NE(FileSourceDataset({"a"}, format, {.buffer_size = 0})
                .status()
                .ToString()
                .find("NumberLines: buffer_size"),
            std::string::npos);
  EXPECT_FALSE(FileSourceDataset({"a"}, nullptr).status().ok());
  // A file that does not open is an error naming it, in its place.
  auto it = FileSourceDataset({"/nonexistent/n.txt"}, format).iterator();
  ASSERT_TRUE(it.ok());
  auto e = it->next();
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().ToString().find("/nonexistent/n.txt"), std::string::npos) << e.status();
}

}  // namespace
}  // namespace sluice
