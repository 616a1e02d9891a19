// ExampleBuilder / SequenceExampleBuilder: byte equality with TensorFlow's
// golden records and with protobuf's deterministic serialization.
#include "sluice/records/example_builder.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <gtest/gtest.h>

#include <bit>
#include <random>

#include "example_golden.h"
#include "sluice/records/example_parser.h"
#include "sluice/records/example_proto.h"
#include "test_util.h"

namespace sluice {
namespace {

using testing::ReadTFRecordPayloads;
using testing::TestDataPath;
using testing::ToHex;

std::string Deterministic(const google::protobuf::MessageLite& m) {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  m.SerializeToCodedStream(&coded);
  coded.Trim();
  return out;
}

// Adds the features of `features` (a protobuf map: unordered) to `b`.
void AddAll(const proto::Features& features, ExampleBuilder& b) {
  for (const auto& [key, f] : features.feature()) {
    switch (f.kind_case()) {
      case proto::Feature::kInt64List: {
        std::vector<int64_t> v(f.int64_list().value().begin(), f.int64_list().value().end());
        b.AddInt64List(key, v);
        break;
      }
      case proto::Feature::kFloatList: {
        std::vector<float> v(f.float_list().value().begin(), f.float_list().value().end());
        b.AddFloatList(key, v);
        break;
      }
      case proto::Feature::kBytesList: {
        std::vector<std::string_view> v(f.bytes_list().value().begin(),
                                        f.bytes_list().value().end());
        b.AddBytesList(key, v);
        break;
      }
      default: FAIL() << "feature without a kind in a golden record";
    }
  }
}

TEST(ExampleBuilderTest, RebuildsGoldenRecordsByteForByte) {
  const auto records = ReadTFRecordPayloads(TestDataPath("tf/examples.tfrecord"));
  ASSERT_EQ(records.size(), 6u);
  ExampleBuilder b;
  std::string out;
  for (size_t i = 0; i < records.size(); ++i) {
    proto::Example ex;
    ASSERT_TRUE(ex.ParseFromString(records[i])) << i;
    b.Clear();
    AddAll(ex.features(), b);
    b.SerializeTo(&out);
    EXPECT_EQ(ToHex(out), ToHex(records[i])) << "record " << i;
    EXPECT_EQ(b.SerializedSize(), records[i].size());
    EXPECT_EQ(Deterministic(ex), records[i]) << "protobuf's own deterministic bytes, record " << i;
  }
}

TEST(ExampleBuilderTest, RebuildsGoldenSequenceExamplesByteForByte) {
  const auto records = ReadTFRecordPayloads(TestDataPath("tf/sequence_examples.tfrecord"));
  ASSERT_EQ(records.size(), 3u);
  for (size_t i = 0; i < records.size(); ++i) {
    proto::SequenceExample ex;
    ASSERT_TRUE(ex.ParseFromString(records[i])) << i;
    SequenceExampleBuilder b;
    AddAll(ex.context(), b.context());
    for (const auto& [key, list] : ex.feature_lists().feature_list()) {
      b.AddFeatureList(key);
      for (const proto::Feature& f : list.feature()) {
        switch (f.kind_case()) {
          case proto::Feature::kInt64List: {
            std::vector<int64_t> v(f.int64_list().value().begin(), f.int64_list().value().end());
            b.AppendInt64List(key, v);
            break;
          }
          case proto::Feature::kFloatList: {
            std::vector<float> v(f.float_list().value().begin(), f.float_list().value().end());
            b.AppendFloatList(key, v);
            break;
          }
          default: {
            std::vector<std::string_view> v(f.bytes_list().value().begin(),
                                            f.bytes_list().value().end());
            b.AppendBytesList(key, v);
            break;
          }
        }
      }
    }
    EXPECT_EQ(ToHex(b.Serialize()), ToHex(records[i])) << "record " << i;
    EXPECT_EQ(b.SerializedSize(), records[i].size());
  }
}

TEST(ExampleBuilderTest, AddingAKeyAgainReplacesIt) {
  ExampleBuilder b;
  b.AddInt64("label", 3).AddFloatList("x", {1.0f, 2.0f}).AddBytes("label", "cat");
  EXPECT_EQ(b.num_features(), 2u);
  proto::Example ex;
  ASSERT_TRUE(ex.ParseFromString(b.Serialize()));
  ASSERT_EQ(ex.features().feature().at("label").kind_case(), proto::Feature::kBytesList);
  EXPECT_EQ(ex.features().feature().at("label").bytes_list().value(0), "cat");
  EXPECT_EQ(ex.features().feature().at("x").float_list().value_size(), 2);
}

TEST(ExampleBuilderTest, EmptyListsArePresentAndEmptyBuilderHasFeatures) {
  ExampleBuilder b;
  EXPECT_EQ(ToHex(b.Serialize()), "0a00");
  b.AddInt64List("t", {});
  // features { feature { key: "t" value { int64_list {} } } }
  EXPECT_EQ(ToHex(b.Serialize()),
            "0a090a070a01741202"
            "1a00");
  proto::Example ex;
  ex.mutable_features();
  EXPECT_EQ(ToHex(Deterministic(ex)), "0a00");
}

TEST(ExampleBuilderTest, ClearKeepsWorking) {
  ExampleBuilder b;
  b.AddInt64("a", 1);
  b.Clear();
  EXPECT_EQ(b.num_features(), 0u);
  b.AddInt64("b", -1);
  proto::Example ex;
  ASSERT_TRUE(ex.ParseFromString(b.Serialize()));
  EXPECT_EQ(ex.features().feature().size(), 1u);
  EXPECT_EQ(ex.features().feature().at("b").int64_list().value(0), -1);
}

// Random features: the builder's bytes equal protobuf's deterministic
// serialization of the same message, and ExampleParser reads them back.
TEST(ExampleBuilderTest, MatchesProtobufDeterministicSerializationOnRandomExamples) {
  std::mt19937_64 rng(20240611);
  ExampleBuilder b;
  std::string bytes;
  for (int iter = 0; iter < 2000; ++iter) {
    b.Clear();
    proto::Example ex;
    auto* map = ex.mutable_features()->mutable_feature();
    const int n = static_cast<int>(rng() % 8);
    for (int i = 0; i < n; ++i) {
      // Keys with shared prefixes, empty and non-ASCII ones, and repeats.
      static const char* kKeys[] = {"",      "a",           "ab", "b",
                                    "a\x7f", "caf\xc3\xa9", "z",  "image/encoded"};
      const std::string key = kKeys[rng() % 8];
      proto::Feature f;
      const size_t count = rng() % 5;
      switch (rng() % 3) {
        case 0: {
          std::vector<int64_t> v;
          for (size_t j = 0; j < count; ++j)
            v.push_back(static_cast<int64_t>(rng()) >> (rng() % 64));
          b.AddInt64List(key, v);
          for (int64_t x : v) f.mutable_int64_list()->add_value(x);
          if (v.empty()) f.mutable_int64_list();
          break;
        }
        case 1: {
          std::vector<float> v;
          for (size_t j = 0; j < count; ++j) {
            v.push_back(std::bit_cast<float>(static_cast<uint32_t>(rng())));
          }
          b.AddFloatList(key, v);
          for (float x : v) f.mutable_float_list()->add_value(x);
          if (v.empty()) f.mutable_float_list();
          break;
        }
        default: {
          std::vector<std::string> s;
          for (size_t j = 0; j < count; ++j) s.push_back(std::string(rng() % 200, 'x'));
          std::vector<std::string_view> v(s.begin(), s.end());
          b.AddBytesList(key, v);
          for (const auto& x : s) f.mutable_bytes_list()->add_value(x);
          if (s.empty()) f.mutable_bytes_list();
          break;
        }
      }
      (*map)[key] = f;
    }
    b.SerializeTo(&bytes);
    ASSERT_EQ(ToHex(bytes), ToHex(Deterministic(ex))) << "iteration " << iter;
  }
}

TEST(SequenceExampleBuilderTest, AddFeatureListRestartsAList) {
  SequenceExampleBuilder b;
  b.context().AddInt64("length", 2);
  b.AppendInt64List("tokens", {1, 2}).AppendInt64List("tokens", {3});
  b.AddFeatureList("tokens").AppendInt64List("tokens", {9});
  b.AddFeatureList("empty");
  proto::SequenceExample ex;
  ASSERT_TRUE(ex.ParseFromString(b.Serialize()));
  EXPECT_EQ(ex.context().feature().at("length").int64_list().value(0), 2);
  const auto& lists = ex.feature_lists().feature_list();
  ASSERT_EQ(lists.at("tokens").feature_size(), 1);
  EXPECT_EQ(lists.at("tokens").feature(0).int64_list().value(0), 9);
  EXPECT_EQ(lists.at("empty").feature_size(), 0);
  EXPECT_EQ(b.Serialize(), Deterministic(ex));
}

}  // namespace
}  // namespace sluice
