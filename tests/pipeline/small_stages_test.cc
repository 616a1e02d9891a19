// scan, take_while, unique, rebatch, random, counter, rejection_resample:
// conformance, tf.data's documented examples, edge cases and bad arguments.
#include <gtest/gtest.h>

#include <atomic>
#include <map>

#include "conformance.h"
#include "sluice/core/rng.h"
#include "sluice/pipeline/dataset.h"
#include "test_util.h"

namespace sluice {
namespace {

using testing::Int64Elements;
using testing::ReadAll;
using testing::RunConformance;

int64_t Value(const Element& e) { return e[0].scalar<int64_t>(); }

Dataset ParallelRange(int64_t n, int p) {
  return Dataset::range(n).map([](Element e) { return e; }, {.parallelism = p});
}

std::vector<Element> ReadElements(const Dataset& ds) {
  std::vector<Element> out;
  Result<Iterator> it = ds.iterator();
  EXPECT_TRUE(it.ok()) << it.status().ToString();
  if (!it.ok()) return out;
  for (;;) {
    Result<std::optional<Element>> e = it->next();
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    if (!e.ok() || !e->has_value()) break;
    out.push_back(std::move(**e));
  }
  return out;
}

std::vector<int64_t> ReadInts(const Dataset& ds) {
  std::vector<int64_t> out;
  for (const Element& e : ReadElements(ds)) out.push_back(Value(e));
  return out;
}

// The first error next() returns.
Status FirstError(const Dataset& ds) {
  Result<Iterator> it = ds.iterator();
  if (!it.ok()) return it.status();
  for (int i = 0; i < 1000000; ++i) {
    Result<std::optional<Element>> e = it->next();
    if (!e.ok()) return e.status();
    if (!e->has_value()) break;
  }
  return Status::OK();
}

Element I64(int64_t v) { return Element({Tensor::Scalar<int64_t>(v)}); }

std::string Batch(std::vector<int64_t> v) {
  return Element({*Tensor::FromVector<int64_t>(v)}).DebugString(1000);
}

// ---- scan ------------------------------------------------------------------

ScanFn CumulativeSum() {
  return [](Element state, Element e) -> Result<std::pair<Element, Element>> {
    const int64_t s = Value(state) + Value(e);
    return std::pair(I64(s), I64(s));
  };
}

TEST(ScanTest, Conformance) {
  // tf.data's example: range(10).scan(0, lambda s, i: (s + i, s + i)).
  RunConformance({.name = "scan",
                  .make = [](int p) { return ParallelRange(10, p).scan(I64(0), CumulativeSum()); },
                  .expected = Int64Elements({0, 1, 3, 6, 10, 15, 21, 28, 36, 45}),
                  .make_failing =
                      [] {
                        return Dataset::range(10).scan(
                            I64(0),
                            [](Element s, Element e) -> Result<std::pair<Element, Element>> {
                              if (Value(e) == 4) return Status::DataLoss("bad four");
                              return std::pair(s, e);
                            },
                            {.name = "running"});
                      },
                  .error_substring = "stage 'running' failed on element 4"});
  EXPECT_EQ(Dataset::range(10).scan(I64(0), CumulativeSum()).cardinality(), 10);
  EXPECT_EQ(Dataset::counter().scan(I64(0), CumulativeSum()).cardinality(), kInfiniteCardinality);
}

TEST(ScanTest, StateOfSeveralComponentsAndOutputOfAnotherStructure) {
  // State (count, sum); output (value, mean so far as float64).
  auto ds = Dataset::range(1, 5, 1).scan(
      Element({Tensor::Scalar<int64_t>(0), Tensor::Scalar<int64_t>(0)}),
      [](Element s, Element e) -> Result<std::pair<Element, Element>> {
        const int64_t n = s[0].scalar<int64_t>() + 1, sum = s[1].scalar<int64_t>() + Value(e);
        return std::pair(Element({Tensor::Scalar<int64_t>(n), Tensor::Scalar<int64_t>(sum)}),
                         Element({e[0], Tensor::Scalar<double>(double(sum) / n)}));
      });
  std::vector<Element> got = ReadElements(ds);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_DOUBLE_EQ(got[3][1].scalar<double>(), 2.5);
  EXPECT_DOUBLE_EQ(got[1][1].scalar<double>(), 1.5);
}

TEST(ScanTest, StateOfAnotherStructureIsInvalidArgumentNamingTheElement) {
  auto ds = Dataset::range(5).scan(I64(0),
                                   [](Element s, Element e) -> Result<std::pair<Element, Element>> {
                                     if (Value(e) == 2)
                                       return std::pair(Element({Tensor::Scalar<float>(1.f)}), e);
                                     return std::pair(s, e);
                                   });
  SLUICE_EXPECT_ERROR(FirstError(ds), StatusCode::kInvalidArgument,
                      "stage 'scan' failed on element 2");
  SLUICE_EXPECT_ERROR(FirstError(ds), StatusCode::kInvalidArgument, "float32");
  auto two = Dataset::range(5).scan(
      I64(0), [](Element s, Element e) -> Result<std::pair<Element, Element>> {
        s.push_back(Tensor::Scalar<int64_t>(1));
        return std::pair(s, e);
      });
  SLUICE_EXPECT_ERROR(FirstError(two), StatusCode::kInvalidArgument, "2 components");
}

TEST(ScanTest, StateShapesMayChange) {
  // The state grows: [0], [0, 1], ... (tf.data relaxes the state's shape).
  auto ds = Dataset::range(4).scan(Element({*Tensor::FromVector<int64_t>(std::vector<int64_t>{})}),
                                   [](Element s, Element e) -> Result<std::pair<Element, Element>> {
                                     auto v = s[0].flat<int64_t>();
                                     std::vector<int64_t> grown(v.begin(), v.end());
                                     grown.push_back(Value(e));
                                     SLUICE_ASSIGN_OR_RETURN(Tensor t,
                                                             Tensor::FromVector<int64_t>(grown));
                                     return std::pair(Element({t}), Element({t}));
                                   });
  std::vector<std::string> got = ReadAll(ds);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[3], Batch({0, 1, 2, 3}));
}

TEST(ScanTest, BadArguments) {
  SLUICE_EXPECT_ERROR(Dataset::range(3).scan(I64(0), nullptr).status(),
                      StatusCode::kInvalidArgument, "scan: the function is empty");
}

// ---- take_while ------------------------------------------------------------

TEST(TakeWhileTest, Conformance) {
  auto below5 = [](const Element& e) -> Result<bool> { return Value(e) < 5; };
  // tf.data's example: range(10).take_while(lambda x: x < 5).
  RunConformance({.name = "take_while",
                  .make = [&](int p) { return ParallelRange(10, p).take_while(below5); },
                  .expected = Int64Elements({0, 1, 2, 3, 4}),
                  .make_failing =
                      [] {
                        return Dataset::range(10).take_while(
                            [](const Element& e) -> Result<bool> {
                              if (Value(e) == 3) return Status::NotFound("no three");
                              return true;
                            },
                            {.name = "while"});
                      },
                  .error_substring = "stage 'while' failed on element 3"});
  // All true: the whole input; first false: nothing.
  EXPECT_EQ(
      ReadInts(Dataset::range(4).take_while([](const Element&) -> Result<bool> { return true; })),
      (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_TRUE(ReadAll(Dataset::range(4).take_while([](const Element&) -> Result<bool> {
                return false;
              })).empty());
  EXPECT_EQ(Dataset::range(4).take_while(below5).cardinality(), kUnknownCardinality);
  EXPECT_EQ(Dataset::range(0).take_while(below5).cardinality(), 0);
  // An infinite input ends.
  EXPECT_EQ(ReadInts(Dataset::counter().take_while(below5)), (std::vector<int64_t>{0, 1, 2, 3, 4}));
}

TEST(TakeWhileTest, StopsReadingAtTheFirstFalse) {
  auto reads = std::make_shared<std::atomic<int>>(0);
  auto ds = Dataset::range(100)
                .map([reads](Element e) {
                  ++*reads;
                  return e;
                })
                .take_while([](const Element& e) -> Result<bool> { return Value(e) != 3; });
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
  for (int i = 0; i < 5; ++i) SLUICE_ASSERT_OK(it.next().status());
  EXPECT_EQ(reads->load(), 4);  // 0, 1, 2 and the false 3
  SLUICE_EXPECT_ERROR(Dataset::range(3).take_while(nullptr).status(), StatusCode::kInvalidArgument,
                      "predicate is empty");
}

// ---- unique ----------------------------------------------------------------

TEST(UniqueTest, Conformance) {
  // tf.data's example: from_tensor_slices([1, 37, 2, 37, 2, 1]).unique().
  auto ints = *Tensor::FromVector<int64_t>(std::vector<int64_t>{1, 37, 2, 37, 2, 1});
  RunConformance({.name = "unique",
                  .make =
                      [&](int p) {
                        return Dataset::from_tensor_slices({ints})
                            .map([](Element e) { return e; }, {.parallelism = p})
                            .unique();
                      },
                  .expected = Int64Elements({1, 37, 2}),
                  .make_failing =
                      [] {
                        // A spec the build cannot see: the float element fails.
                        return Dataset::from_generator([]() -> GeneratorFn {
                                 auto i = std::make_shared<int>(0);
                                 return [i]() -> Result<std::optional<Element>> {
                                   if ((*i)++ < 2) return std::optional<Element>(I64(*i));
                                   return std::optional<Element>(
                                       Element({Tensor::Scalar<float>(1.f)}));
                                 };
                               })
                            .unique();
                      },
                  .error_substring = "stage 'unique' failed on element 2"});
  // A long run with many repeats: save/restore carries the set.
  RunConformance({.name = "unique modulo",
                  .make =
                      [](int p) {
                        return ParallelRange(60, p)
                            .map([](Element e) { return I64(Value(e) * 7 % 13); })
                            .unique();
                      },
                  .expected = Int64Elements({0, 7, 1, 8, 2, 9, 3, 10, 4, 11, 5, 12, 6})});
}

TEST(UniqueTest, StringsInt32AndTensors) {
  auto strings = *Tensor::FromStrings(std::vector<std::string>{"a", "b", "a", "", "b", ""});
  std::vector<Element> got = ReadElements(Dataset::from_tensor_slices({strings}).unique());
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0][0].scalar<std::string_view>(), "a");
  EXPECT_EQ(got[2][0].scalar<std::string_view>(), "");
  auto i32 = *Tensor::FromVector<int32_t>(std::vector<int32_t>{3, 3, 4});
  EXPECT_EQ(ReadAll(Dataset::from_tensor_slices({i32}).unique()).size(), 2u);
  // Whole tensors (tf.data's kernel compares shapes and values): rows of a
  // [4, 2] tensor, two alike.
  auto rows =
      *Tensor::FromVector<int64_t>(std::vector<int64_t>{1, 2, 3, 4, 1, 2, 2, 1}, Shape{4, 2});
  EXPECT_EQ(ReadAll(Dataset::from_tensor_slices({rows}).unique()).size(), 3u);
  // Names are kept.
  EXPECT_EQ(ReadElements(Dataset::from_tensor_slices({i32}, {"id"}).unique())[0].names()[0], "id");
}

TEST(UniqueTest, BadElementsAreInvalidArgumentAtBuild) {
  auto f = *Tensor::FromVector<float>(std::vector<float>{1, 2});
  SLUICE_EXPECT_ERROR(Dataset::from_tensor_slices({f}).unique().status(),
                      StatusCode::kInvalidArgument, "int32, int64 or string");
  auto i = *Tensor::FromVector<int64_t>(std::vector<int64_t>{1, 2});
  SLUICE_EXPECT_ERROR(Dataset::from_tensor_slices({i, i}).unique().status(),
                      StatusCode::kInvalidArgument, "one int32, int64 or string component");
}

TEST(UniqueTest, TheSetIsChargedToTheRamBudget) {
  auto ds = Dataset::range(100000).unique().with_options({.ram_budget = 64 << 10});
  Status s = FirstError(ds);
  SLUICE_EXPECT_ERROR(s, StatusCode::kResourceExhausted, "ram_budget");
  SLUICE_EXPECT_ERROR(s, StatusCode::kResourceExhausted, "stage 'unique'");
}

// ---- rebatch ---------------------------------------------------------------

TEST(RebatchTest, TfDataExamples) {
  // range(6).batch(2).rebatch(3)
  EXPECT_EQ(ReadAll(Dataset::range(6).batch(2).rebatch(3)),
            (std::vector<std::string>{Batch({0, 1, 2}), Batch({3, 4, 5})}));
  // range(7).batch(4).rebatch(2)
  EXPECT_EQ(ReadAll(Dataset::range(7).batch(4).rebatch(2)),
            (std::vector<std::string>{Batch({0, 1}), Batch({2, 3}), Batch({4, 5}), Batch({6})}));
  // range(7).batch(2).rebatch(3, drop_remainder=True)
  EXPECT_EQ(ReadAll(Dataset::range(7).batch(2).rebatch(3, {.drop_remainder = true})),
            (std::vector<std::string>{Batch({0, 1, 2}), Batch({3, 4, 5})}));
  // range(8).batch(4).rebatch([2, 1, 1])
  EXPECT_EQ(ReadAll(Dataset::range(8).batch(4).rebatch(std::vector<int64_t>{2, 1, 1})),
            (std::vector<std::string>{Batch({0, 1}), Batch({2}), Batch({3}), Batch({4, 5}),
                                      Batch({6}), Batch({7})}));
}

TEST(RebatchTest, Conformance) {
  RunConformance(
      {.name = "rebatch(3) of batch(4)",
       .make = [](int p) { return ParallelRange(22, p).batch(4).rebatch(3); },
       .expected = {Batch({0, 1, 2}), Batch({3, 4, 5}), Batch({6, 7, 8}), Batch({9, 10, 11}),
                    Batch({12, 13, 14}), Batch({15, 16, 17}), Batch({18, 19, 20}), Batch({21})}});
  RunConformance({.name = "rebatch([5, 0, 2]) of batch(3), drop_remainder",
                  .make =
                      [](int p) {
                        return ParallelRange(16, p).batch(3).rebatch(std::vector<int64_t>{5, 0, 2},
                                                                     {.drop_remainder = true});
                      },
                  .expected = {Batch({0, 1, 2, 3, 4}), Batch({}), Batch({5, 6}),
                               Batch({7, 8, 9, 10, 11}), Batch({}), Batch({12, 13})}});
  RunConformance({.name = "rebatch of named components",
                  .make =
                      [](int p) {
                        return Dataset::zip({ParallelRange(10, p), Dataset::range(100, 110, 1)})
                            .batch(4)
                            .rebatch(6);
                      },
                  .make_failing =
                      [] {
                        return Dataset::range(10)
                            .map([](Element e) -> Result<Element> {
                              if (Value(e) == 6) return Status::DataLoss("bad six");
                              return e;
                            })
                            .batch(2)
                            .rebatch(3);
                      },
                  .error_substring = "bad six"});
}

TEST(RebatchTest, CardinalityAndSpec) {
  EXPECT_EQ(Dataset::range(7).batch(4).rebatch(2).cardinality(), kUnknownCardinality);
  // batch(4, drop_remainder) has a static dim 0: 2 batches, 8 rows.
  auto exact = Dataset::range(9).batch(4, {.drop_remainder = true});
  EXPECT_EQ(exact.rebatch(3).cardinality(), 3);
  EXPECT_EQ(exact.rebatch(3, {.drop_remainder = true}).cardinality(), 2);
  EXPECT_EQ(exact.rebatch(std::vector<int64_t>{2, 1, 1}).cardinality(), 6);
  EXPECT_EQ(exact.rebatch(std::vector<int64_t>{3, 4}).cardinality(), 3);
  EXPECT_EQ(exact.rebatch(std::vector<int64_t>{3, 4}, {.drop_remainder = true}).cardinality(), 2);
  EXPECT_EQ(ReadAll(exact.rebatch(std::vector<int64_t>{3, 4})).size(), 3u);
  EXPECT_EQ(ReadAll(exact.rebatch(std::vector<int64_t>{3, 4}, {.drop_remainder = true})).size(),
            2u);
  EXPECT_EQ(Dataset::range(3).repeat().batch(2).rebatch(5).cardinality(), kInfiniteCardinality);
  const Dataset dropped = exact.rebatch(3, {.drop_remainder = true});  // owns the spec
  const ComponentSpec& c = dropped.element_spec().components()[0];
  EXPECT_EQ(c.shape.dim(0), 3);
  EXPECT_EQ(exact.rebatch(3).element_spec().components()[0].shape.dim(0), Shape::kUnknownDim);
}

TEST(RebatchTest, ABatchWithinOneInputBatchIsAView) {
  auto ds = Dataset::range(8).batch(8).rebatch(4);
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
  SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<Element> a, it.next());
  SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<Element> b, it.next());
  EXPECT_EQ(
      static_cast<const char*>((*b)[0].raw_data()) - static_cast<const char*>((*a)[0].raw_data()),
      4 * 8);
}

TEST(RebatchTest, BadArguments) {
  auto b = Dataset::range(8).batch(4);
  SLUICE_EXPECT_ERROR(b.rebatch(0).status(), StatusCode::kInvalidArgument, ">= 1");
  SLUICE_EXPECT_ERROR(b.rebatch(-2).status(), StatusCode::kInvalidArgument, ">= 1");
  SLUICE_EXPECT_ERROR(b.rebatch(std::vector<int64_t>{}).status(), StatusCode::kInvalidArgument,
                      "empty list");
  SLUICE_EXPECT_ERROR(b.rebatch(std::vector<int64_t>{2, -1}).status(), StatusCode::kInvalidArgument,
                      ">= 0");
  SLUICE_EXPECT_ERROR(b.rebatch(std::vector<int64_t>{0, 0}).status(), StatusCode::kInvalidArgument,
                      "all 0");
  SLUICE_EXPECT_ERROR(Dataset::range(8).rebatch(2).status(), StatusCode::kInvalidArgument,
                      "scalar");
}

// ---- counter and random ----------------------------------------------------

TEST(CounterTest, Conformance) {
  RunConformance({.name = "counter",
                  .make = [](int) { return Dataset::counter(5, 3).take(6); },
                  .expected = Int64Elements({5, 8, 11, 14, 17, 20})});
  EXPECT_EQ(Dataset::counter().cardinality(), kInfiniteCardinality);
  EXPECT_TRUE(Dataset::counter().random_access());
  // tf.data's examples: counter().take(5); counter(start=2).take(5);
  // counter(start=2, step=5).take(5); counter(start=2, step=-1).take(5).
  EXPECT_EQ(ReadInts(Dataset::counter().take(5)), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(ReadInts(Dataset::counter(2).take(5)), (std::vector<int64_t>{2, 3, 4, 5, 6}));
  EXPECT_EQ(ReadInts(Dataset::counter(2, 5).take(5)), (std::vector<int64_t>{2, 7, 12, 17, 22}));
  EXPECT_EQ(ReadInts(Dataset::counter(2, -1).take(5)), (std::vector<int64_t>{2, 1, 0, -1, -2}));
  std::vector<Element> f = ReadElements(Dataset::counter(1, 2, DType::kFloat32).take(2));
  EXPECT_EQ(f[1][0].scalar<float>(), 3.f);
  EXPECT_EQ(ReadElements(Dataset::counter(0, 1, DType::kInt32).take(1))[0][0].dtype(),
            DType::kInt32);
  SLUICE_EXPECT_ERROR(Dataset::counter(0, 1, DType::kString).status(), StatusCode::kInvalidArgument,
                      "dtype");
}

TEST(CounterTest, PositionalSkipAndShard) {
  EXPECT_EQ(ReadInts(Dataset::counter(0, 2).skip(1'000'000'000).take(2)),
            (std::vector<int64_t>{2'000'000'000, 2'000'000'002}));
  EXPECT_EQ(ReadInts(Dataset::counter().shard(3, 1).take(3)), (std::vector<int64_t>{1, 4, 7}));
}

TEST(RandomTest, Conformance) {
  RunConformance(
      {.name = "random", .make = [](int) { return Dataset::random({.seed = 42}).take(40); }});
  RunConformance({.name = "random without a seed (the pipeline's)",
                  .make = [](int) { return Dataset::random().take(20); }});
}

TEST(RandomTest, ElementIIsAPureFunctionOfSeedAndIndex) {
  const std::vector<int64_t> a = ReadInts(Dataset::random({.seed = 7}).take(1000));
  EXPECT_EQ(ReadInts(Dataset::random({.seed = 7}).take(1000)), a);
  EXPECT_NE(ReadInts(Dataset::random({.seed = 8}).take(1000)), a);
  for (int64_t v : a) {
    EXPECT_GE(v, 0);
    EXPECT_LT(v, int64_t{1} << 32);
  }
  // Roughly uniform: the mean of 1000 values near 2^31.
  double mean = 0;
  for (int64_t v : a) mean += static_cast<double>(v) / a.size();
  EXPECT_NEAR(mean / 4294967296.0, 0.5, 0.05);
  // Positional: skip reads nothing; element 500 on.
  EXPECT_EQ(ReadInts(Dataset::random({.seed = 7}).skip(500).take(500)),
            std::vector<int64_t>(a.begin() + 500, a.end()));
  EXPECT_TRUE(Dataset::random().random_access());
  // The generator, documented: element i = Rng(seed, i).NextU32().
  EXPECT_EQ(a[3], static_cast<int64_t>(Rng(7, 3).NextU32()));
}

TEST(RandomTest, RestoreContinuesTheSequenceOfAnUnseededPipeline) {
  // No seed anywhere: each iterator draws a fresh one; the saved state
  // carries it, so the restored iterator continues the same sequence.
  const Dataset ds = Dataset::random().take(10);
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator a, ds.iterator());
  for (int i = 0; i < 3; ++i) SLUICE_ASSERT_OK(a.next().status());
  SLUICE_ASSERT_OK_AND_ASSIGN(std::string state, a.save());
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator b, ds.iterator());
  SLUICE_ASSERT_OK(b.restore(state));
  for (int i = 3; i < 10; ++i) {
    SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<Element> x, a.next());
    SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<Element> y, b.next());
    ASSERT_TRUE(x && y);
    EXPECT_EQ(Value(*x), Value(*y)) << "element " << i;
  }
}

TEST(RandomTest, RerandomizeEachIteration) {
  auto epochs = [](bool rerandomize) {
    std::vector<int64_t> v = ReadInts(
        Dataset::random({.seed = 3, .rerandomize_each_iteration = rerandomize}).take(5).repeat(2));
    return std::pair(std::vector<int64_t>(v.begin(), v.begin() + 5),
                     std::vector<int64_t>(v.begin() + 5, v.end()));
  };
  auto [a0, a1] = epochs(false);
  EXPECT_EQ(a0, a1);
  auto [b0, b1] = epochs(true);
  EXPECT_NE(b0, b1);
}

// ---- rejection_resample ----------------------------------------------------

// Elements 0..n-1, class 1 for one in ten, else 0.
ClassFn OneInTen() {
  return [](const Element& e) -> Result<int64_t> { return Value(e) % 10 == 0 ? 1 : 0; };
}

std::map<int, double> ClassFractions(const Dataset& ds) {
  std::map<int, double> f;
  std::vector<Element> got = ReadElements(ds);
  for (const Element& e : got) f[e[0].scalar<int32_t>()] += 1.0 / got.size();
  return f;
}

TEST(RejectionResampleTest, Conformance) {
  RunConformance({.name = "rejection_resample, initial_dist given",
                  .make =
                      [](int p) {
                        return ParallelRange(200, p).rejection_resample(
                            OneInTen(), {0.5, 0.5}, {.initial_dist = {0.9, 0.1}, .seed = 11});
                      },
                  .make_failing =
                      [] {
                        return Dataset::range(100).rejection_resample(
                            [](const Element& e) -> Result<int64_t> { return Value(e) % 3; },
                            {0.5, 0.5}, {.seed = 1});
                      },
                  .error_substring = "class_func returned 2, outside [0, 2)"});
  RunConformance(
      {.name = "rejection_resample, estimated", .make = [](int p) {
         return ParallelRange(300, p).rejection_resample(OneInTen(), {0.3, 0.7}, {.seed = 5});
       }});
}

TEST(RejectionResampleTest, ReachesTheTargetDistribution) {
  // Fixed seeds: the fractions are exact numbers for these runs, not random.
  const Dataset input = Dataset::range(200'000);
  std::map<int, double> given = ClassFractions(
      input.rejection_resample(OneInTen(), {0.5, 0.5}, {.initial_dist = {0.9, 0.1}, .seed = 1}));
  EXPECT_NEAR(given[1], 0.5, 0.01);
  std::map<int, double> estimated =
      ClassFractions(input.rejection_resample(OneInTen(), {0.5, 0.5}, {.seed = 2}));
  EXPECT_NEAR(estimated[1], 0.5, 0.01);
  // Towards the other side: t = (0.95, 0.05) from (0.9, 0.1), m > 0 (mixing).
  std::map<int, double> mixed = ClassFractions(
      input.rejection_resample(OneInTen(), {0.95, 0.05}, {.initial_dist = {0.9, 0.1}, .seed = 3}));
  EXPECT_NEAR(mixed[1], 0.05, 0.01);
  // Three classes, estimated.
  std::map<int, double> three = ClassFractions(input.rejection_resample(
      [](const Element& e) -> Result<int64_t> { return Value(e) % 4 == 0 ? 2 : Value(e) % 2; },
      {0.2, 0.3, 0.5}, {.seed = 4}));
  EXPECT_NEAR(three[0], 0.2, 0.01);
  EXPECT_NEAR(three[1], 0.3, 0.01);
  EXPECT_NEAR(three[2], 0.5, 0.01);
}

TEST(RejectionResampleTest, OutputIsClassThenElementAndDeterministic) {
  auto make = [](uint64_t seed) {
    return Dataset::from_tensor_slices({*Tensor::FromVector<int64_t>(std::vector<int64_t>{
                                           0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})},
                                       {"x"})
        .rejection_resample(
            [](const Element& e) -> Result<int64_t> { return e[0].scalar<int64_t>() % 2; },
            {0.5, 0.5}, {.initial_dist = {0.5, 0.5}, .seed = seed});
  };
  // target == initial: m = 1, the input as it is, with its classes.
  std::vector<Element> got = ReadElements(make(1));
  ASSERT_EQ(got.size(), 12u);
  EXPECT_EQ(got[3].names(), (std::vector<std::string>{"class", "x"}));
  EXPECT_EQ(got[3][0].scalar<int32_t>(), 1);
  EXPECT_EQ(got[3][1].scalar<int64_t>(), 3);
  const Dataset made = make(1);  // owns the spec
  const ElementSpec& spec = made.element_spec();
  EXPECT_EQ(spec.components()[0].dtype, DType::kInt32);
  EXPECT_EQ(spec.components()[1].name, "x");
  auto skewed = [](uint64_t seed) {
    return ReadAll(Dataset::range(1000).rejection_resample(OneInTen(), {0.5, 0.5}, {.seed = seed}));
  };
  EXPECT_EQ(skewed(9), skewed(9));
  EXPECT_NE(skewed(9), skewed(10));
}

TEST(RejectionResampleTest, BadArguments) {
  auto ds = Dataset::range(10);
  SLUICE_EXPECT_ERROR(ds.rejection_resample(nullptr, {1.0}).status(), StatusCode::kInvalidArgument,
                      "class_func is empty");
  SLUICE_EXPECT_ERROR(ds.rejection_resample(OneInTen(), {}).status(), StatusCode::kInvalidArgument,
                      "target_dist is empty");
  SLUICE_EXPECT_ERROR(ds.rejection_resample(OneInTen(), {0.5, 0.4}).status(),
                      StatusCode::kInvalidArgument, "sums to");
  SLUICE_EXPECT_ERROR(ds.rejection_resample(OneInTen(), {1.5, -0.5}).status(),
                      StatusCode::kInvalidArgument, ">= 0");
  SLUICE_EXPECT_ERROR(
      ds.rejection_resample(OneInTen(), {0.5, 0.5}, {.initial_dist = {1.0}}).status(),
      StatusCode::kInvalidArgument, "initial_dist has 1 classes");
  auto failing = ds.rejection_resample(
      [](const Element& e) -> Result<int64_t> {
        if (Value(e) == 4) return Status::DataLoss("no class");
        return 0;
      },
      {0.5, 0.5}, {.initial_dist = {0.5, 0.5}, .seed = 1});
  SLUICE_EXPECT_ERROR(FirstError(failing), StatusCode::kDataLoss,
                      "stage 'rejection_resample' failed on element 4");
}

}  // namespace
}  // namespace sluice
