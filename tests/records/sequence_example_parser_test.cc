// SequenceExampleParser: TensorFlow's golden outputs, error texts, and
// randomized agreement with protobuf and the reference parser.
#include "sluice/records/sequence_example_parser.h"

#include <google/protobuf/stubs/logging.h>
#include <gtest/gtest.h>

#include <random>

#include "example_golden.h"
#include "example_reference.h"
#include "random_example.h"
#include "sluice/records/example_builder.h"
#include "sluice/records/example_proto.h"
#include "test_util.h"

namespace sluice {
namespace {

using testing::CompareGolden;
using testing::CompareWithReference;
using testing::FromHex;
using testing::Json;

bool ProtoParses(std::string_view bytes, proto::SequenceExample* ex) {
  google::protobuf::LogSilencer silence;
  return ex->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
}

SequenceExampleParser MustCreate(const ParseSpec& context, const ParseSpec& sequence) {
  Result<SequenceExampleParser> p = SequenceExampleParser::Create(context, sequence);
  EXPECT_TRUE(p.ok()) << p.status();
  return std::move(p).value();
}

TEST(SequenceExampleGoldenTest, MatchesTensorFlowParseSingleSequenceExample) {
  const Json golden = testing::ReadGoldenJson("sequence_parsed.json");
  const ParseSpec context = testing::GoldenSpec(golden["context_spec"]);
  const ParseSpec sequence = testing::GoldenSpec(golden["sequence_spec"]);
  const SequenceExampleParser parser = MustCreate(context, sequence);
  const auto records =
      testing::ReadTFRecordPayloads(testing::TestDataPath("tf/sequence_examples.tfrecord"));
  ASSERT_EQ(records.size(), 3u);
  for (const Json& expected : golden["parse_single_sequence_example"].array()) {
    const size_t i = static_cast<size_t>(expected["index"].int64());
    SCOPED_TRACE(i);
    const std::string bytes = FromHex(golden["serialized_hex"][i].str());
    EXPECT_EQ(bytes, records[i]);
    SLUICE_ASSERT_OK_AND_ASSIGN(ParsedSequenceExample out, parser.Parse(bytes));
    for (const auto& [key, t] : expected["context"].object()) {
      ASSERT_NE(out.context.find(key), nullptr) << key;
      EXPECT_EQ(CompareGolden(t, *out.context.find(key), nullptr, false), "") << key;
    }
    for (const auto& [key, t] : expected["sequence"].object()) {
      ASSERT_NE(out.feature_lists.find(key), nullptr) << key;
      EXPECT_EQ(CompareGolden(t, *out.feature_lists.find(key),
                              out.feature_lists.find(key + ".row_lengths"), true),
                "")
          << key;
    }
    EXPECT_EQ(out.feature_lists.size(), 3u);  // tokens, tokens.row_lengths, vec
  }
}

TEST(SequenceExampleSpecTest, RejectsKindsOutOfPlace) {
  SLUICE_EXPECT_ERROR(
      SequenceExampleParser::Create({{"c", FixedLenSequenceFeature(DType::kInt64, {}, true)}}, {}),
      StatusCode::kInvalidArgument, "'c': a SequenceExample's context spec");
  SLUICE_EXPECT_ERROR(
      SequenceExampleParser::Create({}, {{"s", FixedLenFeature(DType::kInt64, {})}}),
      StatusCode::kInvalidArgument, "'s': a SequenceExample's sequence spec");
  SLUICE_EXPECT_ERROR(
      SequenceExampleParser::Create(
          {},
          {{"s", FixedLenSequenceFeature(DType::kInt64, {}, true, Tensor::Scalar<int64_t>(0))}}),
      StatusCode::kInvalidArgument, "'s': a sequence feature cannot have a default value");
  // The same key in both specs is fine.
  SLUICE_EXPECT_OK(SequenceExampleParser::Create({{"k", VarLenFeature(DType::kInt64)}},
                                                 {{"k", VarLenFeature(DType::kInt64)}}));
  // A feature list named like another's row lengths could not be told apart;
  // context outputs are a separate list, so there it is fine.
  SLUICE_EXPECT_ERROR(
      SequenceExampleParser::Create(
          {}, {{"s", VarLenFeature(DType::kInt64)},
               {"s.row_lengths", FixedLenSequenceFeature(DType::kInt64, {}, true)}}),
      StatusCode::kInvalidArgument, "clashes with the row lengths of VarLen feature 's'");
  SLUICE_EXPECT_OK(SequenceExampleParser::Create({{"s.row_lengths", VarLenFeature(DType::kInt64)}},
                                                 {{"s", VarLenFeature(DType::kInt64)}}));
}

TEST(SequenceExampleErrorsTest, NameTheFeatureListAndStep) {
  SequenceExampleBuilder b;
  b.context().AddInt64("length", 2).AddBytes("id", "x");
  b.AppendFloatList("vec", {1, 2}).AppendFloatList("vec", {3, 4, 5});
  b.AppendInt64List("tokens", {1}).AppendFloatList("tokens", {1});
  const std::string bytes = b.Serialize();

  SLUICE_EXPECT_ERROR(
      MustCreate({}, {{"vec", FixedLenSequenceFeature(DType::kFloat32, {2})}}).Parse(bytes),
      StatusCode::kInvalidArgument,
      "feature list 'vec' step 1: expected 2 float32 values for item shape [2], found 3");
  SLUICE_EXPECT_ERROR(MustCreate({}, {{"tokens", VarLenFeature(DType::kInt64)}}).Parse(bytes),
                      StatusCode::kInvalidArgument,
                      "feature list 'tokens' step 1: data types don't match: expected int64");
  SLUICE_EXPECT_ERROR(
      MustCreate({}, {{"missing", FixedLenSequenceFeature(DType::kFloat32, {2})}}).Parse(bytes),
      StatusCode::kInvalidArgument,
      "feature list 'missing' (data type: float32, shape [?,2]) is required but could not be "
      "found, and allow_missing is false");
  SLUICE_EXPECT_ERROR(MustCreate({{"nope", FixedLenFeature(DType::kInt64, {})}}, {}).Parse(bytes),
                      StatusCode::kInvalidArgument,
                      "context feature 'nope' (data type: int64, shape []) is required");
  SLUICE_EXPECT_ERROR(MustCreate({}, {}).Parse(bytes.substr(0, bytes.size() - 2)),
                      StatusCode::kDataLoss, "malformed SequenceExample at byte");

  // Missing lists with allow_missing, and VarLen lists, have zero steps.
  SLUICE_ASSERT_OK_AND_ASSIGN(
      ParsedSequenceExample out,
      MustCreate({}, {{"m1", FixedLenSequenceFeature(DType::kFloat32, {2}, true)},
                      {"m2", VarLenFeature(DType::kString)}})
          .Parse(bytes));
  EXPECT_EQ(out.feature_lists.get("m1")->shape(), (Shape{0, 2}));
  EXPECT_EQ(out.feature_lists.get("m2.row_lengths")->shape(), (Shape{0}));
}

TEST(SequenceExampleOwnershipTest, ViewsIntoOwnerOrCopies) {
  SequenceExampleBuilder b;
  b.context().AddBytes("id", "seq-7");
  b.AppendBytesList("words", {"a", "bc"}).AppendBytesList("words", {});
  const std::string bytes = b.Serialize();
  const SequenceExampleParser p = MustCreate({{"id", FixedLenFeature(DType::kString, {})}},
                                             {{"words", VarLenFeature(DType::kString)}});
  Buffer owner = Buffer::Allocate(bytes.size()).value();
  std::memcpy(owner.data(), bytes.data(), bytes.size());
  const std::string_view view(reinterpret_cast<const char*>(owner.data()), bytes.size());
  SLUICE_ASSERT_OK_AND_ASSIGN(ParsedSequenceExample owned, p.Parse(view, owner));
  EXPECT_EQ(owned.context.get("id")->flat<std::string_view>()[0].data(),
            view.data() + view.find("seq-7"));
  EXPECT_EQ(owned.feature_lists.get("words")->string_owners().back().data(), owner.data());
  auto copy = std::make_unique<std::string>(bytes);
  SLUICE_ASSERT_OK_AND_ASSIGN(ParsedSequenceExample copied, p.Parse(*copy));
  copy.reset();
  EXPECT_EQ(copied.context.get("id")->flat<std::string_view>()[0], "seq-7");
  EXPECT_EQ(copied.feature_lists.get("words")->flat<std::string_view>()[1], "bc");
  EXPECT_EQ(copied.feature_lists.get("words.row_lengths")->flat<int64_t>()[1], 0);
}

// Groups nested around protobuf's recursion limit inside a FeatureList and
// inside a step's list: accepted exactly when protobuf accepts them.
TEST(SequenceExampleRandomTest, GroupNestingLimitMatchesProtobuf) {
  const SequenceExampleParser parser = MustCreate({}, {{"k", VarLenFeature(DType::kInt64)}});
  for (int level = 0; level < 2; ++level) {
    for (int depth = 90; depth <= 100; ++depth) {
      // Budgets: FeatureList 97, a step's Int64List 95.
      const std::string groups = std::string(static_cast<size_t>(depth), '\x2b') +
                                 std::string(static_cast<size_t>(depth), '\x2c');
      testing::WireWriter list, feature, feature_list, entry, lists, ex;
      list.Raw("\x08\x01");
      if (level == 1) list.Raw(groups);
      feature.Delimited(3, list.str());
      feature_list.Delimited(1, feature.str());
      if (level == 0) feature_list.Raw(groups);
      entry.Delimited(1, "k");
      entry.Delimited(2, feature_list.str());
      lists.Delimited(1, entry.str());
      ex.Delimited(2, lists.str());
      proto::SequenceExample msg;
      const bool proto_ok = ProtoParses(ex.str(), &msg);
      const Result<ParsedSequenceExample> fast = parser.Parse(ex.str());
      EXPECT_EQ(fast.ok(), proto_ok)
          << "level " << level << " depth " << depth << ": " << fast.status();
    }
  }
}

TEST(SequenceExampleRandomTest, AgreesWithProtobufAndReference) {
  const ParseSpec context = {
      {"a", FixedLenFeature(DType::kInt64, {}, Tensor::Scalar<int64_t>(0))},
      {"c", VarLenFeature(DType::kString)},
  };
  const ParseSpec sequence = {
      {"a", VarLenFeature(DType::kInt64)},
      {"g", FixedLenSequenceFeature(DType::kFloat32, {2}, true)},
      {"s", FixedLenSequenceFeature(DType::kString, {}, false)},
      {"", VarLenFeature(DType::kFloat32)},
  };
  const SequenceExampleParser parser = MustCreate(context, sequence);
  testing::RandomExampleOptions options;
  options.keys = {{"a", 3, 1}, {"c", 1}, {"g", 2, 2}, {"s", 1, 1}, {"", 2}, {"zz"}};
  std::mt19937_64 rng(5);
  int accepted = 0, rejected = 0, ok = 0;
  for (int iter = 0; iter < 8000; ++iter) {
    std::string bytes = testing::RandomSequenceExample(rng, options);
    if (iter % 3 == 2) bytes = testing::Mutate(rng, bytes);
    proto::SequenceExample ex;
    const bool proto_ok = ProtoParses(bytes, &ex);
    const Result<ParsedSequenceExample> fast = parser.Parse(bytes);
    if (!proto_ok) {
      ++rejected;
      ASSERT_EQ(fast.status().code(), StatusCode::kDataLoss)
          << "protobuf rejects " << testing::ToHex(bytes) << ": " << fast.status();
      continue;
    }
    ++accepted;
    ok += fast.ok();
    ASSERT_EQ(CompareWithReference(fast, testing::ReferenceParseSequence(ex, context, sequence)),
              "")
        << testing::ToHex(bytes);
  }
  EXPECT_GT(accepted, 3000);
  EXPECT_GT(rejected, 1000);
  EXPECT_GT(ok, 300);
}

}  // namespace
}  // namespace sluice
