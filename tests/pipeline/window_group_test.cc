// window, from_window, group_by_window, group_by_reducer and
// bucket_by_sequence_length: conformance, tf.data's documented examples
// (expected values checked against TensorFlow 2), edge cases, bad arguments.
#include <gtest/gtest.h>

#include "conformance.h"
#include "sluice/pipeline/dataset.h"

namespace sluice {
namespace {

using testing::ReadAll;
using testing::RunConformance;

int64_t Value(const Element& e) { return e[0].scalar<int64_t>(); }

Dataset ParallelRange(int64_t n, int p) {
  return Dataset::range(n).map([](Element e) { return e; }, {.parallelism = p});
}

// An element of one int64 vector (a window or a batch of scalars).
Element Vec(const std::vector<int64_t>& v) {
  return Element({Tensor::FromVector<int64_t>(v).value()});
}
std::vector<std::string> Vecs(const std::vector<std::vector<int64_t>>& vs) {
  std::vector<std::string> out;
  for (const auto& v : vs) out.push_back(Vec(v).DebugString(1000));
  return out;
}
// An int64 matrix element (a padded batch).
std::string Mat(const std::vector<std::vector<int64_t>>& rows) {
  std::vector<int64_t> flat;
  for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  const int64_t n = static_cast<int64_t>(rows.size());
  Tensor t =
      Tensor::FromVector<int64_t>(flat, Shape{n, n ? static_cast<int64_t>(flat.size()) / n : 0})
          .value();
  return Element({t}).DebugString(1000);
}

// Elements of varying length (tf.data's from_generator over lists).
Dataset Sequences(std::vector<std::vector<int64_t>> seqs) {
  auto shared = std::make_shared<const std::vector<std::vector<int64_t>>>(std::move(seqs));
  return Dataset::from_generator(
      [shared]() -> GeneratorFn {
        auto i = std::make_shared<size_t>(0);
        return [shared, i]() -> Result<std::optional<Element>> {
          if (*i >= shared->size()) return std::optional<Element>();
          return std::optional<Element>(Vec((*shared)[(*i)++]));
        };
      },
      ElementSpec({{"", DType::kInt64, Shape{Shape::kUnknownDim}}}));
}

// The failing input of error-propagation cases: element 5 fails.
Dataset FailingRange() {
  return Dataset::range(10).map(
      [](Element e) -> Result<Element> {
        if (Value(e) == 5) return Status::DataLoss("bad five");
        return e;
      },
      {.name = "source_map"});
}

DatasetFn Rows(int64_t n) {
  return [n](const Element& w) -> Result<Dataset> { return Dataset::from_window(w).batch(n); };
}

// ---- window -----------------------------------------------------------------

TEST(WindowTest, ConformanceShiftOne) {
  // tf.data: range(7).window(3, 1).
  RunConformance(
      {.name = "window(3, 1)",
       .make = [](int p) { return ParallelRange(7, p).window(3, {.shift = 1}); },
       .expected = Vecs({{0, 1, 2}, {1, 2, 3}, {2, 3, 4}, {3, 4, 5}, {4, 5, 6}, {5, 6}, {6}}),
       .make_failing = [] { return FailingRange().window(3, {.shift = 1}); },
       .error_substring = "bad five"});
}

TEST(WindowTest, ConformanceShiftAboveSize) {
  RunConformance({.name = "window(3, 5)",
                  .make = [](int p) { return ParallelRange(7, p).window(3, {.shift = 5}); },
                  .expected = Vecs({{0, 1, 2}, {5, 6}}),
                  .make_failing = [] { return FailingRange().window(2, {.shift = 4}); },
                  .error_substring = "bad five"});
}

TEST(WindowTest, ConformanceStride) {
  RunConformance(
      {.name = "window(3, 1, 2)",
       .make = [](int p) { return ParallelRange(7, p).window(3, {.shift = 1, .stride = 2}); },
       .expected = Vecs({{0, 2, 4}, {1, 3, 5}, {2, 4, 6}, {3, 5}, {4, 6}, {5}, {6}})});
  RunConformance({.name = "window(3, 1, 2, drop_remainder)",
                  .make =
                      [](int p) {
                        return ParallelRange(7, p).window(
                            3, {.shift = 1, .stride = 2, .drop_remainder = true});
                      },
                  .expected = Vecs({{0, 2, 4}, {1, 3, 5}, {2, 4, 6}})});
}

TEST(WindowTest, DropRemainderAndCardinality) {
  EXPECT_EQ(ReadAll(Dataset::range(7).window(3, {.shift = 1, .drop_remainder = true})),
            Vecs({{0, 1, 2}, {1, 2, 3}, {2, 3, 4}, {3, 4, 5}, {4, 5, 6}}));
  EXPECT_EQ(Dataset::range(10).window(3, {.shift = 2}).cardinality(), 5);
  EXPECT_EQ(Dataset::range(10).window(3, {.shift = 2, .drop_remainder = true}).cardinality(), 4);
  EXPECT_EQ(Dataset::range(2).window(3, {.drop_remainder = true}).cardinality(), 0);
  EXPECT_EQ(ReadAll(Dataset::range(2).window(3, {.drop_remainder = true})).size(), 0u);
  EXPECT_EQ(Dataset::range(3).repeat().window(2).cardinality(), kInfiniteCardinality);
  // Spec: a leading row dimension, known with drop_remainder.
  EXPECT_EQ(Dataset::range(5).window(2).element_spec().DebugString(), "(int64[?])");
  EXPECT_EQ(Dataset::range(5).window(2, {.drop_remainder = true}).element_spec().DebugString(),
            "(int64[2])");
}

TEST(WindowTest, EdgeCases) {
  EXPECT_EQ(ReadAll(Dataset::range(3).window(1)), Vecs({{0}, {1}, {2}}));
  EXPECT_EQ(ReadAll(Dataset::range(0).window(3)).size(), 0u);
  EXPECT_EQ(Dataset::range(0).window(3).cardinality(), 0);
  EXPECT_EQ(ReadAll(Dataset::range(4).window(10)), Vecs({{0, 1, 2, 3}}));
  // A huge size allocates nothing up front.
  EXPECT_EQ(ReadAll(Dataset::range(3).window(int64_t{1} << 40)), Vecs({{0, 1, 2}}));
}

TEST(WindowTest, BadArguments) {
  for (const Dataset& d : {Dataset::range(5).window(0), Dataset::range(5).window(2, {.shift = 0}),
                           Dataset::range(5).window(2, {.stride = 0}), Dataset::range(5).window(-1),
                           Dataset::range(5).window(int64_t{1} << 62, {.stride = 8})}) {
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument) << d.status().ToString();
    EXPECT_NE(d.status().message().find("window"), std::string::npos);
  }
  // Rows of different shapes cannot stack into one window.
  Dataset ragged = Sequences({{1}, {2, 3}}).window(2);
  Result<Iterator> it = ragged.iterator();
  ASSERT_TRUE(it.ok());
  Result<std::optional<Element>> e = it->next();
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(e.status().message().find("stage 'window'"), std::string::npos);
}

TEST(WindowTest, NamedAndStringComponents) {
  Tensor ids = Tensor::FromVector<int64_t>({1, 2, 3}).value();
  Tensor words = Tensor::FromStrings(std::vector<std::string>{"a", "bb", "ccc"}).value();
  Dataset ds = Dataset::from_tensor_slices({ids, words}, {"id", "word"}).window(2);
  EXPECT_EQ(ds.element_spec().DebugString(), "(id: int64[?], word: string[?])");
  Result<Iterator> it = ds.iterator();
  ASSERT_TRUE(it.ok());
  Element w = it->next().value().value();
  EXPECT_EQ(w.names(), (std::vector<std::string>{"id", "word"}));
  EXPECT_EQ(w[1].shape(), Shape{2});
  EXPECT_EQ(w[1].flat<std::string_view>()[1], "bb");
  std::vector<std::string> rows = ReadAll(Dataset::from_window(w));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_NE(rows[1].find("bb"), std::string::npos);
  EXPECT_NE(rows[1].find("word"), std::string::npos);
  EXPECT_EQ(ReadAll(Dataset::from_window(w).batch(2)),
            std::vector<std::string>{w.DebugString(1000)});
}

TEST(WindowTest, FlatMapBatchIdiomEqualsBatch) {
  // ds.window(n).flat_map(from_window(w).batch(n)) is batch(n).
  RunConformance({.name = "window(4).flat_map(from_window.batch(4))",
                  .make = [](int p) { return ParallelRange(10, p).window(4).flat_map(Rows(4)); },
                  .expected = ReadAll(Dataset::range(10).batch(4))});
  EXPECT_EQ(ReadAll(Dataset::range(10).window(4, {.shift = 2}).flat_map(Rows(2))),
            Vecs({{0, 1}, {2, 3}, {2, 3}, {4, 5}, {4, 5}, {6, 7}, {6, 7}, {8, 9}, {8, 9}}));
}

TEST(WindowTest, FromWindowBatchIsAView) {
  Element w = Vec({10, 11, 12, 13, 14});
  for (int64_t k : {5, 2}) {
    Result<Iterator> it = Dataset::from_window(w).batch(k).iterator();
    ASSERT_TRUE(it.ok());
    int64_t row = 0;
    for (;;) {
      std::optional<Element> b = it->next().value();
      if (!b) break;
      // The batch shares the window's bytes: no copy.
      EXPECT_EQ((*b)[0].raw_data(), static_cast<const int64_t*>(w[0].raw_data()) + row);
      row += (*b)[0].shape().dim(0);
    }
    EXPECT_EQ(row, 5);
  }
  EXPECT_EQ(ReadAll(Dataset::from_window(w).batch(2, {.drop_remainder = true})),
            Vecs({{10, 11}, {12, 13}}));
  RunConformance({.name = "from_window",
                  .make = [w](int) { return Dataset::from_window(w); },
                  .expected = testing::Int64Elements({10, 11, 12, 13, 14})});
}

TEST(WindowTest, StackedInput) {
  // from_window makes stacked reads: window(n) then takes them (views).
  Element w = Vec({0, 1, 2, 3, 4, 5, 6});
  RunConformance({.name = "window over stacked reads",
                  .make = [w](int) { return Dataset::from_window(w).window(3); },
                  .expected = Vecs({{0, 1, 2}, {3, 4, 5}, {6}})});
  EXPECT_EQ(ReadAll(Dataset::from_window(w).window(3, {.drop_remainder = true})),
            Vecs({{0, 1, 2}, {3, 4, 5}}));
  EXPECT_EQ(ReadAll(Dataset::from_window(w).window(2, {.shift = 3})), Vecs({{0, 1}, {3, 4}, {6}}));
  Result<Iterator> it = Dataset::from_window(w).window(3).iterator();
  ASSERT_TRUE(it.ok());
  it->next().value();
  Element second = it->next().value().value();
  EXPECT_EQ(second[0].raw_data(), static_cast<const int64_t*>(w[0].raw_data()) + 3);
}

TEST(WindowTest, FromWindowBadArguments) {
  EXPECT_EQ(Dataset::from_window(Element()).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Dataset::from_window(Element({Tensor::Scalar<int64_t>(1)})).status().code(),
            StatusCode::kInvalidArgument);
  Element mismatch({Tensor::FromVector<int64_t>({1, 2}).value(),
                    Tensor::FromVector<int64_t>({1, 2, 3}).value()});
  Dataset d = Dataset::from_window(mismatch);
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(d.status().message().find("first dimensions differ"), std::string::npos);
}

TEST(WindowTest, IgnoreErrorsSkipsTheFailedElement) {
  EXPECT_EQ(ReadAll(FailingRange().window(3).ignore_errors()),
            Vecs({{0, 1, 2}, {3, 4, 6}, {7, 8, 9}}));
}

// Elements of 1 MiB each.
Dataset BigElements(int64_t n) {
  return Dataset::range(n).map([](Element e) -> Result<Element> {
    SLUICE_ASSIGN_OR_RETURN(Tensor t, Tensor::Zeros(DType::kUInt8, Shape{1 << 20}));
    return Element({e[0], t});
  });
}

Status FirstError(const Dataset& d) {
  Result<Iterator> it = d.iterator();
  if (!it.ok()) return it.status();
  for (;;) {
    Result<std::optional<Element>> e = it->next();
    if (!e.ok()) return e.status();
    if (!e->has_value()) return Status::OK();
  }
}

TEST(WindowTest, BufferChargedToRamBudget) {
  Options small;
  small.ram_budget = 8 << 20;
  Status s = FirstError(BigElements(40).window(20).with_options(small));
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
  EXPECT_NE(s.message().find("window"), std::string::npos) << s.ToString();
  // Windows that fit go through.
  EXPECT_TRUE(FirstError(BigElements(10).window(2).with_options(small)).ok());
  auto groups = [](int64_t size) {
    return BigElements(40).group_by_window(
        [](const Element& e) -> Result<int64_t> { return Value(e) % 2; },
        [](int64_t, const Dataset& w) -> Result<Dataset> { return w.take(1); }, size);
  };
  s = FirstError(groups(20).with_options(small));
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
  EXPECT_TRUE(FirstError(groups(2).with_options(small)).ok());
}

// ---- group_by_window ---------------------------------------------------------

KeyFn Mod(int64_t m) {
  return [m](const Element& e) -> Result<int64_t> { return Value(e) % m; };
}
WindowReduceFn BatchOf(int64_t n) {
  return [n](int64_t, const Dataset& w) -> Result<Dataset> { return w.batch(n); };
}

TEST(GroupByWindowTest, DocumentedExample) {
  // tf.data: range(10).group_by_window(x % 2, batch(5), window_size=5).
  RunConformance(
      {.name = "group_by_window",
       .make = [](int p) { return ParallelRange(10, p).group_by_window(Mod(2), BatchOf(5), 5); },
       .expected = Vecs({{0, 2, 4, 6, 8}, {1, 3, 5, 7, 9}}),
       .make_failing = [] { return FailingRange().group_by_window(Mod(2), BatchOf(2), 2); },
       .error_substring = "bad five"});
}

TEST(GroupByWindowTest, PartialWindowsInKeyOrder) {
  KeyFn key = [](const Element& e) -> Result<int64_t> { return 2 - Value(e) % 3; };
  RunConformance(
      {.name = "group_by_window partial",
       .make = [key](int p) { return ParallelRange(8, p).group_by_window(key, BatchOf(4), 4); },
       .expected = Vecs({{2, 5}, {1, 4, 7}, {0, 3, 6}})});
}

TEST(GroupByWindowTest, WindowSizeFn) {
  WindowSizeFn size = [](int64_t key) -> Result<int64_t> { return key + 1; };
  RunConformance(
      {.name = "group_by_window(window_size_fn)",
       .make =
           [size](int p) { return ParallelRange(10, p).group_by_window(Mod(2), BatchOf(5), size); },
       .expected = Vecs({{0}, {2}, {1, 3}, {4}, {6}, {5, 7}, {8}, {9}})});
}

TEST(GroupByWindowTest, ReduceToManyElementsRestoresMidWindow) {
  // reduce_fn returns the window's elements twice: restore lands inside it.
  WindowReduceFn twice = [](int64_t, const Dataset& w) -> Result<Dataset> {
    return w.concatenate(w);
  };
  RunConformance(
      {.name = "group_by_window(concatenate)",
       .make = [twice](int p) { return ParallelRange(9, p).group_by_window(Mod(3), twice, 2); },
       .expected = testing::Int64Elements({0, 3, 0, 3, 1, 4, 1, 4, 2, 5, 2, 5, 6, 6, 7, 7, 8, 8})});
}

TEST(GroupByWindowTest, OneKeyManyKeysEmpty) {
  KeyFn one = [](const Element&) -> Result<int64_t> { return 7; };
  EXPECT_EQ(ReadAll(Dataset::range(5).group_by_window(one, BatchOf(2), 2)),
            Vecs({{0, 1}, {2, 3}, {4}}));
  KeyFn own = [](const Element& e) -> Result<int64_t> { return -Value(e); };
  EXPECT_EQ(ReadAll(Dataset::range(4).group_by_window(own, BatchOf(2), 2)),
            Vecs({{3}, {2}, {1}, {0}}));
  EXPECT_EQ(ReadAll(Dataset::range(0).group_by_window(one, BatchOf(2), 2)).size(), 0u);
  EXPECT_EQ(Dataset::range(0).group_by_window(one, BatchOf(2), 2).cardinality(), 0);
  // The key passed to reduce_fn is the group's.
  WindowReduceFn keyed = [](int64_t key, const Dataset& w) -> Result<Dataset> {
    return w.map(
        [key](Element e) { return Element({Tensor::Scalar<int64_t>(key * 100 + Value(e))}); });
  };
  EXPECT_EQ(ReadAll(Dataset::range(4).group_by_window(Mod(2), keyed, 2)),
            testing::Int64Elements({0, 2, 101, 103}));
}

TEST(GroupByWindowTest, Errors) {
  EXPECT_EQ(Dataset::range(5).group_by_window(Mod(2), BatchOf(2), 0).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(Dataset::range(5).group_by_window(nullptr, BatchOf(2), 2).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(Dataset::range(5).group_by_window(Mod(2), nullptr, 2).status().code(),
            StatusCode::kInvalidArgument);
  auto first_error = [](const Dataset& d) {
    Result<Iterator> it = d.iterator();
    EXPECT_TRUE(it.ok());
    for (;;) {
      Result<std::optional<Element>> e = it->next();
      if (!e.ok()) return e.status();
      if (!e->has_value()) return Status::OK();
    }
  };
  WindowSizeFn zero = [](int64_t) -> Result<int64_t> { return 0; };
  Status s = first_error(Dataset::range(5).group_by_window(Mod(2), BatchOf(2), zero));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("window size of key 0 is 0"), std::string::npos) << s.ToString();
  KeyFn bad_key = [](const Element& e) -> Result<int64_t> {
    if (Value(e) == 3) return Status::InvalidArgument("no key for three");
    return 0;
  };
  s = first_error(Dataset::range(5).group_by_window(bad_key, BatchOf(2), 2, {.name = "groups"}));
  EXPECT_NE(s.message().find("stage 'groups' failed on element 3"), std::string::npos)
      << s.ToString();
  WindowReduceFn bad_reduce = [](int64_t, const Dataset&) -> Result<Dataset> {
    return Status::Unavailable("no dataset");
  };
  s = first_error(Dataset::range(5).group_by_window(Mod(2), bad_reduce, 2));
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
}

// ---- group_by_reducer -------------------------------------------------------

Reducer SumReducer() {
  return {.init = [](int64_t) -> Result<Element> { return Element({Tensor::Scalar<int64_t>(0)}); },
          .reduce = [](Element s, Element e) -> Result<Element> {
            return Element({Tensor::Scalar<int64_t>(Value(s) + Value(e))});
          },
          .finalize = [](Element s) -> Result<Element> { return s; }};
}

TEST(GroupByReducerTest, DocumentedExample) {
  RunConformance(
      {.name = "group_by_reducer",
       .make =
           [](int p) { return ParallelRange(10, p).apply(group_by_reducer(Mod(2), SumReducer())); },
       .expected = testing::Int64Elements({20, 25}),
       .make_failing = [] { return FailingRange().apply(group_by_reducer(Mod(2), SumReducer())); },
       .error_substring = "bad five"});
}

TEST(GroupByReducerTest, KeyOrderAndEdges) {
  KeyFn key = [](const Element& e) -> Result<int64_t> { return 3 - Value(e) % 3; };
  EXPECT_EQ(ReadAll(Dataset::range(10).apply(group_by_reducer(key, SumReducer()))),
            testing::Int64Elements({15, 12, 18}));
  EXPECT_EQ(ReadAll(Dataset::range(0).apply(group_by_reducer(key, SumReducer()))).size(), 0u);
  Dataset inf = Dataset::range(3).repeat().apply(group_by_reducer(key, SumReducer()));
  EXPECT_EQ(inf.status().code(), StatusCode::kInvalidArgument);
  Reducer no_init = SumReducer();
  no_init.init = nullptr;
  EXPECT_EQ(Dataset::range(3).apply(group_by_reducer(key, no_init)).status().code(),
            StatusCode::kInvalidArgument);
  Reducer to_float = SumReducer();
  to_float.reduce = [](Element, Element) -> Result<Element> {
    return Element({Tensor::Scalar<float>(1.0f)});
  };
  Result<Iterator> it = Dataset::range(3).apply(group_by_reducer(key, to_float)).iterator();
  ASSERT_TRUE(it.ok());
  Result<std::optional<Element>> e = it->next();
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(e.status().message().find("another structure"), std::string::npos);
}

// ---- bucket_by_sequence_length ----------------------------------------------

const std::vector<std::vector<int64_t>> kSeqs = {
    {0}, {1, 2, 3, 4}, {5, 6, 7}, {7, 8, 9, 10, 11}, {13, 14, 15, 16, 19, 20}, {21, 22}};

ElementLengthFn Length() {
  return [](const Element& e) -> Result<int64_t> { return e[0].shape().dim(0); };
}

TEST(BucketBySequenceLengthTest, DocumentedExample) {
  RunConformance(
      {.name = "bucket_by_sequence_length",
       .make =
           [](int) {
             return Sequences(kSeqs).bucket_by_sequence_length(Length(), {3, 5}, {2, 2, 2});
           },
       .expected = {Mat({{1, 2, 3, 4}, {5, 6, 7, 0}}),
                    Mat({{7, 8, 9, 10, 11, 0}, {13, 14, 15, 16, 19, 20}}),
                    Mat({{0, 0}, {21, 22}})}});
  EXPECT_EQ(Sequences(kSeqs)
                .bucket_by_sequence_length(Length(), {3, 5}, {2, 2, 2})
                .element_spec()
                .DebugString(),
            "(int64[?,?])");
}

TEST(BucketBySequenceLengthTest, PadToBucketBoundaryExample) {
  // tf.data's second example: boundaries [4, 7], padding -1.
  Dataset ds = Sequences(kSeqs).bucket_by_sequence_length(
      Length(), {4, 7}, {2, 2, 2},
      {.padding_values = {Tensor::Scalar<int64_t>(-1)}, .pad_to_bucket_boundary = true});
  EXPECT_EQ(ReadAll(ds),
            (std::vector<std::string>{Mat({{0, -1, -1}, {5, 6, 7}}),
                                      Mat({{1, 2, 3, 4, -1, -1}, {7, 8, 9, 10, 11, -1}}),
                                      Mat({{21, 22, -1}}), Mat({{13, 14, 15, 16, 19, 20}})}));
  // A length at or past the last boundary is an error with it.
  Result<Iterator> it =
      Sequences(kSeqs)
          .bucket_by_sequence_length(Length(), {3, 5}, {2, 2, 2}, {.pad_to_bucket_boundary = true})
          .iterator();
  ASSERT_TRUE(it.ok());
  Status s;
  for (;;) {
    Result<std::optional<Element>> e = it->next();
    if (!e.ok()) {
      s = e.status();
      break;
    }
    ASSERT_TRUE(e->has_value());
  }
  EXPECT_NE(s.message().find("length 5 is not below the last bucket boundary 5"), std::string::npos)
      << s.ToString();
}

TEST(BucketBySequenceLengthTest, DropRemainderAndNoPadding) {
  EXPECT_EQ(ReadAll(Sequences(kSeqs).bucket_by_sequence_length(Length(), {3, 5}, {2, 2, 2},
                                                               {.drop_remainder = true})),
            (std::vector<std::string>{Mat({{1, 2, 3, 4}, {5, 6, 7, 0}}),
                                      Mat({{7, 8, 9, 10, 11, 0}, {13, 14, 15, 16, 19, 20}}),
                                      Mat({{0, 0}, {21, 22}})}));
  Dataset equal = Sequences({{1, 2}, {3}, {4, 5}, {6}, {7, 8}});
  EXPECT_EQ(ReadAll(equal.bucket_by_sequence_length(Length(), {2}, {2, 3}, {.no_padding = true})),
            (std::vector<std::string>{Mat({{3}, {6}}), Mat({{1, 2}, {4, 5}, {7, 8}})}));
}

TEST(BucketBySequenceLengthTest, EmptyInputAndGivenPaddedShapes) {
  EXPECT_EQ(ReadAll(Sequences({}).bucket_by_sequence_length(Length(), {3}, {2, 2})).size(), 0u);
  // A known padded dimension stays; with pad_to_bucket_boundary the unknown
  // ones pad to boundary - 1.
  Dataset ds = Sequences({{1}, {2, 3}, {4, 5, 6, 7}})
                   .bucket_by_sequence_length(Length(), {3, 6}, {2, 2, 2},
                                              {.padded_shapes = {Shape{Shape::kUnknownDim}},
                                               .pad_to_bucket_boundary = true});
  EXPECT_EQ(ReadAll(ds), (std::vector<std::string>{Mat({{1, 0}, {2, 3}}), Mat({{4, 5, 6, 7, 0}})}));
  ds = Sequences({{1}, {2, 3}})
           .bucket_by_sequence_length(Length(), {3}, {2, 2}, {.padded_shapes = {Shape{4}}});
  EXPECT_EQ(ReadAll(ds), std::vector<std::string>{Mat({{1, 0, 0, 0}, {2, 3, 0, 0}})});
}

TEST(BucketBySequenceLengthTest, BadArguments) {
  Dataset s = Sequences(kSeqs);
  for (const Dataset& d :
       {s.bucket_by_sequence_length(Length(), {3, 5}, {2, 2}),
        s.bucket_by_sequence_length(Length(), {5, 3}, {2, 2, 2}),
        s.bucket_by_sequence_length(Length(), {3, 5}, {2, 0, 2}),
        s.bucket_by_sequence_length(nullptr, {3}, {2, 2}),
        s.bucket_by_sequence_length(Length(), {3}, {2, 2},
                                    {.padding_values = {Tensor::Scalar<float>(1.0f)}})}) {
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument) << d.status().ToString();
    EXPECT_NE(d.status().message().find("bucket_by_sequence_length"), std::string::npos);
  }
}

}  // namespace
}  // namespace sluice
