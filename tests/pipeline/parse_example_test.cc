// parse_example(spec): the map of serialized Examples, its fusion with
// batch (batch the records, then parse each batch), zero-copy strings, and
// the shared conformance suite.
#include "sluice/pipeline/parse_example.h"

#include <gtest/gtest.h>

#include "conformance.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/records/example_builder.h"
#include "sluice/records/tfrecord_writer.h"
#include "test_util.h"

namespace sluice {
namespace {

using testing::ReadAll;
using testing::RunConformance;
using testing::ScratchDir;

ParseSpec Spec() {
  return {{"id", FixedLenFeature(DType::kInt64, {})},
          {"name", FixedLenFeature(DType::kString, {})},
          {"score", FixedLenFeature(DType::kFloat32, {2})}};
}

// 3 indexed files of 7 Examples: id i, name "n<i>", score {i, -i}.
std::vector<std::string> WriteFiles(const ScratchDir& dir) {
  std::vector<std::string> files;
  int id = 0;
  for (int f = 0; f < 3; ++f) {
    files.push_back(dir.file("part-" + std::to_string(f) + ".tfrecord"));
    TFRecordWriterOptions o;
    o.write_index = true;
    TFRecordWriter w = TFRecordWriter::Open(files.back(), o).value();
    for (int r = 0; r < 7; ++r, ++id) {
      ExampleBuilder b;
      b.AddInt64("id", id)
          .AddBytes("name", "n" + std::to_string(id))
          .AddFloatList("score", {static_cast<float>(id), -static_cast<float>(id)})
          .AddInt64List("tags", std::vector<int64_t>(static_cast<size_t>(id % 3), id));
      EXPECT_TRUE(w.Write(b.Serialize()).ok());
    }
    EXPECT_TRUE(w.Close().ok());
  }
  return files;
}

// The same map done by hand, which the pipeline cannot fuse.
Dataset ByHand(const Dataset& records) {
  auto parser = std::make_shared<ExampleParser>(ExampleParser::Create(Spec()).value());
  return records.map([parser](Element e) { return parser->ParseSingle(e[0]); });
}

TEST(ParseExampleTest, ParsesEachRecordWithoutCopyingItsStrings) {
  ScratchDir dir;
  const auto files = WriteFiles(dir);
  Dataset ds = TFRecordDataset(files).map(parse_example(Spec()), {.parallelism = 2});
  EXPECT_EQ(ReadAll(ds), ReadAll(ByHand(TFRecordDataset(files))));
  auto it = ds.iterator();
  ASSERT_TRUE(it.ok());
  auto e = it->next();
  ASSERT_TRUE(e.ok() && e->has_value());
  EXPECT_EQ((**e).names(), (std::vector<std::string>{"id", "name", "score"}));
  EXPECT_EQ((**e)[1].scalar<std::string_view>(), "n0");
  EXPECT_FALSE((**e)[1].string_owners().empty());  // a view into the read buffer
}

TEST(ParseExampleTest, FusedWithBatchParsesWholeBatches) {
  ScratchDir dir;
  const auto files = WriteFiles(dir);
  for (bool drop : {false, true}) {
    Dataset fused = TFRecordDataset(files)
                        .map(parse_example(Spec()), {.parallelism = 3})
                        .batch(4, {.drop_remainder = drop});
    EXPECT_EQ(fused.DebugString(),
              "TFRecordDataset(3 files, indexed) -> batch(4) -> map(parallelism=3)");
    Dataset plain = ByHand(TFRecordDataset(files)).batch(4, {.drop_remainder = drop});
    EXPECT_EQ(ReadAll(fused), ReadAll(plain));
    EXPECT_EQ(fused.cardinality(), plain.cardinality());
  }
  // VarLen features batch differently (values and row lengths): not fused.
  ParseSpec varlen = Spec();
  varlen.push_back({"tags", VarLenFeature(DType::kInt64)});
  EXPECT_EQ(TFRecordDataset(files).map(parse_example(varlen)).batch(4).DebugString(),
            "TFRecordDataset(3 files, indexed) -> map -> batch(4)");
  // After batch by hand: parse_example takes the vector of records too.
  EXPECT_EQ(ReadAll(TFRecordDataset(files).batch(5).map(parse_example(Spec()))),
            ReadAll(ByHand(TFRecordDataset(files)).batch(5)));
}

TEST(ParseExampleTest, OtherComponentsFollowTheFeatures) {
  ScratchDir dir;
  const auto files = WriteFiles(dir);
  // distribute's padding weight rides along, batched with the features.
  Dataset ds =
      TFRecordDataset(files).shard(2, 1, {.pad = true}).map(parse_example(Spec())).batch(3);
  auto it = ds.iterator();
  ASSERT_TRUE(it.ok());
  auto b = it->next();
  ASSERT_TRUE(b.ok() && b->has_value());
  EXPECT_EQ((**b).names(), (std::vector<std::string>{"id", "name", "score", "sample_weight"}));
  EXPECT_EQ((**b)[3].shape(), Shape({3}));
}

TEST(ParseExampleTest, ConformanceFusedAndNot) {
  ScratchDir dir;
  const auto files = WriteFiles(dir);
  RunConformance({.name = "parse_example",
                  .make =
                      [&](int p) {
                        return TFRecordDataset(files).map(parse_example(Spec()),
                                                          {.parallelism = p});
                      },
                  .expected = ReadAll(ByHand(TFRecordDataset(files)))});
  RunConformance(
      {.name = "parse_example fused with batch",
       .make =
           [&](int p) {
             return TFRecordDataset(files).map(parse_example(Spec()), {.parallelism = p}).batch(4);
           },
       .expected = ReadAll(ByHand(TFRecordDataset(files)).batch(4))});
}

TEST(ParseExampleTest, ErrorsNameTheFeatureAndTheRecord) {
  SLUICE_EXPECT_ERROR(
      Dataset::range(3).map(parse_example({{"x", FixedLenFeature(DType::kFloat64, {})}})).status(),
      StatusCode::kInvalidArgument, "parse_example: parse spec: feature 'x'");
  // Not an Example: the record's place is named.
  auto it = Dataset::from_tensor_slices(
                {Tensor::FromStrings(std::vector<std::string>{"\x0a\xff"}).value()})
                .map(parse_example(Spec()))
                .iterator();
  ASSERT_TRUE(it.ok());
  SLUICE_EXPECT_ERROR(it->next().status(), StatusCode::kDataLoss, "malformed Example");
  // A number where a serialized Example should be.
  auto nums = Dataset::range(2).map(parse_example(Spec())).iterator();
  ASSERT_TRUE(nums.ok());
  SLUICE_EXPECT_ERROR(nums->next().status(), StatusCode::kInvalidArgument, "string scalar");
}

}  // namespace
}  // namespace sluice
