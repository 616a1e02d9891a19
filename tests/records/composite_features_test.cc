// SparseFeature and RaggedFeature in ExampleParser, and
// SequenceExampleParser::ParseBatch: TensorFlow's outputs (golden files made
// by tests/data/composite/make_golden.py), single and batched, the fused
// batch writer, and hostile input.
#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "example_golden.h"
#include "internal_json.h"
#include "sluice/records/example_builder.h"
#include "sluice/records/example_parser.h"
#include "sluice/records/sequence_example_parser.h"
#include "test_util.h"

namespace sluice {
namespace {

using testing::FromHex;
using testing::Json;

Json Golden() {
  return Json::Parse(testing::ReadFileOrDie(testing::TestDataPath("composite/parsed.json")));
}

DType DTypeOf(const std::string& name) {
  if (name == "int64") return DType::kInt64;
  if (name == "int32") return DType::kInt32;
  if (name == "float32") return DType::kFloat32;
  return DType::kString;
}

// A spec from the golden JSON (tests/data/composite/make_golden.py's spec_json).
ParseSpec SpecOf(const Json& spec) {
  ParseSpec out;
  for (const auto& [key, s] : spec.object()) {
    const std::string& type = s["type"].str();
    const DType dtype = DTypeOf(s["dtype"].str());
    std::vector<int64_t> shape;
    if (s.has("shape")) {
      for (const Json& d : s["shape"].array()) shape.push_back(d.int64());
    }
    std::optional<Tensor> def;
    if (s.has("default_value")) {
      std::vector<float> v;
      for (const Json& x : s["default_value"].array()) {
        const uint32_t bits = static_cast<uint32_t>(std::stoul(x.str(), nullptr, 16));
        float f;
        std::memcpy(&f, &bits, 4);
        v.push_back(f);
      }
      def = Tensor::FromVector<float>(v, Shape(shape)).value();
    }
    if (type == "FixedLenFeature") {
      out.emplace_back(key, FixedLenFeature(dtype, Shape(shape), def));
    } else if (type == "VarLenFeature") {
      out.emplace_back(key, VarLenFeature(dtype));
    } else if (type == "FixedLenSequenceFeature") {
      out.emplace_back(key,
                       FixedLenSequenceFeature(dtype, Shape(shape), s["allow_missing"].boolean()));
    } else if (type == "SparseFeature") {
      std::vector<std::string> idx;
      for (const Json& k : s["index_keys"].array()) idx.push_back(k.str());
      std::vector<int64_t> size;
      for (const Json& d : s["size"].array()) size.push_back(d.int64());
      out.emplace_back(key, SparseFeature(idx, s["value_key"].str(), dtype, size,
                                          s["already_sorted"].boolean()));
    } else {
      std::vector<RaggedPartition> parts;
      for (const Json& p : s["partitions"].array()) {
        const std::string& kind = p["kind"].str();
        if (kind == "UniformRowLength") {
          parts.push_back(UniformRowLength(p["length"].int64()));
        } else if (kind == "RowSplits") {
          parts.push_back(RowSplits(p["key"].str()));
        } else if (kind == "RowLengths") {
          parts.push_back(RowLengths(p["key"].str()));
        } else if (kind == "RowStarts") {
          parts.push_back(RowStarts(p["key"].str()));
        } else if (kind == "RowLimits") {
          parts.push_back(RowLimits(p["key"].str()));
        } else {
          parts.push_back(ValueRowIds(p["key"].str()));
        }
      }
      out.emplace_back(key, RaggedFeature(dtype, s["value_key"].str(), parts,
                                          DTypeOf(s["row_splits_dtype"].str())));
    }
  }
  return out;
}

// "<dtype> <shape> v0 v1 ..." with the golden conventions.
std::string Canon(const Tensor& t) {
  std::string s = std::string(DTypeName(t.dtype())) + " " + t.shape().ToString();
  char buf[16];
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    switch (t.dtype()) {
      case DType::kInt64: s += " " + std::to_string(t.flat<int64_t>()[i]); break;
      case DType::kInt32: s += " " + std::to_string(t.flat<int32_t>()[i]); break;
      case DType::kFloat32: {
        uint32_t bits;
        std::memcpy(&bits, &t.flat<float>()[i], 4);
        std::snprintf(buf, sizeof(buf), "0x%08x", bits);
        s += std::string(" ") + buf;
        break;
      }
      default: s += " '" + testing::ToHex(t.flat<std::string_view>()[i]) + "'";
    }
  }
  return s;
}

std::string Canon(const Json& t) {
  const DType dtype = DTypeOf(t["dtype"].str());
  std::vector<int64_t> dims;
  for (const Json& d : t["shape"].array()) dims.push_back(d.int64());
  std::string s = std::string(DTypeName(dtype)) + " " + Shape(dims).ToString();
  for (const Json& v : t["values"].array()) {
    s += dtype == DType::kString ? " '" + v.str() + "'" : " " + v.str();
  }
  return s;
}

// Compares an Element to a golden [[name, tensor], ...] list, in order.
void ExpectMatches(const Element& actual, const Json& expected) {
  ASSERT_EQ(actual.size(), expected.size()) << actual.DebugString();
  for (size_t i = 0; i < expected.size(); ++i) {
    const std::string& name = expected[i][0].str();
    EXPECT_EQ(actual.names()[i], name);
    EXPECT_EQ(Canon(actual[i]), Canon(expected[i][1])) << name;
  }
}

std::vector<std::string> Serialized(const Json& section) {
  std::vector<std::string> out;
  for (const Json& h : section["serialized"].array()) out.push_back(FromHex(h.str()));
  return out;
}

TEST(CompositeGoldenTest, ExamplesMatchTensorFlow) {
  const Json g = Golden()["examples"];
  SLUICE_ASSERT_OK_AND_ASSIGN(ExampleParser parser, ExampleParser::Create(SpecOf(g["spec"])));
  const std::vector<std::string> records =
      testing::ReadTFRecordPayloads(testing::TestDataPath("composite/examples.tfrecord"));
  const std::vector<std::string> serialized = Serialized(g);
  ASSERT_EQ(records, serialized);
  for (size_t i = 0; i < serialized.size(); ++i) {
    SCOPED_TRACE("example " + std::to_string(i));
    SLUICE_ASSERT_OK_AND_ASSIGN(Element single, parser.ParseSingle(serialized[i]));
    ExpectMatches(single, g["single"][i]);
  }
  std::vector<std::string_view> views(serialized.begin(), serialized.end());
  SLUICE_ASSERT_OK_AND_ASSIGN(Element batch, parser.ParseBatch(views));
  ExpectMatches(batch, g["batch"]);
  EXPECT_EQ(parser.batch_output_names(), batch.names());
  EXPECT_FALSE(parser.fixed_length_only());
}

TEST(CompositeGoldenTest, BatchWriterAndZeroCopyStrings) {
  const Json g = Golden()["examples"];
  SLUICE_ASSERT_OK_AND_ASSIGN(ExampleParser parser, ExampleParser::Create(SpecOf(g["spec"])));
  const std::vector<std::string> serialized = Serialized(g);
  // Strings in tensor-owned buffers (a batch of records), parsed out of order.
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor records,
                              Tensor::FromStrings(std::vector<std::string>(serialized)));
  SLUICE_ASSERT_OK_AND_ASSIGN(ExampleBatchWriter w, parser.StartBatch(3));
  for (int64_t r : {2, 0, 1}) {
    const std::string_view v = records.flat<std::string_view>()[static_cast<size_t>(r)];
    SLUICE_ASSERT_OK(w.ParseInto(r, v, records.StringOwnerOf(v)));
  }
  SLUICE_ASSERT_OK_AND_ASSIGN(Element batch, w.Finish());
  ExpectMatches(batch, g["batch"]);
  // sp2's string values are views into the records' buffer.
  const Tensor* sv = batch.find("sp2");
  ASSERT_NE(sv, nullptr);
  const std::string_view first = sv->flat<std::string_view>()[0];
  EXPECT_TRUE(records.StringOwnerOf(first)) << "string values were copied";
  SLUICE_ASSERT_OK_AND_ASSIGN(Element from_tensor, parser.ParseBatch(records));
  ExpectMatches(from_tensor, g["batch"]);
}

TEST(CompositeGoldenTest, SequenceExamplesMatchTensorFlow) {
  const Json g = Golden()["sequence_examples"];
  SLUICE_ASSERT_OK_AND_ASSIGN(
      SequenceExampleParser parser,
      SequenceExampleParser::Create(SpecOf(g["context_spec"]), SpecOf(g["sequence_spec"])));
  const std::vector<std::string> serialized = Serialized(g);
  ASSERT_EQ(
      testing::ReadTFRecordPayloads(testing::TestDataPath("composite/sequence_examples.tfrecord")),
      serialized);
  auto joined = [](const ParsedSequenceExample& p) {
    Element e = p.context;
    for (size_t i = 0; i < p.feature_lists.size(); ++i) {
      e.push_back(p.feature_lists[i], p.feature_lists.names()[i]);
    }
    return e;
  };
  for (size_t i = 0; i < serialized.size(); ++i) {
    SCOPED_TRACE("sequence example " + std::to_string(i));
    SLUICE_ASSERT_OK_AND_ASSIGN(ParsedSequenceExample one, parser.Parse(serialized[i]));
    ExpectMatches(joined(one), g["single"][i]);
  }
  std::vector<std::string_view> views(serialized.begin(), serialized.end());
  SLUICE_ASSERT_OK_AND_ASSIGN(ParsedSequenceExample batch, parser.ParseBatch(views));
  ExpectMatches(joined(batch), g["batch"]);
  EXPECT_EQ(batch.context.names(), parser.batch_context_names());
  EXPECT_EQ(batch.feature_lists.names(), parser.batch_feature_list_names());
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor records,
                              Tensor::FromStrings(std::vector<std::string>(serialized)));
  SLUICE_ASSERT_OK_AND_ASSIGN(ParsedSequenceExample from_tensor, parser.ParseBatch(records));
  ExpectMatches(joined(from_tensor), g["batch"]);
  SLUICE_ASSERT_OK_AND_ASSIGN(ParsedSequenceExample empty,
                              parser.ParseBatch(std::span<const std::string_view>()));
  EXPECT_EQ(empty.feature_lists.find("frames")->shape(), Shape({0, 0, 2}));
  EXPECT_FALSE(parser.batch_is_stacked());
}

// --- Hostile input and bad specs ---------------------------------------------

// One example, or a batch of `first` (default: an empty Example) and it.
Status ParseOne(const ParseSpec& spec, const std::string& bytes, bool batch,
                std::optional<std::string> first = std::nullopt) {
  Result<ExampleParser> p = ExampleParser::Create(spec);
  if (!p.ok()) return p.status();
  if (!batch) return p->ParseSingle(bytes).status();
  const std::string other = first ? *first : ExampleBuilder().Serialize();
  std::vector<std::string_view> views = {other, bytes};
  return p->ParseBatch(views).status();
}

// `first`: a valid first row for the batch form (default: an empty Example).
void ExpectError(const ParseSpec& spec, const std::string& bytes,
                 const std::vector<std::string>& parts,
                 std::optional<std::string> first = std::nullopt) {
  for (bool batch : {false, true}) {
    const Status s = ParseOne(spec, bytes, batch, first);
    ASSERT_FALSE(s.ok()) << "batch=" << batch;
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s;
    for (const std::string& part : parts) {
      EXPECT_NE(s.message().find(part), std::string::npos) << s << " lacks " << part;
    }
    if (batch) {
      EXPECT_NE(s.message().find("example 1 of the batch"), std::string::npos) << s;
    }
  }
}

TEST(CompositeErrorTest, SparseIndexOutOfRange) {
  const ParseSpec spec = {{"sp", SparseFeature({"i"}, "v", DType::kFloat32, {4})}};
  ExpectError(spec,
              ExampleBuilder().AddInt64List("i", {1, 4}).AddFloatList("v", {1, 2}).Serialize(),
              {"SparseFeature 'sp'", "index 4", "'i'", "out of range [0, 4)"});
  ExpectError(spec, ExampleBuilder().AddInt64List("i", {-1}).AddFloatList("v", {1}).Serialize(),
              {"index -1", "out of range"});
}

TEST(CompositeErrorTest, SparseCountsDisagree) {
  const ParseSpec spec = {{"sp", SparseFeature({"i"}, "v", DType::kFloat32, {4})}};
  ExpectError(spec, ExampleBuilder().AddInt64List("i", {1, 2}).AddFloatList("v", {1}).Serialize(),
              {"SparseFeature 'sp'", "'i' has 2 values", "'v' has 1"});
}

TEST(CompositeErrorTest, SparseUnsortedWhenAlreadySorted) {
  const ParseSpec spec = {
      {"sp", SparseFeature({"i", "j"}, "v", DType::kInt64, {4, 4}, /*already_sorted=*/true)}};
  ExpectError(spec,
              ExampleBuilder()
                  .AddInt64List("i", {1, 1})
                  .AddInt64List("j", {3, 2})
                  .AddInt64List("v", {1, 2})
                  .Serialize(),
              {"already_sorted", "not sorted"});
}

TEST(CompositeErrorTest, SparseIndexOfWrongType) {
  const ParseSpec spec = {{"sp", SparseFeature({"i"}, "v", DType::kFloat32, {4})}};
  const Status s = ParseOne(
      spec, ExampleBuilder().AddFloatList("i", {1}).AddFloatList("v", {1}).Serialize(), false);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'i'"), std::string::npos) << s;
}

TEST(CompositeErrorTest, RaggedPartitionsDisagreeWithValues) {
  auto ex = [](std::initializer_list<int64_t> part) {
    return ExampleBuilder().AddInt64List("v", {1, 2, 3}).AddInt64List("p", part).Serialize();
  };
  ExpectError({{"r", RaggedFeature(DType::kInt64, "v", {RowLengths("p")})}}, ex({1, 1}),
              {"RaggedFeature 'r'", "RowLengths('p')", "summing to 2", "3 values"});
  ExpectError({{"r", RaggedFeature(DType::kInt64, "v", {RowLengths("p")})}}, ex({4, -1}),
              {"negative row length -1"});
  // An Example with no values and splits {0}, valid for RowSplits.
  const std::string empty_splits = ExampleBuilder().AddInt64List("p", {0}).Serialize();
  ExpectError({{"r", RaggedFeature(DType::kInt64, "v", {RowSplits("p")})}}, ex({0, 2}),
              {"RowSplits('p')", "ends at 2"}, empty_splits);
  ExpectError({{"r", RaggedFeature(DType::kInt64, "v", {RowSplits("p")})}}, ex({1, 3}),
              {"starts at 1"}, empty_splits);
  ExpectError({{"r", RaggedFeature(DType::kInt64, "v", {RowSplits("p")})}}, ex({0, 3, 2, 3}),
              {"not sorted"}, empty_splits);
  ExpectError({{"r", RaggedFeature(DType::kInt64, "v", {RowSplits("p")})}}, ex({}), {"is empty"},
              empty_splits);
  ExpectError({{"r", RaggedFeature(DType::kInt64, "v", {RowStarts("p")})}}, ex({0, 4}),
              {"past the 3 values"});
  ExpectError({{"r", RaggedFeature(DType::kInt64, "v", {RowLimits("p")})}}, ex({1, 2}),
              {"ends at 2"});
  ExpectError({{"r", RaggedFeature(DType::kInt64, "v", {ValueRowIds("p")})}}, ex({0, 1}),
              {"2 row ids", "3 values"});
  ExpectError({{"r", RaggedFeature(DType::kInt64, "v", {ValueRowIds("p")})}}, ex({0, 2, 1}),
              {"not sorted"});
  ExpectError({{"r", RaggedFeature(DType::kInt64, "v", {UniformRowLength(2)})}}, ex({}),
              {"UniformRowLength(2)", "does not divide"});
  ExpectError({{"r", RaggedFeature(DType::kInt64, "v", {RowLengths("p"), UniformRowLength(2)})}},
              ex({1}), {"does not divide"});
}

TEST(CompositeErrorTest, HugeValueRowIdIsRefusedNotAllocated) {
  const ParseSpec spec = {{"r", RaggedFeature(DType::kInt64, "v", {ValueRowIds("p")})}};
  const std::string bytes =
      ExampleBuilder().AddInt64List("v", {1}).AddInt64List("p", {int64_t{1} << 60}).Serialize();
  const Status s = ParseOne(spec, bytes, false);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s;
  EXPECT_NE(s.message().find("RaggedFeature 'r'"), std::string::npos) << s;
}

TEST(CompositeErrorTest, BadSpecs) {
  auto create = [](ParseSpec spec) { return ExampleParser::Create(spec).status(); };
  EXPECT_EQ(create({{"s", SparseFeature({}, "v", DType::kInt64, {})}}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(create({{"s", SparseFeature({"i"}, "v", DType::kInt64, {2, 3})}}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(create({{"s", SparseFeature({"i"}, "", DType::kInt64, {2})}}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(create({{"s", SparseFeature({"i"}, "v", DType::kInt32, {2})}}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(create({{"r", RaggedFeature(DType::kInt64, "v", {UniformRowLength(0)})}}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(create({{"r", RaggedFeature(DType::kInt64, "v", {RowLengths("")})}}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(create({{"r", RaggedFeature(DType::kInt64, "v", {}, DType::kFloat32)}}).code(),
            StatusCode::kInvalidArgument);
  // A key read as a VarLen index but declared FixedLen.
  const Status conflict = create({{"i", FixedLenFeature(DType::kInt64, {})},
                                  {"s", SparseFeature({"i"}, "v", DType::kInt64, {2})}});
  EXPECT_EQ(conflict.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(conflict.message().find("'i'"), std::string::npos) << conflict;
  // Output names clash: "s.indices" declared as a feature too.
  EXPECT_EQ(create({{"s.indices", VarLenFeature(DType::kInt64)},
                    {"s", SparseFeature({"i"}, "v", DType::kInt64, {2})}})
                .code(),
            StatusCode::kInvalidArgument);
  // SequenceExamples: RaggedFeature in both specs, no SparseFeature (as tf.io).
  EXPECT_TRUE(SequenceExampleParser::Create({{"r", RaggedFeature(DType::kInt64)}}, {}).ok());
  EXPECT_TRUE(SequenceExampleParser::Create({}, {{"r", RaggedFeature(DType::kInt64)}}).ok());
  for (bool context : {true, false}) {
    const ParseSpec sparse = {{"s", SparseFeature({"i"}, "v", DType::kInt64, {2})}};
    EXPECT_EQ(SequenceExampleParser::Create(context ? sparse : ParseSpec{},
                                            context ? ParseSpec{} : sparse)
                  .status()
                  .code(),
              StatusCode::kInvalidArgument);
  }
}

TEST(CompositeTest, SharedKeysAndPlainVarLen) {
  // "v" is a plain VarLen output and the values of a RaggedFeature.
  const ParseSpec spec = {
      {"v", VarLenFeature(DType::kInt64)},
      {"r", RaggedFeature(DType::kInt64, "v", {RowLengths("p")}, DType::kInt64)}};
  SLUICE_ASSERT_OK_AND_ASSIGN(ExampleParser parser, ExampleParser::Create(spec));
  const std::string a =
      ExampleBuilder().AddInt64List("v", {1, 2, 3}).AddInt64List("p", {2, 1}).Serialize();
  SLUICE_ASSERT_OK_AND_ASSIGN(Element one, parser.ParseSingle(a));
  EXPECT_EQ(one.names(), (std::vector<std::string>{"v", "r", "r.row_splits_0"}));
  EXPECT_EQ(Canon(one[2]), "int64 [3] 0 2 3");
  std::vector<std::string_view> views = {a, a};
  SLUICE_ASSERT_OK_AND_ASSIGN(Element batch, parser.ParseBatch(views));
  EXPECT_EQ(batch.names(), (std::vector<std::string>{"v", "v.row_lengths", "r", "r.row_splits_0",
                                                     "r.row_splits_1"}));
  EXPECT_EQ(Canon(batch[3]), "int64 [3] 0 2 4");
  EXPECT_EQ(Canon(batch[4]), "int64 [5] 0 2 3 5 6");
}

TEST(CompositeErrorTest, SequenceRaggedPartitionStepsDisagree) {
  SLUICE_ASSERT_OK_AND_ASSIGN(
      SequenceExampleParser parser,
      SequenceExampleParser::Create({},
                                    {{"r", RaggedFeature(DType::kInt64, "v", {RowLengths("p")})}}));
  SequenceExampleBuilder b;
  b.AppendInt64List("v", {1, 2}).AppendInt64List("v", {3});
  b.AppendInt64List("p", {2});  // one step where "v" has two
  const Status s = parser.Parse(b.Serialize()).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("RaggedFeature 'r'"), std::string::npos) << s;
  EXPECT_NE(s.message().find("'p' has 1 steps"), std::string::npos) << s;
  SequenceExampleBuilder c;
  c.AppendInt64List("v", {1, 2}).AppendInt64List("p", {1, 0});  // lengths sum to 1, not 2
  const Status t = parser.Parse(c.Serialize()).status();
  EXPECT_EQ(t.code(), StatusCode::kInvalidArgument) << t;
  EXPECT_NE(t.message().find("step 0"), std::string::npos) << t;
}

TEST(CompositeErrorTest, SequenceBatchErrorNamesExample) {
  SLUICE_ASSERT_OK_AND_ASSIGN(
      SequenceExampleParser parser,
      SequenceExampleParser::Create({}, {{"f", FixedLenSequenceFeature(DType::kInt64, {})}}));
  SequenceExampleBuilder good;
  good.AddFeatureList("f");
  const std::string ok = good.Serialize();
  const std::string missing = SequenceExampleBuilder().Serialize();
  std::vector<std::string_view> views = {ok, missing};
  const Status s = parser.ParseBatch(views).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("'f'"), std::string::npos) << s;
  EXPECT_NE(s.message().find("example 1 of the batch"), std::string::npos) << s;
}

}  // namespace
}  // namespace sluice
