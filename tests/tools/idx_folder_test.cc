// `sluice convert idx --to-folder`: folder names, and IDX files -> image
// folder -> `sluice convert images` -> the same labels and pixels.
#include "idx_folder.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "convert_cli_util.h"
#include "sluice/ops/png.h"
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
using testing::ReadFileOrDie;
using testing::ScratchDir;
using testing::Sluice;
using testing::WriteFileOrDie;
using tools::ClassFolderNames;
using tools::SafeFolderName;

struct Record {
  std::string encoded, text, filename;
  int64_t label;
};

std::vector<Record> ReadRecords(const std::string& path) {
  static const ExampleParser parser =
      ExampleParser::Create({
                                {"image/encoded", FixedLenFeature(DType::kString, {})},
                                {"image/class/label", FixedLenFeature(DType::kInt64, {})},
                                {"image/class/text", FixedLenFeature(DType::kString, {})},
                                {"image/filename", FixedLenFeature(DType::kString, {})},
                            })
          .value();
  std::vector<Record> out;
  auto reader = TFRecordReader::Open(path);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return out;
  while (true) {
    auto r = reader->Next();
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok() || !r->has_value()) break;
    Element e = parser.ParseSingle((*r)->data).value();
    auto str = [&](int i) { return std::string(e[i].scalar<std::string_view>()); };
    out.push_back({str(0), str(2), str(3), e[1].scalar<int64_t>()});
  }
  return out;
}

std::string PixelsOf(const std::string& png) {
  Tensor img = ops::DecodePng(png).value();
  const auto px = img.flat<uint8_t>();
  return std::string(px.begin(), px.end());
}

// Every file below `root`, relative, sorted.
std::vector<std::string> Tree(const std::string& root) {
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    files.push_back(fs::relative(e.path(), root).string() + (e.is_directory() ? "/" : ""));
  }
  std::sort(files.begin(), files.end());
  return files;
}

const std::vector<std::string> kFashion = {"T-shirt/top", "Trouser",   "Pullover", "Dress",
                                           "Coat",        "Sandal",    "Shirt",    "Sneaker",
                                           "Bag",         "Ankle boot"};

// --- Folder names ------------------------------------------------------------

TEST(IdxFolderTest, SafeFolderNames) {
  EXPECT_EQ(SafeFolderName("T-shirt/top"), "T-shirt_top");
  EXPECT_EQ(SafeFolderName("Ankle boot"), "Ankle_boot");
  EXPECT_EQ(SafeFolderName(".hidden"), "_hidden");
  EXPECT_EQ(SafeFolderName(".."), "_.");
  EXPECT_EQ(SafeFolderName(""), "_");
  EXPECT_EQ(SafeFolderName("a\\b:c*d\xc3\xa9"), "a_b_c_d__");
  EXPECT_EQ(SafeFolderName("v1.2+x_y-z"), "v1.2+x_y-z");
}

TEST(IdxFolderTest, FolderNamesSortInLabelOrder) {
  // Fashion-MNIST's names do not sort in label order: all get the label.
  EXPECT_EQ(
      ClassFolderNames(kFashion),
      (std::vector<std::string>{"0_T-shirt_top", "1_Trouser", "2_Pullover", "3_Dress", "4_Coat",
                                "5_Sandal", "6_Shirt", "7_Sneaker", "8_Bag", "9_Ankle_boot"}));
  // MNIST's digits, and names already in order, stay as they are.
  const std::vector<std::string> digits = {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"};
  EXPECT_EQ(ClassFolderNames(digits), digits);
  EXPECT_EQ(ClassFolderNames({"ant", "bee/wasp", "cat"}),
            (std::vector<std::string>{"ant", "bee_wasp", "cat"}));
  // Names equal once made safe, or equal already, are told apart.
  EXPECT_EQ(ClassFolderNames({"a/b", "a_b"}), (std::vector<std::string>{"0_a_b", "1_a_b"}));
  EXPECT_EQ(ClassFolderNames({"x", "x"}), (std::vector<std::string>{"0_x", "1_x"}));
  // Eleven label numbers: "10" < "2", so padded to two digits.
  std::vector<std::string> eleven;
  for (int i = 0; i <= 10; ++i) eleven.push_back(std::to_string(i));
  const std::vector<std::string> folders = ClassFolderNames(eleven);
  EXPECT_EQ(folders.front(), "00_0");
  EXPECT_EQ(folders.back(), "10_10");
  EXPECT_TRUE(std::is_sorted(folders.begin(), folders.end()));
  EXPECT_EQ(tools::IdxImageFileName("train", 42), "train-00042.png");
}

// --- The command ---------------------------------------------------------------

class ToFolderTest : public ::testing::Test {
 protected:
  static constexpr int kN = 7, kRows = 5, kCols = 4;
  void SetUp() override {
    pixels_.resize(kN * kRows * kCols);
    for (size_t i = 0; i < pixels_.size(); ++i) pixels_[i] = static_cast<char>(i * 53 + 11);
    images_ = dir_.file("train-images-idx3-ubyte.gz");
    labels_path_ = dir_.file("train-labels-idx1-ubyte");
    WriteFileOrDie(images_, Gzip(Idx(0x803, {kN, kRows, kCols}, pixels_)));
    WriteFileOrDie(labels_path_, Idx(0x801, {kN}, labels_));
  }
  std::string Args() const { return "convert idx " + images_ + " " + labels_path_ + " "; }
  std::string ImagePixels(int i) const { return pixels_.substr(i * kRows * kCols, kRows * kCols); }

  ScratchDir dir_;
  std::string pixels_;
  const std::string labels_ = {9, 0, 3, 9, 1, 2, 0};  // classes 4..8 have no images
  std::string images_, labels_path_;
};

TEST_F(ToFolderTest, FolderConvertsBackToTheSameLabelsAndPixels) {
  const std::string folder = dir_.file("fashion");
  CliRun r = Sluice(dir_, Args() + "--fashion --to-folder " + folder + " -j 3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "wrote 7 images")) << r.out;
  EXPECT_TRUE(Contains(r.out, "0\t0_T-shirt_top\t2 images")) << r.out;
  EXPECT_EQ(Tree(folder),
            (std::vector<std::string>{
                "0_T-shirt_top/", "0_T-shirt_top/train-00001.png", "0_T-shirt_top/train-00006.png",
                "1_Trouser/", "1_Trouser/train-00004.png", "2_Pullover/",
                "2_Pullover/train-00005.png", "3_Dress/", "3_Dress/train-00002.png", "4_Coat/",
                "5_Sandal/", "6_Shirt/", "7_Sneaker/", "8_Bag/", "9_Ankle_boot/",
                "9_Ankle_boot/train-00000.png", "9_Ankle_boot/train-00003.png"}));
  const std::string one = ReadFileOrDie(folder + "/3_Dress/train-00002.png");
  Tensor decoded = ops::DecodePng(one).value();
  EXPECT_EQ(decoded.shape(), (Shape{kRows, kCols, 1}));
  EXPECT_EQ(ops::ReadPngHeader(one).value().color_type, ops::PngColorType::kGray);
  EXPECT_EQ(PixelsOf(one), ImagePixels(2));

  // `convert images` numbers the sorted folders: the labels come back.
  r = Sluice(dir_, "convert images " + folder + " -o " + dir_.file("rec/fm"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<Record> records = ReadRecords(dir_.file("rec/fm-00000-of-00001.tfrecord"));
  ASSERT_EQ(records.size(), static_cast<size_t>(kN));
  std::map<int, int64_t> label_of;
  for (const Record& rec : records) {
    // "<class folder>/train-00042.png"
    const size_t dash = rec.filename.rfind('-');
    ASSERT_NE(dash, std::string::npos) << rec.filename;
    const int i = std::stoi(rec.filename.substr(dash + 1, 5));
    label_of[i] = rec.label;
    EXPECT_EQ(rec.label, labels_[i]) << rec.filename;
    EXPECT_EQ(rec.text, ClassFolderNames(kFashion)[labels_[i]]);
    EXPECT_EQ(PixelsOf(rec.encoded), ImagePixels(i)) << rec.filename;
  }
  EXPECT_EQ(label_of.size(), static_cast<size_t>(kN));
  EXPECT_TRUE(Contains(ReadFileOrDie(dir_.file("rec/fm-labels.txt")), "9\t9_Ankle_boot\t2\n"));

  // Label numbers as names (MNIST): plain digit folders, 0 ... 9.
  r = Sluice(dir_, Args() + "--to-folder " + dir_.file("digits/") + " --name-prefix d");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ReadFileOrDie(dir_.file("digits/9/d-00003.png")),
            ReadFileOrDie(folder + "/9_Ankle_boot/train-00003.png"));
  EXPECT_TRUE(fs::is_directory(dir_.file("digits/4")));
}

TEST_F(ToFolderTest, ResumeKeepsWhatExistsAndFinishesTheRest) {
  const std::string folder = dir_.file("f");
  ASSERT_EQ(Sluice(dir_, Args() + "--to-folder " + folder).exit_code, 0);
  const std::string removed = folder + "/0/train-00006.png";
  const std::string kept = folder + "/9/train-00000.png";
  const std::string original = ReadFileOrDie(removed);
  fs::remove(removed);
  WriteFileOrDie(folder + "/0/.train-00006.png.tmp-0badf00d", "partial");  // a killed write
  WriteFileOrDie(kept, "left alone");

  // Without --resume a folder that is not empty is refused.
  CliRun r = Sluice(dir_, Args() + "--to-folder " + folder);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Contains(r.err, folder + " is not empty")) << r.err;

  fs::create_directories(folder + "/stray");
  r = Sluice(dir_, Args() + "--to-folder " + folder + " --resume");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "wrote 1 images")) << r.out;
  EXPECT_TRUE(Contains(r.out, "resumed: 6 images")) << r.out;
  EXPECT_TRUE(Contains(r.err, folder + "/stray is not a class folder")) << r.err;
  EXPECT_EQ(ReadFileOrDie(removed), original);
  EXPECT_EQ(ReadFileOrDie(kept), "left alone");
  EXPECT_FALSE(fs::exists(folder + "/0/.train-00006.png.tmp-0badf00d"));
}

TEST_F(ToFolderTest, OutAndToFolderExcludeEachOther) {
  const std::string folder = dir_.file("f");
  CliRun r = Sluice(dir_, Args());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Contains(r.err, "--out or --to-folder is required")) << r.err;
  r = Sluice(dir_, Args() + "--to-folder " + folder + " -o " + dir_.file("o/x"));
  EXPECT_EQ(r.exit_code, 2);
  r = Sluice(dir_, Args() + "--to-folder " + folder + " --shards 2");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_FALSE(fs::exists(folder));
  WriteFileOrDie(dir_.file("a-file"), "x");
  r = Sluice(dir_, Args() + "--to-folder " + dir_.file("a-file"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Contains(r.err, "is not a folder")) << r.err;
  r = Sluice(dir_, Args() + "--to-folder " + folder + " --name-prefix a/b");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Contains(r.err, "--name-prefix a/b holds a '/'")) << r.err;
  EXPECT_FALSE(fs::exists(folder));
  r = Sluice(dir_, "convert idx --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(Contains(r.out, "--to-folder")) << r.out;
  EXPECT_TRUE(Contains(r.out, "0_T-shirt_top")) << r.out;
}

TEST_F(ToFolderTest, BadIdxFilesAreNamedAndNothingIsWritten) {
  const std::string folder = dir_.file("bad");
  const std::string bad = dir_.file("bad-images-idx3-ubyte");
  struct Case {
    std::string images, labels, expected;
  };
  const std::string full = Idx(0x803, {kN, kRows, kCols}, pixels_);
  const std::vector<Case> cases = {
      // Truncated: the header claims more bytes than follow.
      {full.substr(0, full.size() - 9), labels_path_, bad + ": "},
      // Truncated gzip stream.
      {Gzip(full).substr(0, 30), labels_path_, bad + ": "},
      // Wrong magic: a labels header where images are expected.
      {Idx(0x801, {kN}, labels_), labels_path_, bad + ": "},
      // Wrong magic: not an IDX file at all.
      {"\x89PNG\r\n\x1a\n and more", labels_path_, "not an IDX file"},
      // Count mismatch: 6 images, 7 labels.
      {Idx(0x803, {kN - 1, kRows, kCols}, pixels_.substr(0, (kN - 1) * kRows * kCols)),
       labels_path_, "holds 6 images (count at offset 4) but " + labels_path_ + " holds 7 labels"},
  };
  for (const Case& c : cases) {
    WriteFileOrDie(bad, c.images);
    CliRun r = Sluice(dir_, "convert idx " + bad + " " + c.labels + " --to-folder " + folder);
    EXPECT_EQ(r.exit_code, 1) << c.expected;
    EXPECT_TRUE(Contains(r.err, bad)) << r.err;
    EXPECT_TRUE(Contains(r.err, c.expected)) << r.err;
    EXPECT_FALSE(fs::exists(folder));
  }
  // A bad labels file is named too.
  const std::string bad_labels = dir_.file("bad-labels");
  WriteFileOrDie(bad_labels, Idx(0x803, {kN, 1, 1}, labels_));
  CliRun r = Sluice(dir_, "convert idx " + images_ + " " + bad_labels + " --to-folder " + folder);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Contains(r.err, bad_labels + ": ")) << r.err;
  EXPECT_FALSE(fs::exists(folder));
}

}  // namespace
}  // namespace sluice
