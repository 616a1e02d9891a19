// ExampleParser: TensorFlow's golden outputs and errors, protobuf's merge
// semantics, zero-copy ownership, the batch writer, and randomized
// agreement with a reference parser built on protobuf messages.
#include "sluice/records/example_parser.h"

#include <google/protobuf/stubs/logging.h>
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <thread>

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
using testing::WireWriter;

bool ProtoParses(std::string_view bytes, proto::Example* ex) {
  google::protobuf::LogSilencer silence;  // invalid UTF-8 keys log an error
  return ex->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
}

ExampleParser MustCreate(const ParseSpec& spec) {
  Result<ExampleParser> p = ExampleParser::Create(spec);
  EXPECT_TRUE(p.ok()) << p.status();
  return std::move(p).value();
}

// Serialized bytes held in a Buffer, as a record reader would hand them out.
struct Owned {
  Buffer buffer;
  std::string_view view;
};
Owned InBuffer(std::string_view bytes) {
  Buffer b = Buffer::Allocate(bytes.size()).value();
  if (!bytes.empty()) std::memcpy(b.data(), bytes.data(), bytes.size());
  return {b, std::string_view(reinterpret_cast<const char*>(b.data()), bytes.size())};
}

// --- Specs ---------------------------------------------------------------------

TEST(ExampleSpecTest, RejectsInvalidSpecsNamingTheKey) {
  struct Case {
    ParseSpec spec;
    std::string needle;
  };
  const Case cases[] = {
      {{{"x", FixedLenFeature(DType::kFloat64, {})}}, "'x': dtype float64 is not supported"},
      {{{"x", VarLenFeature(DType::kInt32)}}, "'x': dtype int32"},
      {{{"x", FixedLenFeature(DType::kInt64, Shape{-1, 2})}}, "must be fully defined"},
      {{{"x", FixedLenFeature(DType::kInt64, {}, Tensor::Scalar<float>(1))}},
       "default value has dtype float32 but the feature's dtype is int64"},
      {{{"x", FixedLenFeature(DType::kInt64, {2}, Tensor::Scalar<int64_t>(1))}},
       "default value has shape [] but must have shape [2]"},
      {{{"x", VarLenFeature(DType::kInt64)}, {"x", VarLenFeature(DType::kFloat32)}},
       "duplicate feature key 'x'"},
      {{{"x", FixedLenSequenceFeature(DType::kFloat32, {2})}},
       "'x': FixedLenSequenceFeature requires allow_missing=true"},
      {{{"x", FixedLenSequenceFeature(DType::kFloat32, {2}, true, Tensor::Scalar<int64_t>(0))}},
       "padding default value has dtype int64"},
      {{{"x", FixedLenSequenceFeature(DType::kFloat32, {2}, true,
                                      Tensor::FromVector<float>({0.f, 0.f}).value())}},
       "padding default value has shape [2] but must have shape []"},
      {{{"x", FixedLenSequenceFeature(DType::kFloat32, {0}, true)}}, "at least one element"},
  };
  for (const Case& c : cases) {
    SLUICE_EXPECT_ERROR(ExampleParser::Create(c.spec), StatusCode::kInvalidArgument, c.needle);
  }
  // Row lengths are output as "<key>.row_lengths": a feature of that name
  // would be unreachable beside them, in whichever order the spec lists them.
  for (bool varlen_first : {true, false}) {
    ParseSpec clash = {{"tags", VarLenFeature(DType::kInt64)},
                       {"tags.row_lengths", FixedLenFeature(DType::kInt64, {})}};
    if (!varlen_first) std::swap(clash[0], clash[1]);
    SLUICE_EXPECT_ERROR(
        ExampleParser::Create(clash), StatusCode::kInvalidArgument,
        "'tags.row_lengths': clashes with the row lengths of VarLen feature 'tags'");
  }
  EXPECT_TRUE(ExampleParser::Create({{"tags", FixedLenFeature(DType::kInt64, {})},
                                     {"tags.row_lengths", FixedLenFeature(DType::kInt64, {})}})
                  .ok());
  FeatureSpec varlen_with_shape = VarLenFeature(DType::kInt64);
  varlen_with_shape.shape = Shape{3};
  SLUICE_EXPECT_ERROR(ExampleParser::Create({{"v", varlen_with_shape}}),
                      StatusCode::kInvalidArgument, "'v': VarLenFeature takes a dtype only");
}

// --- Tensor forms -----------------------------------------------------------------

TEST(ExampleParserTensorTest, ParsesRecordTensorsWithoutCopying) {
  const ExampleParser parser = MustCreate(
      {{"name", FixedLenFeature(DType::kString, {})}, {"n", FixedLenFeature(DType::kInt64, {})}});
  EXPECT_TRUE(parser.fixed_length_only());
  EXPECT_FALSE(MustCreate({{"v", VarLenFeature(DType::kInt64)}}).fixed_length_only());
  // Two records in one read buffer, as a TFRecord reader hands them out.
  ExampleBuilder a, b;
  a.AddBytes("name", "first").AddInt64("n", 1);
  b.AddBytes("name", "second").AddInt64("n", 2);
  const std::string both = a.Serialize() + b.Serialize();
  Owned buffer = InBuffer(both);
  const std::string_view va = buffer.view.substr(0, a.Serialize().size());
  const std::string_view vb = buffer.view.substr(va.size());
  Buffer views = Buffer::Allocate(2 * sizeof(std::string_view)).value();
  new (views.data()) std::string_view(va);
  new (views.data() + sizeof(std::string_view)) std::string_view(vb);
  Tensor batch = Tensor::FromStringViews(Shape{2}, views, {buffer.buffer}).value();
  SLUICE_ASSERT_OK_AND_ASSIGN(Element parsed, parser.ParseBatch(batch));
  EXPECT_EQ(parsed[0].flat<std::string_view>()[1], "second");
  EXPECT_EQ(parsed[0].flat<std::string_view>()[1].data(), vb.data() + vb.find("second"));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor first, batch.Row(0));
  SLUICE_ASSERT_OK_AND_ASSIGN(Element one, parser.ParseSingle(first));
  EXPECT_EQ(one[0].scalar<std::string_view>(), "first");
  EXPECT_EQ(one[0].scalar<std::string_view>().data(), va.data() + va.find("first"));
  EXPECT_EQ(one[1].scalar<int64_t>(), 1);
  SLUICE_EXPECT_ERROR(parser.ParseSingle(batch), StatusCode::kInvalidArgument, "string scalar");
  SLUICE_EXPECT_ERROR(parser.ParseBatch(first), StatusCode::kInvalidArgument, "string vector");
  SLUICE_EXPECT_ERROR(parser.ParseSingle(Tensor::Scalar<int64_t>(3)), StatusCode::kInvalidArgument,
                      "string scalar");
  // A string tensor that owns no buffer holding the bytes: they are copied.
  SLUICE_ASSERT_OK_AND_ASSIGN(Element copied,
                              parser.ParseSingle(Tensor::StringScalar(a.Serialize())));
  EXPECT_EQ(copied[0].scalar<std::string_view>(), "first");
}

// --- TensorFlow's golden outputs -------------------------------------------------

class ExampleGoldenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    golden_ = testing::ReadGoldenJson("examples_parsed.json");
    for (const Json& h : golden_["serialized_hex"].array()) serialized_.push_back(FromHex(h.str()));
  }
  Json golden_;
  std::vector<std::string> serialized_;
};

TEST_F(ExampleGoldenTest, RecordsMatchTheTFRecordFile) {
  EXPECT_EQ(testing::ReadTFRecordPayloads(testing::TestDataPath("tf/examples.tfrecord")),
            serialized_);
}

TEST_F(ExampleGoldenTest, ParseBatchMatchesTensorFlowParseExample) {
  const ParseSpec spec = testing::GoldenSpec(golden_["spec"]);
  const ExampleParser parser = MustCreate(spec);
  std::vector<std::string_view> views(serialized_.begin(), serialized_.end());
  for (bool with_owners : {false, true}) {
    std::vector<Buffer> owners;
    std::vector<Owned> owned;
    if (with_owners) {
      for (const std::string& s : serialized_) owned.push_back(InBuffer(s));
      views.clear();
      for (const Owned& o : owned) {
        views.push_back(o.view);
        owners.push_back(o.buffer);
      }
    }
    SLUICE_ASSERT_OK_AND_ASSIGN(Element batch, parser.ParseBatch(views, owners));
    for (const auto& [key, expected] : golden_["parse_example"].object()) {
      const Tensor* actual = batch.find(key);
      ASSERT_NE(actual, nullptr) << key;
      EXPECT_EQ(CompareGolden(expected, *actual, batch.find(key + ".row_lengths"), true), "")
          << key << (with_owners ? " (owned)" : "");
    }
    EXPECT_EQ(batch.names(), parser.batch_output_names());
    EXPECT_EQ(batch.size(), 6u);  // 5 features, VarLen 'tags' has row lengths
  }
}

TEST_F(ExampleGoldenTest, ParseSingleMatchesTensorFlowParseSingleExample) {
  const ExampleParser parser = MustCreate(testing::GoldenSpec(golden_["spec"]));
  SLUICE_ASSERT_OK_AND_ASSIGN(Element single, parser.ParseSingle(serialized_[0]));
  for (const auto& [key, expected] : golden_["parse_single_example_0"].object()) {
    const Tensor* actual = single.find(key);
    ASSERT_NE(actual, nullptr) << key;
    EXPECT_EQ(CompareGolden(expected, *actual, nullptr, false), "") << key;
  }
  EXPECT_EQ(single.size(), 5u);
}

// Every case of parse_errors.json: TensorFlow's outputs, or an error with
// the same code whose message carries the same facts.
TEST(ExampleErrorsGoldenTest, AgreesWithTensorFlowOnEveryCase) {
  // The facts our messages must state, per case; TF's texts are in the JSON
  // and in docs/example.md.
  const std::map<std::string, std::vector<std::string>> facts = {
      {"required_fixedlen_missing",
       {"feature 'label'", "int64", "is required but could not be found"}},
      {"dtype_mismatch_fixedlen",
       {"feature 'label'", "data types don't match", "expected float32", "found int64"}},
      {"dtype_mismatch_varlen",
       {"feature 'label'", "data types don't match", "expected string", "found int64"}},
      {"wrong_value_count",
       {"feature 'scores'", "expected 2 float32 values for shape [2], found 3"}},
      {"wrong_value_count_with_default",
       {"feature 'scores'", "expected 2 float32 values for shape [2], found 3"}},
      {"fixedlenseq_not_multiple",
       {"feature 'frames'", "found 3 float32 values, not a multiple of 2", "[?,2]"}},
      {"empty_feature_fixedlen_no_default",
       {"feature 'label'", "int64", "is required but could not be found"}},
      {"empty_list_fixedlen_with_default",
       {"feature 'label'", "expected 1 int64 values for shape [], found 0"}},
      {"empty_list_fixedlen_no_default",
       {"feature 'label'", "expected 1 int64 values for shape [], found 0"}},
  };
  const Json golden = testing::ReadGoldenJson("parse_errors.json");
  int checked = 0;
  for (const Json& c : golden["cases"].array()) {
    const std::string name = c["case"].str();
    SCOPED_TRACE(name);
    const std::string bytes = FromHex(c["serialized_hex"].str());
    const ExampleParser parser = MustCreate(testing::GoldenSpec(c["spec"]));
    const std::string_view one[] = {bytes};
    const Result<Element> batch = parser.ParseBatch(one);
    const Result<Element> single = parser.ParseSingle(bytes);
    for (const auto& [result, tf, is_batch] :
         {std::tuple{&batch, &c["parse_example"], true},
          std::tuple{&single, &c["parse_single_example"], false}}) {
      if ((*tf)["ok"].boolean()) {
        ASSERT_TRUE(result->ok()) << result->status();
        for (const auto& [key, expected] : (*tf)["outputs"].object()) {
          const Tensor* actual = (*result)->find(key);
          ASSERT_NE(actual, nullptr) << key;
          EXPECT_EQ(
              CompareGolden(expected, *actual, (*result)->find(key + ".row_lengths"), is_batch), "")
              << key;
        }
        continue;
      }
      ASSERT_FALSE(result->ok()) << "TensorFlow: " << (*tf)["core_message"].str();
      EXPECT_EQ(static_cast<int>(result->status().code()), (*tf)["error_code"].int64());
      ASSERT_TRUE(facts.count(name))
          << "no expected facts for case " << name << ": " << result->status();
      for (const std::string& fact : facts.at(name)) {
        SLUICE_EXPECT_ERROR(*result, StatusCode::kInvalidArgument, fact);
      }
      if (is_batch)
        SLUICE_EXPECT_ERROR(*result, StatusCode::kInvalidArgument, "example 0 of the batch");
    }
    ++checked;
  }
  EXPECT_EQ(checked, 13);
}

// --- Protobuf's semantics on hand-written wire bytes ------------------------------

std::string Entry(std::string_view key, std::string_view feature) {
  WireWriter w;
  w.Delimited(1, key);
  w.Delimited(2, feature);
  return w.str();
}
std::string Int64Feature(std::initializer_list<int64_t> values, bool packed = true) {
  WireWriter list;
  if (packed) {
    WireWriter p;
    for (int64_t v : values) p.Varint(static_cast<uint64_t>(v));
    list.Delimited(1, p.str());
  } else {
    for (int64_t v : values) {
      list.Tag(1, 0);
      list.Varint(static_cast<uint64_t>(v));
    }
  }
  WireWriter f;
  f.Delimited(3, list.str());
  return f.str();
}
std::string FloatFeature(std::initializer_list<float> values) {
  std::string packed;
  for (float v : values) packed.append(reinterpret_cast<const char*>(&v), 4);
  WireWriter list;
  list.Delimited(1, packed);
  WireWriter f;
  f.Delimited(2, list.str());
  return f.str();
}
std::string BytesFeature(std::initializer_list<std::string_view> values) {
  WireWriter list;
  for (std::string_view v : values) list.Delimited(1, v);
  WireWriter f;
  f.Delimited(1, list.str());
  return f.str();
}
std::string ExampleOf(std::initializer_list<std::string> entries) {
  WireWriter features;
  for (const std::string& e : entries) features.Delimited(1, e);
  WireWriter ex;
  ex.Delimited(1, features.str());
  return ex.str();
}

class ExampleSemanticsTest : public ::testing::Test {
 protected:
  // Parses with the fast parser and the reference; they must agree.
  Element Parse(const std::string& bytes, const ParseSpec& spec) {
    proto::Example ex;
    EXPECT_TRUE(ProtoParses(bytes, &ex));
    const ExampleParser parser = MustCreate(spec);
    Result<Element> fast = parser.ParseSingle(bytes);
    EXPECT_EQ(CompareWithReference(fast, testing::ReferenceParseSingle(ex, spec)), "");
    EXPECT_TRUE(fast.ok()) << fast.status();
    return fast.ok() ? *fast : Element();
  }
  std::vector<int64_t> Ints(const Element& e, const std::string& key) {
    auto v = e.get(key)->flat<int64_t>();
    return {v.begin(), v.end()};
  }
  const ParseSpec kVar = {{"k", VarLenFeature(DType::kInt64)}};
};

TEST_F(ExampleSemanticsTest, RepeatedMapKeyLastEntryWinsEntirely) {
  const Element e =
      Parse(ExampleOf({Entry("k", Int64Feature({1, 2})), Entry("k", Int64Feature({3}))}), kVar);
  EXPECT_EQ(Ints(e, "k"), (std::vector<int64_t>{3}));
  // A later entry without a kind makes the feature absent again.
  const ParseSpec with_default = {
      {"k", FixedLenFeature(DType::kInt64, {}, Tensor::Scalar<int64_t>(-7))}};
  const Element e2 =
      Parse(ExampleOf({Entry("k", Int64Feature({5})), Entry("k", "")}), with_default);
  EXPECT_EQ(Ints(e2, "k"), (std::vector<int64_t>{-7}));
}

TEST_F(ExampleSemanticsTest, RepeatedValueFieldsMergeAndTheOneofSwitches) {
  // Same kind: concatenated (packed then unpacked).
  WireWriter entry;
  entry.Delimited(1, "k");
  entry.Delimited(2, Int64Feature({1, 2}));
  entry.Delimited(2, Int64Feature({3}, /*packed=*/false));
  EXPECT_EQ(Ints(Parse(ExampleOf({entry.str()}), kVar), "k"), (std::vector<int64_t>{1, 2, 3}));
  // int64, then float, then int64 again: only the last int64 run survives.
  WireWriter switched;
  switched.Delimited(1, "k");
  switched.Delimited(2, Int64Feature({1}) + FloatFeature({2.0f}) + Int64Feature({4, 5}));
  EXPECT_EQ(Ints(Parse(ExampleOf({switched.str()}), kVar), "k"), (std::vector<int64_t>{4, 5}));
  // int64 then float: a float feature now, so an int64 spec fails.
  WireWriter to_float;
  to_float.Delimited(1, "k");
  to_float.Delimited(2, Int64Feature({1}));
  to_float.Delimited(2, FloatFeature({2.0f}));
  const ExampleParser p = MustCreate(kVar);
  SLUICE_EXPECT_ERROR(p.ParseSingle(ExampleOf({to_float.str()})), StatusCode::kInvalidArgument,
                      "expected int64 (int64_list) but found float32 (float_list)");
}

TEST_F(ExampleSemanticsTest, KeyAfterValueLastKeyAndMissingKey) {
  WireWriter e1;
  e1.Delimited(2, Int64Feature({8}));
  e1.Delimited(1, "other");
  e1.Delimited(1, "k");  // the last key wins
  EXPECT_EQ(Ints(Parse(ExampleOf({e1.str()}), kVar), "k"), (std::vector<int64_t>{8}));
  WireWriter e2;
  e2.Delimited(2, Int64Feature({9}));  // no key: key ""
  EXPECT_EQ(Ints(Parse(ExampleOf({e2.str()}), {{"", VarLenFeature(DType::kInt64)}}), ""),
            (std::vector<int64_t>{9}));
}

TEST_F(ExampleSemanticsTest, FeaturesTwiceMergeAndUnknownFieldsAreSkipped) {
  WireWriter ex;
  ex.Tag(7, 0);
  ex.Varint(123);
  ex.Tag(9, 3);  // a group with a nested group inside
  ex.Tag(1, 3);
  ex.Tag(1, 5);
  ex.Fixed32(7);
  ex.Tag(1, 4);
  ex.Tag(9, 4);
  ex.Raw(ExampleOf({Entry("a", Int64Feature({1}))}));
  ex.Tag(1, 0);  // Example.features with the wrong wire type: unknown
  ex.Varint(5);
  ex.Raw(ExampleOf({Entry("b", Int64Feature({2}))}));
  ex.Tag(3, 1);
  ex.Fixed64(0);
  const Element e =
      Parse(ex.str(), {{"a", VarLenFeature(DType::kInt64)}, {"b", VarLenFeature(DType::kInt64)}});
  EXPECT_EQ(Ints(e, "a"), (std::vector<int64_t>{1}));
  EXPECT_EQ(Ints(e, "b"), (std::vector<int64_t>{2}));
}

TEST_F(ExampleSemanticsTest, OverlongVarintsAndNegativeValues) {
  WireWriter list;
  list.Tag(1, 0);
  list.Raw(std::string("\x81\x80\x80\x00", 4));  // 1, overlong
  list.Tag(1, 0);
  list.Varint(static_cast<uint64_t>(int64_t{-1}));  // ten bytes
  list.Tag(1, 0);
  list.Raw(std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 10));  // -1, high bits dropped
  WireWriter f;
  f.Delimited(3, list.str());
  EXPECT_EQ(Ints(Parse(ExampleOf({Entry("k", f.str())}), kVar), "k"),
            (std::vector<int64_t>{1, -1, -1}));
}

TEST_F(ExampleSemanticsTest, EmptyFeatureIsAbsentButEmptyListIsPresent) {
  const ParseSpec spec = {{"k", FixedLenFeature(DType::kInt64, {}, Tensor::Scalar<int64_t>(-1))}};
  EXPECT_EQ(Ints(Parse(ExampleOf({Entry("k", "")}), spec), "k"), (std::vector<int64_t>{-1}));
  const ExampleParser p = MustCreate(spec);
  SLUICE_EXPECT_ERROR(p.ParseSingle(ExampleOf({Entry("k", Int64Feature({}))})),
                      StatusCode::kInvalidArgument,
                      "expected 1 int64 values for shape [], found 0");
}

TEST(ExampleMalformedTest, ReportsDataLossWithOffset) {
  const ExampleParser p = MustCreate({{"k", VarLenFeature(DType::kInt64)}});
  const std::string good = ExampleOf({Entry("k", Int64Feature({1, 2, 3}))});
  SLUICE_EXPECT_ERROR(p.ParseSingle(good.substr(0, good.size() - 1)), StatusCode::kDataLoss,
                      "malformed Example at byte");
  SLUICE_EXPECT_ERROR(p.ParseSingle(std::string("\x0a\x05\x0a", 3)), StatusCode::kDataLoss,
                      "malformed Example at byte 1: length 5 runs past the end");
  SLUICE_EXPECT_ERROR(p.ParseSingle(std::string("\x0e\x00", 2)), StatusCode::kDataLoss,
                      "invalid wire type 6");
  SLUICE_EXPECT_ERROR(p.ParseSingle(std::string("\x00", 1)), StatusCode::kDataLoss,
                      "field number 0");
  SLUICE_EXPECT_ERROR(p.ParseSingle(std::string("\x1b\x0c", 2)), StatusCode::kDataLoss,
                      "end-group tag for field 1 closes a group of field 3");
  // A packed float_list whose length is not a multiple of 4.
  WireWriter list;
  list.Delimited(1, "abc");
  WireWriter f;
  f.Delimited(2, list.str());
  SLUICE_EXPECT_ERROR(p.ParseSingle(ExampleOf({Entry("zz", f.str())})), StatusCode::kDataLoss,
                      "packed float_list of 3 bytes is not a multiple of 4");
  // Batch errors name the example.
  const std::string_view batch[] = {good, "\x0a"};
  SLUICE_EXPECT_ERROR(p.ParseBatch(batch), StatusCode::kDataLoss, "(example 1 of the batch)");
}

// --- Ownership -------------------------------------------------------------------

TEST(ExampleOwnershipTest, StringsAreViewsIntoTheOwner) {
  const ExampleParser p = MustCreate(
      {{"s", VarLenFeature(DType::kString)}, {"f", FixedLenFeature(DType::kString, {})}});
  const std::string bytes = ExampleOf(
      {Entry("s", BytesFeature({"hello", "world"})), Entry("f", BytesFeature({"fixed"}))});
  Owned owned = InBuffer(bytes);
  const auto* lo = owned.buffer.data();
  const auto* hi = lo + owned.buffer.size();
  auto inside = [&](std::string_view s) {
    const auto* q = reinterpret_cast<const uint8_t*>(s.data());
    return q >= lo && q + s.size() <= hi;
  };
  SLUICE_ASSERT_OK_AND_ASSIGN(Element single, p.ParseSingle(owned.view, owned.buffer));
  SLUICE_ASSERT_OK_AND_ASSIGN(Element batch, p.ParseBatch({&owned.view, 1}, {&owned.buffer, 1}));
  for (const Element* e : {&single, &batch}) {
    for (const char* key : {"s", "f"}) {
      const Tensor t = *e->get(key);
      for (std::string_view s : t.flat<std::string_view>()) EXPECT_TRUE(inside(s)) << s;
      ASSERT_FALSE(t.string_owners().empty());
      EXPECT_EQ(t.string_owners().back().data(), owned.buffer.data());
    }
  }
  // The tensors keep the bytes alive after every other reference is gone.
  const long before = owned.buffer.use_count();
  EXPECT_GT(before, 1);
  owned.buffer = Buffer();
  EXPECT_EQ(single.get("s")->flat<std::string_view>()[1], "world");
  EXPECT_EQ(batch.get("f")->flat<std::string_view>()[0], "fixed");

  // Bytes outside the owner are refused.
  Owned other = InBuffer("x");
  SLUICE_EXPECT_ERROR(p.ParseSingle(bytes, other.buffer), StatusCode::kInvalidArgument,
                      "does not lie inside its owner Buffer");
}

TEST(ExampleOwnershipTest, WithoutOwnerStringsAreCopied) {
  const ExampleParser p = MustCreate(
      {{"s", VarLenFeature(DType::kString)},
       {"d", FixedLenFeature(DType::kString, {2}, Tensor::FromStrings({"p", "q"}).value())}});
  auto bytes = std::make_unique<std::string>(ExampleOf({Entry("s", BytesFeature({"abc", ""}))}));
  SLUICE_ASSERT_OK_AND_ASSIGN(Element single, p.ParseSingle(*bytes));
  const std::string_view one[] = {*bytes};
  SLUICE_ASSERT_OK_AND_ASSIGN(Element batch, p.ParseBatch(one));
  std::fill(bytes->begin(), bytes->end(), 'X');
  bytes.reset();
  EXPECT_EQ(single.get("s")->flat<std::string_view>()[0], "abc");
  EXPECT_EQ(batch.get("s")->flat<std::string_view>()[0], "abc");
  EXPECT_EQ(batch.get("d")->flat<std::string_view>()[1], "q");
  EXPECT_EQ(single.get("d")->flat<std::string_view>()[0], "p");
}

// --- The batch writer --------------------------------------------------------------

TEST(ExampleBatchWriterTest, RowsInAnyOrderAndShortBatches) {
  const ExampleParser p = MustCreate({
      {"x", FixedLenFeature(DType::kInt64, {})},
      {"v", VarLenFeature(DType::kFloat32)},
      {"q", FixedLenSequenceFeature(DType::kInt64, {2}, true, Tensor::Scalar<int64_t>(-1))},
  });
  std::vector<std::string> rows;
  for (int r = 0; r < 4; ++r) {
    ExampleBuilder b;
    b.AddInt64("x", r);
    std::vector<float> v(static_cast<size_t>(r), 0.5f * static_cast<float>(r));
    b.AddFloatList("v", v);
    std::vector<int64_t> q(static_cast<size_t>(2 * r), r);
    b.AddInt64List("q", q);
    rows.push_back(b.Serialize());
  }
  SLUICE_ASSERT_OK_AND_ASSIGN(ExampleBatchWriter w, p.StartBatch(4));
  EXPECT_EQ(w.batch_size(), 4);
  SLUICE_EXPECT_ERROR(w.ParseInto(4, rows[0]), StatusCode::kOutOfRange, "row 4 outside");
  SLUICE_ASSERT_OK(w.ParseInto(2, rows[2]));
  SLUICE_ASSERT_OK(w.ParseInto(0, rows[0]));
  SLUICE_EXPECT_ERROR(w.Finish(), StatusCode::kFailedPrecondition,
                      "example 1 of the batch was not parsed");
  // Still usable: the failed Finish did not spend it.
  SLUICE_ASSERT_OK(w.ParseInto(1, rows[1]));
  SLUICE_ASSERT_OK_AND_ASSIGN(Element batch, w.Finish(3));
  EXPECT_EQ(batch.get("x")->shape(), (Shape{3}));
  EXPECT_EQ(batch.get("v.row_lengths")->flat<int64_t>()[2], 2);
  EXPECT_EQ(batch.get("v")->num_elements(), 3);
  EXPECT_EQ(batch.get("q")->shape(), (Shape{3, 2, 2}));
  EXPECT_EQ(batch.get("q")->flat<int64_t>()[4], 1);   // row 1, item 0
  EXPECT_EQ(batch.get("q")->flat<int64_t>()[6], -1);  // row 1, item 1: padding
  SLUICE_EXPECT_ERROR(w.Finish(), StatusCode::kFailedPrecondition, "twice");
  SLUICE_EXPECT_ERROR(w.ParseInto(0, rows[0]), StatusCode::kFailedPrecondition, "after Finish");

  // Same result as ParseBatch on the same rows.
  std::vector<std::string_view> views(rows.begin(), rows.begin() + 3);
  SLUICE_ASSERT_OK_AND_ASSIGN(Element direct, p.ParseBatch(views));
  EXPECT_EQ(testing::DescribeDifference(batch, direct), "");
}

TEST(ExampleBatchWriterTest, ConcurrentRows) {
  const ExampleParser p =
      MustCreate({{"x", FixedLenFeature(DType::kInt64, {})}, {"s", VarLenFeature(DType::kString)}});
  constexpr int kRows = 256;
  std::vector<std::string> rows;
  for (int r = 0; r < kRows; ++r) {
    ExampleBuilder b;
    b.AddInt64("x", r).AddBytesList("s", {std::string(static_cast<size_t>(r % 5), 'a')});
    rows.push_back(b.Serialize());
  }
  SLUICE_ASSERT_OK_AND_ASSIGN(ExampleBatchWriter w, p.StartBatch(kRows));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int r = t; r < kRows; r += 4)
        ASSERT_TRUE(w.ParseInto(r, rows[static_cast<size_t>(r)]).ok());
    });
  }
  for (auto& t : threads) t.join();
  SLUICE_ASSERT_OK_AND_ASSIGN(Element batch, w.Finish());
  std::vector<std::string_view> views(rows.begin(), rows.end());
  SLUICE_ASSERT_OK_AND_ASSIGN(Element direct, p.ParseBatch(views));
  EXPECT_EQ(testing::DescribeDifference(batch, direct), "");
}

// --- Randomized agreement with protobuf and the reference ---------------------------

struct RandomSpec {
  ParseSpec spec;
  std::vector<testing::KeyHint> hints;
};

std::vector<RandomSpec> RandomSpecs() {
  std::vector<testing::KeyHint> extra = {{"zz"}, {"bb", 3, 1}, {"a\x01"}};
  RandomSpec mixed;
  mixed.spec = {
      {"a", FixedLenFeature(DType::kInt64, {}, Tensor::Scalar<int64_t>(-1))},
      {"b", FixedLenFeature(DType::kFloat32, {2})},
      {"c", VarLenFeature(DType::kString)},
      {"d", FixedLenSequenceFeature(DType::kInt64, {}, true)},
      {"e", VarLenFeature(DType::kFloat32)},
      {"f", FixedLenFeature(DType::kString, {}, Tensor::StringScalar("x"))},
      {"g", FixedLenSequenceFeature(DType::kFloat32, {2}, true, Tensor::Scalar<float>(0.5f))},
      {"", VarLenFeature(DType::kInt64)},
  };
  mixed.hints = {{"a", 3, 1}, {"b", 2, 2}, {"c", 1},        {"d", 3},
                 {"e", 2},    {"f", 1, 1}, {"g", 2, -1, 2}, {"", 3}};
  mixed.hints.insert(mixed.hints.end(), extra.begin(), extra.end());

  RandomSpec lenient;  // no required features
  lenient.spec = {
      {"a", VarLenFeature(DType::kInt64)},
      {"b", FixedLenSequenceFeature(DType::kString, {}, true, Tensor::StringScalar("pad"))},
      {"c", FixedLenFeature(DType::kFloat32, {3}, Tensor::FromVector<float>({1, 2, 3}).value())},
      {"d", VarLenFeature(DType::kString)},
  };
  lenient.hints = {{"a", 3}, {"b", 1}, {"c", 2, 3}, {"d", 1}, {""}};
  lenient.hints.insert(lenient.hints.end(), extra.begin(), extra.end());

  RandomSpec strings;  // multi-dimensional string and int shapes
  strings.spec = {
      {"s", FixedLenFeature(
                DType::kString, {2, 1},
                Tensor::FromStrings(std::vector<std::string>{"u", "v"})->Reshape({2, 1}).value())},
      {"i",
       FixedLenFeature(
           DType::kInt64, {2, 2},
           Tensor::FromVector<int64_t>(std::vector<int64_t>{1, 2, 3, 4})->Reshape({2, 2}).value())},
      {"q", FixedLenSequenceFeature(DType::kString, {2}, true)},
  };
  strings.hints = {{"s", 1, 2}, {"i", 3, 4}, {"q", 1, -1, 2}};
  strings.hints.insert(strings.hints.end(), extra.begin(), extra.end());
  return {mixed, lenient, strings};
}

TEST(ExampleRandomTest, FastParserAgreesWithProtobufAndReference) {
  std::mt19937_64 rng(7);
  int accepted = 0, rejected = 0, parsed_ok = 0, batches = 0;
  for (const RandomSpec& rs : RandomSpecs()) {
    const ExampleParser parser = MustCreate(rs.spec);
    testing::RandomExampleOptions options;
    options.keys = rs.hints;
    for (int iter = 0; iter < 4000; ++iter) {
      std::string bytes = testing::RandomExample(rng, options);
      if (iter % 3 == 2) bytes = testing::Mutate(rng, bytes);
      proto::Example ex;
      const bool proto_ok = ProtoParses(bytes, &ex);
      Owned owned = InBuffer(bytes);
      const Result<Element> fast =
          iter % 2 ? parser.ParseSingle(owned.view, owned.buffer) : parser.ParseSingle(bytes);
      if (!proto_ok) {
        ++rejected;
        ASSERT_EQ(fast.status().code(), StatusCode::kDataLoss)
            << "protobuf rejects " << testing::ToHex(bytes) << " but we gave "
            << (fast.ok() ? fast->DebugString() : fast.status().ToString());
        continue;
      }
      ++accepted;
      ASSERT_NE(fast.status().code(), StatusCode::kDataLoss)
          << fast.status() << "\nbytes " << testing::ToHex(bytes);
      parsed_ok += fast.ok();
      ASSERT_EQ(CompareWithReference(fast, testing::ReferenceParseSingle(ex, rs.spec)), "")
          << "bytes " << testing::ToHex(bytes);
    }
    // Batches of valid examples.
    for (int iter = 0; iter < 600; ++iter) {
      const int n = static_cast<int>(rng() % 6);
      std::vector<std::string> bytes;
      std::vector<proto::Example> exs(static_cast<size_t>(n));
      for (int i = 0; i < n; ++i) {
        std::string b;
        do {
          b = testing::RandomExample(rng, options);
        } while (!ProtoParses(b, &exs[static_cast<size_t>(i)]));
        bytes.push_back(std::move(b));
      }
      std::vector<std::string_view> views(bytes.begin(), bytes.end());
      const Result<Element> fast = parser.ParseBatch(views);
      ASSERT_EQ(CompareWithReference(fast, testing::ReferenceParseBatch(exs, rs.spec)), "");
      batches += fast.ok();
    }
  }
  // The generator must exercise both sides.
  EXPECT_GT(accepted, 5000);
  EXPECT_GT(rejected, 1000);
  EXPECT_GT(parsed_ok, 2000);
  EXPECT_GT(batches, 300);
}

TEST(ExampleRandomTest, TruncationAtEveryByte) {
  std::mt19937_64 rng(11);
  const RandomSpec rs = RandomSpecs()[1];
  const ExampleParser parser = MustCreate(rs.spec);
  testing::RandomExampleOptions options;
  options.keys = rs.hints;
  std::vector<std::string> inputs =
      testing::ReadTFRecordPayloads(testing::TestDataPath("tf/examples.tfrecord"));
  for (int i = 0; i < 200; ++i) inputs.push_back(testing::RandomExample(rng, options));
  for (const std::string& full : inputs) {
    for (size_t len = 0; len <= full.size(); ++len) {
      // A fresh allocation of exactly `len` bytes, so that ASan sees any overread.
      auto exact = std::make_unique<char[]>(len + 1);
      std::memcpy(exact.get(), full.data(), len);
      const std::string_view bytes(exact.get(), len);
      proto::Example ex;
      const bool proto_ok = ProtoParses(bytes, &ex);
      const Result<Element> fast = parser.ParseSingle(bytes);
      if (!proto_ok) {
        ASSERT_EQ(fast.status().code(), StatusCode::kDataLoss) << testing::ToHex(bytes);
      } else {
        ASSERT_EQ(CompareWithReference(fast, testing::ReferenceParseSingle(ex, rs.spec)), "")
            << testing::ToHex(bytes);
      }
    }
  }
}

// Groups nested around the recursion limit, at every message level: we
// accept exactly what protobuf accepts.
TEST(ExampleRandomTest, GroupNestingLimitMatchesProtobuf) {
  const ExampleParser parser = MustCreate({{"k", VarLenFeature(DType::kInt64)}});
  auto nested = [](int depth) {
    std::string s;
    for (int i = 0; i < depth; ++i) s += "\x2b";  // field 5, start group
    for (int i = 0; i < depth; ++i) s += "\x2c";  // field 5, end group
    return s;
  };
  for (int level = 0; level < 5; ++level) {
    int accepted = 0;
    for (int depth = 90; depth <= 102; ++depth) {
      // Budgets: Example 100, Features 99, map entry 98, Feature 97, Int64List 96.
      const std::string groups = nested(depth);
      const std::string list = std::string("\x08\x01") + (level == 4 ? groups : "");
      WireWriter feature;
      feature.Delimited(3, list);
      if (level == 3) feature.Raw(groups);
      WireWriter entry;
      entry.Delimited(1, "k");
      entry.Delimited(2, feature.str());
      if (level == 2) entry.Raw(groups);
      WireWriter features;
      features.Delimited(1, entry.str());
      if (level == 1) features.Raw(groups);
      WireWriter ex;
      ex.Delimited(1, features.str());
      if (level == 0) ex.Raw(groups);
      proto::Example msg;
      const bool proto_ok = ProtoParses(ex.str(), &msg);
      const Result<Element> fast = parser.ParseSingle(ex.str());
      EXPECT_EQ(fast.ok(), proto_ok)
          << "level " << level << " depth " << depth << ": " << fast.status();
      if (!fast.ok()) SLUICE_EXPECT_ERROR(fast, StatusCode::kDataLoss, "nested deeper than 100");
      accepted += proto_ok;
    }
    EXPECT_GT(accepted, 0) << "level " << level;  // the limit falls inside the range
    EXPECT_LT(accepted, 13) << "level " << level;
  }
}

TEST(ExampleRandomTest, Utf8KeysMatchProtobuf) {
  const ExampleParser parser = MustCreate({{"caf\xc3\xa9", VarLenFeature(DType::kInt64)}});
  const char* keys[] = {"caf\xc3\xa9",
                        "\xc3",
                        "\xc0\x80",
                        "\xe0\x9f\xbf",
                        "\xed\xa0\x80",
                        "\xef\xbf\xbf",
                        "\xf0\x90\x80\x80",
                        "\xf4\x8f\xbf\xbf",
                        "\xf4\x90\x80\x80",
                        "\xf8\x88\x80\x80\x80",
                        "\x7f",
                        "a\xe2\x82",
                        "\xe2\x82\xac"};
  for (const char* key : keys) {
    const std::string bytes = ExampleOf({Entry(key, Int64Feature({1}))});
    proto::Example ex;
    const bool proto_ok = ProtoParses(bytes, &ex);
    const Result<Element> fast = parser.ParseSingle(bytes);
    EXPECT_EQ(fast.ok(), proto_ok) << testing::ToHex(key);
    if (!proto_ok) SLUICE_EXPECT_ERROR(fast, StatusCode::kDataLoss, "not valid UTF-8");
  }
}

}  // namespace
}  // namespace sluice
