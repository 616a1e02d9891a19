// parse_sequence_example(context, sequence): the map of serialized
// SequenceExamples (one record, or a batch of records: padded feature lists
// with their lengths), its fusion with batch where the results are the
// same, the conformance suite, errors, and Example specs with SparseFeature
// and RaggedFeature through parse_example.
#include "sluice/pipeline/parse_sequence_example.h"

#include <gtest/gtest.h>

#include "conformance.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/pipeline/parse_example.h"
#include "sluice/records/example_builder.h"
#include "sluice/records/tfrecord_writer.h"
#include "test_util.h"

namespace sluice {
namespace {

using testing::ReadAll;
using testing::RunConformance;
using testing::ScratchDir;

ParseSpec Context() {
  return {{"id", FixedLenFeature(DType::kInt64, {})},
          {"name", FixedLenFeature(DType::kString, {})},
          {"tags", VarLenFeature(DType::kInt64)}};
}
ParseSpec Sequence() {
  return {{"frames", FixedLenSequenceFeature(DType::kFloat32, {2})},
          {"words", VarLenFeature(DType::kString)}};
}

// 2 indexed files of 6 SequenceExamples: id i, name "n<i>", i % 3 tags,
// i % 4 frames {i, step}, i % 3 steps of words.
std::vector<std::string> WriteFiles(const ScratchDir& dir) {
  std::vector<std::string> files;
  int id = 0;
  for (int f = 0; f < 2; ++f) {
    files.push_back(dir.file("seq-" + std::to_string(f) + ".tfrecord"));
    TFRecordWriterOptions o;
    o.write_index = true;
    TFRecordWriter w = TFRecordWriter::Open(files.back(), o).value();
    for (int r = 0; r < 6; ++r, ++id) {
      SequenceExampleBuilder b;
      b.context()
          .AddInt64("id", id)
          .AddBytes("name", "n" + std::to_string(id))
          .AddInt64List("tags", std::vector<int64_t>(static_cast<size_t>(id % 3), id));
      b.AddFeatureList("frames");
      for (int s = 0; s < id % 4; ++s) {
        b.AppendFloatList("frames", {static_cast<float>(id), static_cast<float>(s)});
      }
      for (int s = 0; s < id % 3; ++s) {
        const std::string word = "w" + std::to_string(s);
        std::vector<std::string_view> words(static_cast<size_t>(s), word);
        b.AppendBytesList("words", words);
      }
      EXPECT_TRUE(w.Write(b.Serialize()).ok());
    }
    EXPECT_TRUE(w.Close().ok());
  }
  return files;
}

// The same map by hand (not fusable), through SequenceExampleParser.
Dataset ByHand(const Dataset& records, const ParseSpec& context, const ParseSpec& sequence) {
  auto parser = std::make_shared<SequenceExampleParser>(
      SequenceExampleParser::Create(context, sequence).value());
  return records.map([parser](Element e) -> Result<Element> {
    const bool single = e[0].shape().rank() == 0;
    SLUICE_ASSIGN_OR_RETURN(ParsedSequenceExample p,
                            single ? parser->Parse(e[0]) : parser->ParseBatch(e[0]));
    Element out = p.context;
    for (size_t i = 0; i < p.feature_lists.size(); ++i) {
      out.push_back(p.feature_lists[i], p.feature_lists.names()[i]);
    }
    return out;
  });
}

TEST(ParseSequenceExampleTest, OneRecordGivesContextThenFeatureLists) {
  ScratchDir dir;
  const auto files = WriteFiles(dir);
  Dataset ds =
      TFRecordDataset(files).map(parse_sequence_example(Context(), Sequence()), {.parallelism = 2});
  EXPECT_EQ(ReadAll(ds), ReadAll(ByHand(TFRecordDataset(files), Context(), Sequence())));
  auto it = ds.iterator();
  ASSERT_TRUE(it.ok());
  it->next().value();
  auto e = it->next();  // id 1: 1 tag, 1 frame, 1 step of words (empty)
  ASSERT_TRUE(e.ok() && e->has_value());
  EXPECT_EQ((**e).names(), (std::vector<std::string>{"id", "name", "tags", "frames", "words",
                                                     "words.row_lengths"}));
  EXPECT_EQ((**e)[1].scalar<std::string_view>(), "n1");
  EXPECT_FALSE((**e)[1].string_owners().empty());  // a view into the read buffer
  EXPECT_EQ((**e)[3].shape(), Shape({1, 2}));
  EXPECT_EQ((**e)[5].shape(), Shape({1}));
}

TEST(ParseSequenceExampleTest, BatchedRecordsArePaddedWithLengths) {
  ScratchDir dir;
  const auto files = WriteFiles(dir);
  Dataset ds = TFRecordDataset(files).batch(4).map(parse_sequence_example(Context(), Sequence()));
  EXPECT_EQ(ds.DebugString(), "TFRecordDataset(2 files, indexed) -> batch(4) -> map");
  auto it = ds.iterator();
  ASSERT_TRUE(it.ok());
  auto b = it->next();  // ids 0..3
  ASSERT_TRUE(b.ok() && b->has_value());
  EXPECT_EQ((**b).names(), (std::vector<std::string>{"id", "name", "tags", "tags.row_lengths",
                                                     "frames", "frames.length", "words",
                                                     "words.row_lengths", "words.length"}));
  EXPECT_EQ((**b)[4].shape(), Shape({4, 3, 2}));  // padded to 3 frames
  EXPECT_EQ((**b)[5].DebugString(), "int64[4] {0, 1, 2, 3}");
  EXPECT_EQ((**b)[8].DebugString(), "int64[4] {0, 1, 2, 0}");
  EXPECT_EQ((**b)[7].DebugString(), "int64[3] {0, 0, 1}");
  EXPECT_EQ((**b)[3].DebugString(), "int64[4] {0, 1, 2, 0}");
  EXPECT_EQ(ReadAll(ds), ReadAll(ByHand(TFRecordDataset(files).batch(4), Context(), Sequence())));
}

TEST(ParseSequenceExampleTest, FusedWithBatchOnlyWhenTheSame) {
  ScratchDir dir;
  const auto files = WriteFiles(dir);
  const ParseSpec fixed = {{"id", FixedLenFeature(DType::kInt64, {})},
                           {"name", FixedLenFeature(DType::kString, {})}};
  Dataset fused =
      TFRecordDataset(files).map(parse_sequence_example(fixed, {}), {.parallelism = 3}).batch(5);
  EXPECT_EQ(fused.DebugString(),
            "TFRecordDataset(2 files, indexed) -> batch(5) -> map(parallelism=3)");
  EXPECT_EQ(ReadAll(fused), ReadAll(ByHand(TFRecordDataset(files), fixed, {}).batch(5)));
  // Feature lists (or VarLen context) batch differently: not fused.
  EXPECT_EQ(
      TFRecordDataset(files).map(parse_sequence_example(fixed, Sequence())).batch(4).DebugString(),
      "TFRecordDataset(2 files, indexed) -> map -> batch(4)");
  EXPECT_EQ(
      TFRecordDataset(files).map(parse_sequence_example(Context(), {})).batch(4).DebugString(),
      "TFRecordDataset(2 files, indexed) -> map -> batch(4)");
}

TEST(ParseSequenceExampleTest, Conformance) {
  ScratchDir dir;
  const auto files = WriteFiles(dir);
  RunConformance({.name = "parse_sequence_example",
                  .make =
                      [&](int p) {
                        return TFRecordDataset(files).map(
                            parse_sequence_example(Context(), Sequence()), {.parallelism = p});
                      },
                  .expected = ReadAll(ByHand(TFRecordDataset(files), Context(), Sequence()))});
  RunConformance(
      {.name = "parse_sequence_example after batch",
       .make =
           [&](int p) {
             return TFRecordDataset(files).batch(5).map(
                 parse_sequence_example(Context(), Sequence()), {.parallelism = p});
           },
       .expected = ReadAll(ByHand(TFRecordDataset(files).batch(5), Context(), Sequence()))});
  const ParseSpec fixed = {{"id", FixedLenFeature(DType::kInt64, {})}};
  RunConformance({.name = "parse_sequence_example fused with batch",
                  .make =
                      [&](int p) {
                        return TFRecordDataset(files)
                            .map(parse_sequence_example(fixed, {}), {.parallelism = p})
                            .batch(4);
                      },
                  .expected = ReadAll(ByHand(TFRecordDataset(files), fixed, {}).batch(4))});
}

TEST(ParseSequenceExampleTest, ErrorsNameTheFeatureAndTheRecord) {
  SLUICE_EXPECT_ERROR(
      Dataset::range(3)
          .map(parse_sequence_example({{"x", FixedLenFeature(DType::kFloat64, {})}}, {}))
          .status(),
      StatusCode::kInvalidArgument, "parse_sequence_example: parse spec: feature 'x'");
  // One key in both specs: one Element cannot hold both.
  SLUICE_EXPECT_ERROR(Dataset::range(3)
                          .map(parse_sequence_example({{"k", VarLenFeature(DType::kInt64)}},
                                                      {{"k", VarLenFeature(DType::kInt64)}}))
                          .status(),
                      StatusCode::kInvalidArgument, "'k'");
  // A required feature list missing from record 1 of the file.
  ScratchDir dir;
  const std::string file = dir.file("bad.tfrecord");
  {
    TFRecordWriter w = TFRecordWriter::Open(file).value();
    SequenceExampleBuilder good;
    good.AddFeatureList("frames");
    EXPECT_TRUE(w.Write(good.Serialize()).ok());
    EXPECT_TRUE(w.Write(SequenceExampleBuilder().Serialize()).ok());
    EXPECT_TRUE(w.Close().ok());
  }
  const ParseSpec frames = {{"frames", FixedLenSequenceFeature(DType::kFloat32, {2})}};
  auto it = TFRecordDataset({file}).map(parse_sequence_example({}, frames)).iterator();
  ASSERT_TRUE(it.ok());
  EXPECT_TRUE(it->next().ok());
  SLUICE_EXPECT_ERROR(it->next().status(), StatusCode::kInvalidArgument, "'frames'");
  auto batched =
      TFRecordDataset({file}).batch(2).map(parse_sequence_example({}, frames)).iterator();
  ASSERT_TRUE(batched.ok());
  SLUICE_EXPECT_ERROR(batched->next().status(), StatusCode::kInvalidArgument,
                      "example 1 of the batch");
  // Not a SequenceExample.
  auto junk = Dataset::from_tensor_slices(
                  {Tensor::FromStrings(std::vector<std::string>{"\x0a\xff"}).value()})
                  .map(parse_sequence_example({}, frames))
                  .iterator();
  ASSERT_TRUE(junk.ok());
  SLUICE_EXPECT_ERROR(junk->next().status(), StatusCode::kDataLoss, "malformed SequenceExample");
  auto nums = Dataset::range(2).map(parse_sequence_example({}, frames)).iterator();
  ASSERT_TRUE(nums.ok());
  SLUICE_EXPECT_ERROR(nums->next().status(), StatusCode::kInvalidArgument, "string");
}

// SparseFeature / RaggedFeature through parse_example, one record and a batch.
TEST(ParseSequenceExampleTest, CompositeExampleFeaturesInThePipeline) {
  ScratchDir dir;
  const std::string file = dir.file("composite.tfrecord");
  {
    TFRecordWriter w = TFRecordWriter::Open(file).value();
    for (int64_t i = 0; i < 9; ++i) {
      ExampleBuilder b;
      std::vector<int64_t> idx;
      std::vector<float> val;
      for (int64_t k = i % 3; k > 0; --k) {
        idx.push_back(k * 2);
        val.push_back(static_cast<float>(i * 10 + k));
      }
      b.AddInt64List("idx", idx).AddFloatList("val", val);
      b.AddInt64List("v", std::vector<int64_t>(static_cast<size_t>(i % 4), i));
      b.AddInt64List("len", {0, i % 4});
      EXPECT_TRUE(w.Write(b.Serialize()).ok());
    }
    EXPECT_TRUE(w.Close().ok());
  }
  const ParseSpec spec = {{"sp", SparseFeature({"idx"}, "val", DType::kFloat32, {8})},
                          {"rg", RaggedFeature(DType::kInt64, "v", {RowLengths("len")})}};
  // Composite features batch differently: not fused, but batch-then-parse works.
  EXPECT_EQ(TFRecordDataset({file}).map(parse_example(spec)).batch(2).DebugString(),
            "TFRecordDataset(1 file) -> map -> batch(2)");
  auto it = TFRecordDataset({file}).map(parse_example(spec)).iterator();
  ASSERT_TRUE(it.ok());
  it->next().value();
  it->next().value();
  auto e = it->next();  // i = 2: indices {4, 2} sorted to {2, 4}
  ASSERT_TRUE(e.ok() && e->has_value());
  EXPECT_EQ((**e).names(), (std::vector<std::string>{"sp.indices", "sp", "sp.dense_shape", "rg",
                                                     "rg.row_splits_0"}));
  EXPECT_EQ((**e)[0].DebugString(), "int64[2,1] {2, 4}");
  EXPECT_EQ((**e)[1].DebugString(), "float32[2] {21, 22}");
  EXPECT_EQ((**e)[4].DebugString(), "int32[3] {0, 0, 2}");
  RunConformance(
      {.name = "parse_example with composite features, batched records", .make = [&](int p) {
         return TFRecordDataset({file}).batch(4).map(parse_example(spec), {.parallelism = p});
       }});
}

}  // namespace
}  // namespace sluice
