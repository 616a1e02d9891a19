// `sluice convert`: the shard planner and the Example framing directly, and
// the real binary on small generated image folders and IDX files.
#include <gtest/gtest.h>

#include <filesystem>

#include <fmt/format.h>

#include "convert_cli_util.h"
#include "convert_shards.h"
#include "idx_file.h"
#include "image_example.h"
#include "sluice/ops/decode_image.h"
#include "sluice/ops/jpeg.h"
#include "sluice/ops/jpeg_restart.h"
#include "sluice/ops/png.h"
#include "sluice/records/example_builder.h"
#include "sluice/records/example_parser.h"
#include "sluice/records/tfrecord_reader.h"
#include "test_util.h"

namespace sluice {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::Contains;
using testing::Gzip;
using testing::Idx;
using testing::Jpeg;
using testing::Pixels;
using testing::Png;
using testing::Put;
using testing::ReadFileOrDie;
using testing::ScratchDir;
using testing::Sluice;
using testing::Snapshot;
using testing::WriteFileOrDie;
using tools::ShardRange;

// Three classes whose sorted order ("Moose" < "ant" < "zebra") differs from
// their creation order, JPEG and PNG, gray and color, and files to ignore.
void MakeFolder(const std::string& root) {
  Put(root + "/zebra/z1.jpg", Jpeg(12, 16, 3, 1));
  Put(root + "/zebra/z0.JPEG", Jpeg(9, 7, 1, 2));
  Put(root + "/zebra/sub/z2.png", Png(5, 6, 4, 3));
  Put(root + "/ant/a0.png", Png(8, 8, 1, 4));
  Put(root + "/ant/a1.jpeg", Jpeg(10, 20, 3, 5));
  Put(root + "/Moose/m0.jpg", Jpeg(16, 16, 3, 6));
  Put(root + "/Moose/m1.png", Png(7, 3, 3, 7));
  Put(root + "/Moose/notes.txt", "not an image");
  Put(root + "/Moose/.hidden.jpg", "hidden");
  Put(root + "/README", "top-level file");
}

struct Parsed {
  std::string encoded, format, text, filename;
  int64_t height, width, channels, label;
};

std::vector<Parsed> ReadShard(const std::string& path) {
  static const ExampleParser parser =
      ExampleParser::Create({
                                {"image/encoded", FixedLenFeature(DType::kString, {})},
                                {"image/format", FixedLenFeature(DType::kString, {})},
                                {"image/height", FixedLenFeature(DType::kInt64, {})},
                                {"image/width", FixedLenFeature(DType::kInt64, {})},
                                {"image/channels", FixedLenFeature(DType::kInt64, {})},
                                {"image/class/label", FixedLenFeature(DType::kInt64, {})},
                                {"image/class/text", FixedLenFeature(DType::kString, {})},
                                {"image/filename", FixedLenFeature(DType::kString, {})},
                            })
          .value();
  std::vector<Parsed> out;
  auto reader = TFRecordReader::Open(path);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return out;
  while (true) {
    auto r = reader->Next();
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok() || !r->has_value()) break;
    Element e = parser.ParseSingle((*r)->data).value();
    auto str = [&](int i) { return std::string(e[i].scalar<std::string_view>()); };
    out.push_back({str(0), str(1), str(6), str(7), e[2].scalar<int64_t>(), e[3].scalar<int64_t>(),
                   e[4].scalar<int64_t>(), e[5].scalar<int64_t>()});
  }
  return out;
}

std::vector<std::string> ShardFiles(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (Contains(name, ".tfrecord")) files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// --- Pure pieces --------------------------------------------------------------

TEST(ConvertTest, ImageExampleIsExampleBuildersBytes) {
  const std::string long_text(300, 'k');
  for (size_t image_size : {0, 1, 127, 128, 16383, 16384, 70000}) {
    for (std::string_view text : {std::string_view("cat"), std::string_view(long_text)}) {
      const std::string image(image_size, '\xab');
      tools::ImageExampleFields f;
      f.format = "jpeg";
      f.height = 375;
      f.width = 1ll << 40;
      f.channels = 3;
      f.label = 999;
      f.class_text = text;
      f.filename = "n01440764/n01440764_10026.JPEG";
      ExampleBuilder b;
      b.AddBytes("image/encoded", image)
          .AddBytes("image/format", f.format)
          .AddInt64("image/height", f.height)
          .AddInt64("image/width", f.width)
          .AddInt64("image/channels", f.channels)
          .AddInt64("image/class/label", f.label)
          .AddBytes("image/class/text", f.class_text)
          .AddBytes("image/filename", f.filename);
      EXPECT_EQ(tools::SerializeImageExample(f, image), b.Serialize()) << image_size;
      const tools::ImageExampleFrame frame = tools::FrameImageExample(f, image.size());
      EXPECT_LE(frame.head.size(), tools::MaxImageExampleHead(text));
      EXPECT_LE(frame.tail.size(), tools::MaxImageExampleTail(f.filename, f.format));
    }
  }
}

TEST(ConvertTest, ShardPlans) {
  EXPECT_EQ(tools::ShardPath("out/train", 3, 10, Compression::kNone),
            "out/train-00003-of-00010.tfrecord");
  EXPECT_EQ(tools::ShardPath("t", 0, 1, Compression::kGzip), "t-00000-of-00001.tfrecord.gz");
  EXPECT_EQ(tools::PlanShardsByCount(7, 3), (std::vector<ShardRange>{{0, 2}, {2, 4}, {4, 7}}));
  EXPECT_EQ(tools::PlanShardsByCount(2, 3), (std::vector<ShardRange>{{0, 0}, {0, 1}, {1, 2}}));

  // 10 items of 100 bytes, 250-byte shards: 4 shards, each as near 250 as
  // can be (a tie keeps the shard smaller).
  std::vector<uint64_t> sizes(10, 100);
  EXPECT_EQ(tools::PlanShardsBySize(sizes, 250),
            (std::vector<ShardRange>{{0, 2}, {2, 5}, {5, 7}, {7, 10}}));
  EXPECT_EQ(tools::PlanShardsBySize(sizes, 1000).size(), 1u);
  EXPECT_EQ(tools::PlanShardsBySize(sizes, 1).size(), 10u);  // at most one shard per item
  // One huge item does not leave later shards empty.
  std::vector<uint64_t> skewed = {1, 10000, 1, 1, 1, 1};
  auto plan = tools::PlanShardsBySize(skewed, 2001);
  ASSERT_EQ(plan.size(), 5u);
  for (const ShardRange& r : plan) EXPECT_GT(r.size(), 0u);
  EXPECT_EQ(plan.back().end, skewed.size());
  EXPECT_EQ(tools::PlanShardsBySize({}, 100), (std::vector<ShardRange>{{0, 0}}));
}

// --- convert images -----------------------------------------------------------

TEST(ConvertTest, LabelsFollowSortedFoldersAndEveryFieldIsRight) {
  ScratchDir dir;
  const std::string in = dir.file("in");
  MakeFolder(in);
  CliRun r = Sluice(
      dir, "convert images " + in + " --out " + dir.file("out/train") + " --shards 2 --workers 3");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_TRUE(Contains(r.out, "found 7 images in 3 classes")) << r.out;
  EXPECT_TRUE(Contains(r.out, "ignored 2 files")) << r.out;  // notes.txt, README
  EXPECT_EQ(ReadFileOrDie(dir.file("out/train-labels.txt")),
            "# id\tclass\timages\n0\tMoose\t2\n1\tant\t2\n2\tzebra\t3\n");
  const std::vector<std::string> shards = ShardFiles(dir.file("out"));
  ASSERT_EQ(shards, (std::vector<std::string>{dir.file("out/train-00000-of-00002.tfrecord"),
                                              dir.file("out/train-00001-of-00002.tfrecord")}));
  std::vector<Parsed> all = ReadShard(shards[0]);
  EXPECT_EQ(all.size(), 3u);  // 7 items: 3 + 4
  for (const Parsed& p : ReadShard(shards[1])) all.push_back(p);
  const std::vector<std::string> expected_order = {
      "Moose/m0.jpg",     "Moose/m1.png",  "ant/a0.png",  "ant/a1.jpeg",
      "zebra/sub/z2.png", "zebra/z0.JPEG", "zebra/z1.jpg"};
  ASSERT_EQ(all.size(), expected_order.size());
  const std::vector<std::string> classes = {"Moose", "ant", "zebra"};
  for (size_t i = 0; i < all.size(); ++i) {
    const Parsed& p = all[i];
    SCOPED_TRACE(p.filename);
    EXPECT_EQ(p.filename, expected_order[i]);
    EXPECT_EQ(p.encoded, ReadFileOrDie(in + "/" + p.filename));  // the file's bytes, untouched
    EXPECT_EQ(classes[p.label], p.text);
    EXPECT_EQ(p.filename.substr(0, p.text.size()), p.text);
    Tensor decoded = ops::DecodeImage(p.encoded).value();
    EXPECT_EQ(p.height, decoded.shape().dim(0));
    EXPECT_EQ(p.width, decoded.shape().dim(1));
    EXPECT_EQ(p.channels, decoded.shape().dim(2));
    EXPECT_EQ(p.format,
              ops::DetectImageFormat(p.encoded) == ops::ImageFormat::kJpeg ? "jpeg" : "png");
  }
  EXPECT_EQ(all[4].channels, 4);  // the RGBA PNG
  EXPECT_EQ(all[5].channels, 1);  // the gray JPEG
}

TEST(ConvertTest, ShardsAndShardSize) {
  ScratchDir dir;
  const std::string in = dir.file("in");
  uint64_t total = 0;
  for (int i = 0; i < 12; ++i) {
    const std::string jpeg = Jpeg(16, 16, 3, 100 + i);
    total += jpeg.size();
    Put(in + "/c" + std::to_string(i % 2) + "/" + std::to_string(i) + ".jpg", jpeg);
  }
  ASSERT_EQ(
      Sluice(dir, "convert images " + in + " -o " + dir.file("a/x") + " --shards 5").exit_code, 0);
  std::vector<std::string> shards = ShardFiles(dir.file("a"));
  ASSERT_EQ(shards.size(), 5u);
  std::vector<size_t> counts;
  for (const auto& s : shards) counts.push_back(ReadShard(s).size());
  EXPECT_EQ(counts, (std::vector<size_t>{2, 2, 3, 2, 3}));  // i*12/5
  EXPECT_EQ(fs::path(shards[4]).filename(), "x-00004-of-00005.tfrecord");

  // About a third of the bytes per shard: 3 shards.
  const double mb = static_cast<double>(total) / 3 / 1e6 * 1.01;
  CliRun r =
      Sluice(dir, fmt::format("convert images {} -o {} --shard-size {}", in, dir.file("b/x"), mb));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  shards = ShardFiles(dir.file("b"));
  ASSERT_EQ(shards.size(), 3u);
  size_t records = 0;
  for (const auto& s : shards) records += ReadShard(s).size();
  EXPECT_EQ(records, 12u);
  // Both at once is a usage error.
  EXPECT_EQ(
      Sluice(dir, "convert images " + in + " -o " + dir.file("c/x") + " --shards 2 --shard-size 1")
          .exit_code,
      2);
}

TEST(ConvertTest, SameBytesWhateverTheWorkersAndSeededShuffle) {
  ScratchDir dir;
  const std::string in = dir.file("in");
  for (int i = 0; i < 40; ++i) {
    Put(in + "/c" + std::to_string(i % 4) + "/" + std::to_string(i) + ".jpg",
        Jpeg(8 + i % 5, 8, 3, 200 + i));
  }
  auto run = [&](const std::string& out, const std::string& flags) {
    CliRun r =
        Sluice(dir, "convert images " + in + " -o " + dir.file(out) + "/t --shards 3 " + flags);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return Snapshot(dir.file(out));
  };
  const auto one = run("w1", "--workers 1 --shuffle --seed 5 --index -c gzip");
  const auto four = run("w4", "--workers 4 --shuffle --seed 5 --index -c gzip");
  EXPECT_EQ(one.size(), 9u);  // 3 shards, 3 indexes, labels, manifest, the lock file
  EXPECT_EQ(one, four);

  auto order = [&](const std::string& out) {
    std::vector<std::string> names;
    for (const auto& s : ShardFiles(dir.file(out))) {
      for (const Parsed& p : ReadShard(s)) names.push_back(p.filename);
    }
    return names;
  };
  run("s5", "--shuffle --seed 5");
  run("s5b", "--shuffle --seed 5 --workers 2");
  run("s6", "--shuffle --seed 6");
  run("sorted", "");
  EXPECT_EQ(order("s5"), order("s5b"));
  EXPECT_NE(order("s5"), order("s6"));
  std::vector<std::string> sorted = order("sorted");
  EXPECT_TRUE(std::is_sorted(sorted.begin(), sorted.end()));
  EXPECT_NE(order("s5"), sorted);
  std::vector<std::string> shuffled = order("s5");
  std::sort(shuffled.begin(), shuffled.end());
  EXPECT_EQ(shuffled, sorted);
}

TEST(ConvertTest, BadFilesAreListedAndSkipped) {
  ScratchDir dir;
  const std::string in = dir.file("in");
  const std::string good = Jpeg(32, 32, 3, 9);
  Put(in + "/a/good.jpg", good);
  Put(in + "/a/png-named-jpg.jpg", Png(4, 4, 3, 1));  // converted: content decides
  Put(in + "/a/garbage.jpg", "this is not a JPEG at all");
  Put(in + "/a/empty.png", "");
  Put(in + "/a/cut-header.jpg", good.substr(0, 40));
  Put(in + "/b/anim.gif", "GIF89a\x01\x00\x01\x00");
  Put(in + "/b/cut-data.jpg", good.substr(0, good.size() * 2 / 3));
  Put(in + "/b/notes.txt", "ignored, not skipped");
  CliRun r = Sluice(dir, "convert images " + in + " -o " + dir.file("out/t") + " --shards 2");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_TRUE(Contains(r.err, "skipped 4 images")) << r.err;
  EXPECT_TRUE(Contains(r.err, "a/garbage.jpg: not a JPEG or PNG file")) << r.err;
  EXPECT_TRUE(Contains(r.err, "a/empty.png: empty file")) << r.err;
  EXPECT_TRUE(Contains(r.err, "a/cut-header.jpg: ")) << r.err;
  EXPECT_TRUE(Contains(r.err, "b/anim.gif: unsupported image format GIF")) << r.err;
  EXPECT_FALSE(Contains(r.err, "notes.txt")) << r.err;
  EXPECT_FALSE(Contains(r.err, "cut-data")) << r.err;  // its header is fine
  size_t converted = 0;
  for (const auto& s : ShardFiles(dir.file("out"))) converted += ReadShard(s).size();
  EXPECT_EQ(converted, 3u);

  // --check full decodes, and finds the image cut short after its header.
  r = Sluice(dir, "convert images " + in + " -o " + dir.file("full/t") + " --check full");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_TRUE(Contains(r.err, "skipped 5 images")) << r.err;
  EXPECT_TRUE(Contains(r.err, "b/cut-data.jpg: ")) << r.err;
}

TEST(ConvertTest, ResumeAfterAnInterruptionGivesTheSameBytes) {
  ScratchDir dir;
  const std::string in = dir.file("in");
  for (int i = 0; i < 9; ++i) Put(in + "/c/" + std::to_string(i) + ".png", Png(6, 6, 3, 300 + i));
  const std::string flags = " -o " + dir.file("out/t") + " --shards 3 --index --shuffle --seed 3";
  ASSERT_EQ(Sluice(dir, "convert images " + in + flags).exit_code, 0);
  const auto complete = Snapshot(dir.file("out"));
  ASSERT_EQ(complete.size(), 9u);  // 3 shards, 3 .idx, labels, manifest, the lock file

  // An interrupted run: shard 1 never renamed (a stale temporary instead),
  // shard 2 without its .idx, shard 0 done.
  fs::remove(dir.file("out/t-00001-of-00003.tfrecord"));
  fs::remove(dir.file("out/t-00001-of-00003.tfrecord.idx"));
  WriteFileOrDie(dir.file("out/.t-00001-of-00003.tfrecord.tmp-1a2b3c4d"), "partial");
  fs::remove(dir.file("out/t-00002-of-00003.tfrecord.idx"));
  const auto shard0_time = fs::last_write_time(dir.file("out/t-00000-of-00003.tfrecord"));
  CliRun r = Sluice(dir, "convert images " + in + flags + " --resume");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "resumed: 1 of 3 shards")) << r.out;
  EXPECT_TRUE(Contains(r.out, "removed 1 temporary file left")) << r.out;
  EXPECT_TRUE(Contains(r.out, "into 2 shards")) << r.out;
  EXPECT_EQ(Snapshot(dir.file("out")), complete);
  EXPECT_EQ(fs::last_write_time(dir.file("out/t-00000-of-00003.tfrecord")), shard0_time);
}

TEST(ConvertTest, GzipShardsReadBackAndResizeReencodes) {
  ScratchDir dir;
  const std::string in = dir.file("in");
  Put(in + "/a/0.jpg", Jpeg(40, 60, 3, 1));
  Put(in + "/a/1.png", Png(30, 30, 1, 2));
  Put(in + "/b/2.png", Png(20, 50, 4, 3));
  ASSERT_EQ(
      Sluice(dir, "convert images " + in + " -o " + dir.file("plain/t") + " --shards 1").exit_code,
      0);
  CliRun r =
      Sluice(dir, "convert images " + in + " -o " + dir.file("gz/t") + " --shards 1 -c gzip");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string gz = dir.file("gz/t-00000-of-00001.tfrecord.gz");
  EXPECT_EQ(ReadFileOrDie(gz).substr(0, 2), "\x1f\x8b");
  std::vector<Parsed> a = ReadShard(dir.file("plain/t-00000-of-00001.tfrecord"));
  std::vector<Parsed> b = ReadShard(gz);
  ASSERT_EQ(a.size(), 3u);
  ASSERT_EQ(b.size(), 3u);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].encoded, b[i].encoded);

  r = Sluice(dir, "convert images " + in + " -o " + dir.file("small/t") +
                      " --shards 1 --resize 16x12 --quality 80");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const Parsed& p : ReadShard(dir.file("small/t-00000-of-00001.tfrecord"))) {
    SCOPED_TRACE(p.filename);
    EXPECT_EQ(p.format, "jpeg");
    Tensor img = ops::DecodeJpeg(p.encoded).value();
    EXPECT_EQ(img.shape(), (Shape{12, 16, p.channels}));
    EXPECT_EQ(p.height, 12);
    EXPECT_EQ(p.width, 16);
    EXPECT_EQ(p.channels, p.filename == "a/1.png" ? 1 : 3);
  }
  EXPECT_EQ(
      Sluice(dir, "convert images " + in + " -o " + dir.file("bad/t") + " --resize 16").exit_code,
      2);
}

// The DRI value of a JPEG (-1 without one), from its markers before the
// first scan.
int64_t RestartIntervalOf(const std::string& jpeg) {
  size_t pos = 2;
  while (pos + 4 <= jpeg.size() && static_cast<uint8_t>(jpeg[pos]) == 0xFF) {
    const uint8_t m = static_cast<uint8_t>(jpeg[pos + 1]);
    if (m == 0xDA) break;
    if (m == 0xDD)
      return static_cast<uint8_t>(jpeg[pos + 4]) << 8 | static_cast<uint8_t>(jpeg[pos + 5]);
    pos += 2 + (static_cast<uint8_t>(jpeg[pos + 2]) << 8 | static_cast<uint8_t>(jpeg[pos + 3]));
  }
  return -1;
}

TEST(ConvertTest, RestartIntervalReencodesJpegsLosslessly) {
  ScratchDir dir;
  const std::string in = dir.file("in");
  ops::EncodeJpegOptions progressive;
  progressive.progressive = true;
  Put(in + "/a/color.jpg", Jpeg(40, 60, 3, 1));
  Put(in + "/a/gray.jpg", Jpeg(20, 33, 1, 2));
  Put(in + "/b/progressive.jpg", ops::EncodeJpeg(Pixels(30, 50, 3, 3), progressive).value());
  Put(in + "/b/pic.png", Png(9, 7, 3, 4));
  const std::string good = Jpeg(32, 32, 3, 9);
  Put(in + "/b/cut-data.jpg", good.substr(0, good.size() * 2 / 3));  // its header is fine
  CliRun r = Sluice(dir, "convert images " + in + " -o " + dir.file("out/t") +
                             " --shards 1 --restart-interval 1");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_TRUE(Contains(r.err, "skipped 1 image that")) << r.err;
  EXPECT_TRUE(Contains(r.err, "b/cut-data.jpg: ")) << r.err;
  EXPECT_TRUE(Contains(r.err, "truncated")) << r.err;
  std::vector<Parsed> records = ReadShard(dir.file("out/t-00000-of-00001.tfrecord"));
  ASSERT_EQ(records.size(), 4u);
  for (const Parsed& p : records) {
    SCOPED_TRACE(p.filename);
    const std::string source = ReadFileOrDie(in + "/" + p.filename);
    if (p.format == "png") {
      EXPECT_EQ(p.encoded, source);
      continue;
    }
    EXPECT_EQ(p.format, "jpeg");
    EXPECT_NE(p.encoded, source);
    EXPECT_EQ(RestartIntervalOf(p.encoded), 1);
    EXPECT_TRUE(ops::HasRowAlignedRestarts(p.encoded).value());
    EXPECT_EQ(RestartIntervalOf(source), -1);
    // The same pixels as the file, whichever DCT.
    for (auto dct : {ops::JpegDctMethod::kIntegerFast, ops::JpegDctMethod::kIntegerAccurate}) {
      ops::DecodeJpegOptions o;
      o.dct_method = dct;
      Tensor want = ops::DecodeJpeg(source, o).value();
      Tensor got = ops::DecodeJpeg(p.encoded, o).value();
      EXPECT_TRUE(Identical(got, want));
      EXPECT_EQ(p.height, want.shape().dim(0));
      EXPECT_EQ(p.width, want.shape().dim(1));
      EXPECT_EQ(p.channels, want.shape().dim(2));
    }
  }

  // With --resize the encoder writes them: 64x48 is 4 MCUs per row at
  // 4:2:0 and 8 for gray, so 3 is lowered to 2. PNGs become JPEGs there too.
  r = Sluice(dir, "convert images " + in + " -o " + dir.file("small/t") +
                      " --shards 1 --resize 64x48 --restart-interval 3");
  EXPECT_EQ(r.exit_code, 3) << r.err;  // cut-data.jpg cannot be decoded either
  records = ReadShard(dir.file("small/t-00000-of-00001.tfrecord"));
  ASSERT_EQ(records.size(), 4u);
  for (const Parsed& p : records) {
    SCOPED_TRACE(p.filename);
    EXPECT_EQ(RestartIntervalOf(p.encoded), 2);
    EXPECT_EQ(ops::DecodeJpeg(p.encoded).value().shape(), (Shape{48, 64, p.channels}));
  }
  EXPECT_EQ(
      Sluice(dir, "convert images " + in + " -o " + dir.file("bad/t") + " --restart-interval -1")
          .exit_code,
      2);
}

TEST(ConvertTest, FatalErrorsExitOne) {
  ScratchDir dir;
  const std::string in = dir.file("in");
  Put(in + "/a/0.jpg", Jpeg(8, 8, 3, 1));
  WriteFileOrDie(dir.file("afile"), "x");
  CliRun r = Sluice(dir, "convert images " + in + " -o " + dir.file("afile") + "/sub/t");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Contains(r.err, dir.file("afile"))) << r.err;
  r = Sluice(dir, "convert images " + dir.file("afile") + " -o " + dir.file("o/t"));
  EXPECT_EQ(r.exit_code, 2);  // not a folder: a usage error
  r = Sluice(dir, "convert images " + in + " -o " + in + "/out/t");
  EXPECT_EQ(r.exit_code, 1);  // its folder would become a class
  EXPECT_TRUE(Contains(r.err, "lies inside")) << r.err;
  EXPECT_FALSE(fs::exists(in + "/out"));
  fs::create_directories(dir.file("empty/cls"));
  r = Sluice(dir, "convert images " + dir.file("empty") + " -o " + dir.file("o/t"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Contains(r.err, "no images found")) << r.err;
  for (const char* sub : {"images", "idx"}) {
    CliRun help = Sluice(dir, std::string("convert ") + sub + " --help");
    EXPECT_EQ(help.exit_code, 0);
    EXPECT_TRUE(Contains(help.out, "Examples:")) << help.out;
  }
}

// --- convert idx --------------------------------------------------------------

TEST(ConvertTest, IdxFilesBecomePngExamples) {
  ScratchDir dir;
  const int n = 6, rows = 4, cols = 3;
  std::string pixels(n * rows * cols, '\0');
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<char>(i * 37);
  const std::string labels = {9, 0, 3, 9, 1, 2};
  WriteFileOrDie(dir.file("train-images-idx3-ubyte.gz"), Gzip(Idx(0x803, {n, rows, cols}, pixels)));
  WriteFileOrDie(dir.file("train-labels-idx1-ubyte"), Idx(0x801, {n}, labels));
  CliRun r = Sluice(dir, "convert idx " + dir.file("train-images-idx3-ubyte.gz") + " " +
                             dir.file("train-labels-idx1-ubyte") + " --fashion -o " +
                             dir.file("out/fm") + " --shards 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<Parsed> all = ReadShard(dir.file("out/fm-00000-of-00002.tfrecord"));
  for (const Parsed& p : ReadShard(dir.file("out/fm-00001-of-00002.tfrecord"))) all.push_back(p);
  ASSERT_EQ(all.size(), 6u);
  const std::vector<std::string> fashion = {"T-shirt/top", "Trouser",   "Pullover", "Dress",
                                            "Coat",        "Sandal",    "Shirt",    "Sneaker",
                                            "Bag",         "Ankle boot"};
  for (int i = 0; i < n; ++i) {
    const Parsed& p = all[i];
    EXPECT_EQ(p.filename, fmt::format("train-{:05d}", i));
    EXPECT_EQ(p.label, labels[i]);
    EXPECT_EQ(p.text, fashion[labels[i]]);
    EXPECT_EQ(p.format, "png");
    EXPECT_EQ(p.height, rows);
    EXPECT_EQ(p.width, cols);
    EXPECT_EQ(p.channels, 1);
    Tensor img = ops::DecodePng(p.encoded).value();
    ASSERT_EQ(img.shape(), (Shape{rows, cols, 1}));
    const auto px = img.flat<uint8_t>();
    EXPECT_EQ(std::string(px.begin(), px.end()), pixels.substr(i * rows * cols, rows * cols));
  }
  EXPECT_EQ(ReadFileOrDie(dir.file("out/fm-labels.txt")),
            "# id\tclass\timages\n0\tT-shirt/top\t1\n1\tTrouser\t1\n2\tPullover\t1\n3\tDress\t1\n"
            "4\tCoat\t0\n5\tSandal\t0\n6\tShirt\t0\n7\tSneaker\t0\n8\tBag\t0\n9\tAnkle boot\t2\n");

  // Without names, the ids are the names (MNIST's digits).
  r = Sluice(dir, "convert idx " + dir.file("train-images-idx3-ubyte.gz") + " " +
                      dir.file("train-labels-idx1-ubyte") + " -o " + dir.file("d/m"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ReadShard(dir.file("d/m-00000-of-00001.tfrecord"))[0].text, "9");
}

TEST(ConvertTest, HostileIdxHeadersAreRejectedNamingFileAndOffset) {
  ScratchDir dir;
  const std::string labels = dir.file("labels");
  WriteFileOrDie(labels, Idx(0x801, {2}, std::string("\x01\x02", 2)));
  struct Case {
    std::string bytes, expected;
  };
  const std::vector<Case> cases = {
      {Idx(0x803, {1000000, 28, 28}, std::string(100, 'x')), "from offset 16"},
      {Idx(0x803, {2, 28, 28}, std::string(2 * 28 * 28 + 5, 'x')), "5 extra bytes at offset 1584"},
      {Idx(0xd03, {2, 2, 2}, std::string(8, 'x')), "element type 0x0d at offset 2"},
      {Idx(0x802, {2, 2}, std::string(4, 'x')), "2 dimensions at offset 3"},
      {Idx(0x10803, {2, 2, 2}, std::string(8, 'x')), "not an IDX file"},
      {Idx(0x803, {2, 0, 5}, ""), "image dimension 1 at offset 8 is 0"},
      {Idx(0x803, {1, 65536, 65536}, ""), "over the limit"},
      {std::string("\0\0\x08\x03\0\0", 6), "the IDX header is cut short"},
  };
  for (const Case& c : cases) {
    WriteFileOrDie(dir.file("images"), c.bytes);
    CliRun r =
        Sluice(dir, "convert idx " + dir.file("images") + " " + labels + " -o " + dir.file("o/x"));
    EXPECT_EQ(r.exit_code, 1) << c.expected;
    EXPECT_TRUE(Contains(r.err, dir.file("images") + ": ")) << r.err;
    EXPECT_TRUE(Contains(r.err, c.expected)) << r.err;
  }
  // A gzip file whose header claims more than deflate can hold.
  WriteFileOrDie(dir.file("images.gz"), Gzip(Idx(0x803, {4000000, 28, 28}, "")));
  CliRun r =
      Sluice(dir, "convert idx " + dir.file("images.gz") + " " + labels + " -o " + dir.file("o/x"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Contains(r.err, "inflate to at most")) << r.err;
  // Counts that disagree, and a label without a name.
  WriteFileOrDie(dir.file("images"), Idx(0x803, {3, 1, 1}, "abc"));
  r = Sluice(dir, "convert idx " + dir.file("images") + " " + labels + " -o " + dir.file("o/x"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Contains(r.err, "holds 3 images")) << r.err;
  WriteFileOrDie(dir.file("images"), Idx(0x803, {2, 1, 1}, "ab"));
  WriteFileOrDie(dir.file("names"), "zero\none\n");
  r = Sluice(dir, "convert idx " + dir.file("images") + " " + labels + " --class-names " +
                      dir.file("names") + " -o " + dir.file("o/x"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Contains(r.err, "label 2 of image 1 (offset 9)")) << r.err;
  // And direct parsing names what it was given.
  EXPECT_EQ(tools::ParseIdx("", 1, "mem").status().code(), StatusCode::kDataLoss);
}

}  // namespace
}  // namespace sluice
