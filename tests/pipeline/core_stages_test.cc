// range, from_tensor_slices, map, prefetch, batch, repeat, take, skip,
// with_options: conformance and semantics.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "conformance.h"
#include "sluice/pipeline/dataset.h"
#include "test_util.h"

namespace sluice {
namespace {

using testing::Int64Elements;
using testing::ReadAll;
using testing::RunConformance;

std::vector<int64_t> Iota(int64_t a, int64_t b, int64_t step = 1) {
  std::vector<int64_t> v;
  for (int64_t i = a; step > 0 ? i < b : i > b; i += step) v.push_back(i);
  return v;
}

Element Times(Element e, int64_t k) {
  return Element({Tensor::Scalar<int64_t>(e[0].scalar<int64_t>() * k)});
}

TEST(RangeTest, Conformance) {
  RunConformance({.name = "range",
                  .make = [](int) { return Dataset::range(3, 20, 2); },
                  .expected = Int64Elements(Iota(3, 20, 2))});
  EXPECT_EQ(Dataset::range(10, 0, -3).cardinality(), 4);
  EXPECT_EQ(ReadAll(Dataset::range(10, 0, -3)), Int64Elements({10, 7, 4, 1}));
  EXPECT_EQ(Dataset::range(0).cardinality(), 0);
  EXPECT_EQ(Dataset::range(0, 5, 0).status().code(), StatusCode::kInvalidArgument);
}

TEST(FromTensorSlicesTest, TutorialYearPrice) {
  // tf.data.Dataset.from_tensor_slices((years, prices)) from the tutorials.
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor years, Tensor::FromVector<int64_t>({2015, 2016, 2017}));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor prices, Tensor::FromVector<float>({1.5f, 2.5f, 3.0f}));
  Dataset ds = Dataset::from_tensor_slices({years, prices}, {"year", "price"});
  SLUICE_ASSERT_OK(ds.status());
  EXPECT_EQ(ds.cardinality(), 3);
  EXPECT_EQ(ds.element_spec().DebugString(), "(year: int64[], price: float32[])");
  std::vector<int64_t> seen;
  for (const Element& e : ds) {
    seen.push_back(e.get("year")->scalar<int64_t>());
    EXPECT_FLOAT_EQ(e.get("price")->scalar<float>(), seen.back() == 2015   ? 1.5f
                                                     : seen.back() == 2016 ? 2.5f
                                                                           : 3.0f);
  }
  EXPECT_EQ(seen, (std::vector<int64_t>{2015, 2016, 2017}));
  RunConformance({.name = "from_tensor_slices", .make = [&](int) {
                    return Dataset::from_tensor_slices({years, prices});
                  }});
}

TEST(FromTensorSlicesTest, MismatchedFirstDimensionNamesShapes) {
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor a, Tensor::FromVector<int64_t>({1, 2, 3}));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor b, Tensor::FromVector<float>({1, 2}));
  Dataset ds = Dataset::from_tensor_slices({a, b});
  SLUICE_EXPECT_ERROR(ds.status(), StatusCode::kInvalidArgument, "int64[3], float32[2]");
  // The error travels down the chain and out of iterator().
  SLUICE_EXPECT_ERROR(ds.map([](Element e) { return e; }).batch(2).iterator().status(),
                      StatusCode::kInvalidArgument, "first dimensions differ");
  EXPECT_THROW(
      {
        for (const Element& e : ds) (void)e;
      },
      Error);
}

TEST(MapTest, ConformanceSequentialAndParallel) {
  RunConformance({.name = "map",
                  .make =
                      [](int p) {
                        return Dataset::range(50).map(
                            [](Element e) { return Times(std::move(e), 3); }, {.parallelism = p});
                      },
                  .expected = Int64Elements(Iota(0, 150, 3)),
                  .make_failing =
                      [] {
                        return Dataset::range(10).map(
                            [](Element e) -> Result<Element> {
                              if (e[0].scalar<int64_t>() == 7) return Status::DataLoss("bad seven");
                              return e;
                            },
                            {.parallelism = 4, .name = "decode"});
                      },
                  .error_substring = "stage 'decode' failed on element 7"});
}

TEST(MapTest, AutotuneAndNonDeterministic) {
  auto ds = Dataset::range(500).map([](Element e) { return Times(std::move(e), 2); },
                                    {.parallelism = kAutotune, .deterministic = false});
  RunConformance({.name = "map nondeterministic",
                  .make = [&](int) { return ds; },
                  .expected = Int64Elements(Iota(0, 1000, 2)),
                  .ordered = false});
}

TEST(MapTest, PerElementRandomnessIsReproducible) {
  auto make = [](int p) {
    return Dataset::range(200)
        .map(
            [](Element, const MapContext& c) {
              return Element({Tensor::Scalar<int64_t>(c.rng().UniformInt(1000000))});
            },
            {.parallelism = p})
        .with_options({.seed = 99});
  };
  const auto a = ReadAll(make(1));
  EXPECT_EQ(ReadAll(make(4)), a);
  EXPECT_EQ(ReadAll(make(kAutotune)), a);
  EXPECT_NE(ReadAll(make(1).with_options({.seed = 100})), a);
}

// Cheap calls move in chunks; over an input that cannot seek, saved state
// holds the buffered results, including those the consumer has drained but
// not returned, and state saved after the input ended restores too.
TEST(MapTest, ChunkedResultsOverANonPositionalInputSaveAndRestore) {
  auto even = [](const Element& e) { return e[0].scalar<int64_t>() % 2 == 0; };
  for (bool deterministic : {true, false}) {
    RunConformance({.name = deterministic ? "map over filter" : "map over filter, unordered",
                    .make =
                        [&](int p) {
                          return Dataset::range(120).filter(even).map(
                              [](Element e) { return Times(std::move(e), 3); },
                              {.parallelism = p, .deterministic = deterministic});
                        },
                    .expected = Int64Elements(Iota(0, 360, 6)),
                    .ordered = deterministic});
  }
}

// Calls that turn slow after many cheap ones (chunks are then long) are
// handed over as they finish, and destroying the iterator does not wait
// for the rest of a chunk.
TEST(MapTest, CallsTurningSlowAreHandedOverAndCancelQuickly) {
  std::atomic<int> slow_calls{0};
  auto ds = Dataset::range(1000000).map(
      [&](Element e) {
        if (e[0].scalar<int64_t>() >= 20000) {
          slow_calls++;
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        return e;
      },
      {.parallelism = 2});
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
  for (int i = 0; i < 20000; ++i) SLUICE_ASSERT_OK(it.next().status());
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 3; ++i) SLUICE_ASSERT_OK(it.next().status());
  const auto ms = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 t0)
        .count();
  };
  // Three 20 ms calls, not three chunks of them.
  EXPECT_LT(ms(), 400);
  const auto t1 = std::chrono::steady_clock::now();
  { Iterator gone = std::move(it); }
  EXPECT_LT(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t1)
          .count(),
      100);
}

TEST(MapTest, OutputSpecIsChecked) {
  auto ds = Dataset::range(5).map(
      [](Element) { return Element({Tensor::Scalar<float>(1.0f)}); },
      {.output_spec = ElementSpec({{"", DType::kInt64, Shape{}}}), .name = "cast"});
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
  SLUICE_EXPECT_ERROR(it.next().status(), StatusCode::kInvalidArgument, "stage 'cast'");
}

TEST(PrefetchTest, Conformance) {
  for (int64_t n : std::vector<int64_t>{1, 3, kAutotune}) {
    RunConformance({.name = "prefetch",
                    .make = [n](int) { return Dataset::range(40).prefetch(n); },
                    .expected = Int64Elements(Iota(0, 40))});
  }
}

TEST(BatchTest, ConformanceAndRemainder) {
  RunConformance({.name = "batch", .make = [](int) { return Dataset::range(10).batch(4); }});
  auto ds = Dataset::range(10).batch(4);
  EXPECT_EQ(ds.cardinality(), 3);
  EXPECT_EQ(ds.element_spec().DebugString(), "(int64[?])");
  auto v = ReadAll(ds);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[2], "(int64[2] {8, 9})");
  auto d2 = Dataset::range(10).batch(4, {.drop_remainder = true});
  EXPECT_EQ(d2.cardinality(), 2);
  EXPECT_EQ(d2.element_spec().DebugString(), "(int64[4])");
  EXPECT_EQ(ReadAll(d2).size(), 2u);
}

// batch(n) tells a parallel map it collects n results at a time
// (ExpectNext): the map may then compute up to n ahead (8 per worker at
// most) instead of 2 per worker, and wakes batch once for several rows.
// Results never change.
TEST(BatchTest, ParallelMapComputesAheadForTheBatchWithTheSameResults) {
  auto capacity_of_map = [](int64_t batch) {
    auto ds = Dataset::range(120).map(
        [](Element e) -> Result<Element> {
          // Over the map's chunk target: chunks of one element.
          std::this_thread::sleep_for(std::chrono::microseconds(400));
          return Times(std::move(e), 3);
        },
        {.parallelism = 2, .name = "slow"});
    if (batch > 0) ds = ds.batch(batch);
    auto it = ds.iterator();
    EXPECT_TRUE(it.ok());
    std::vector<int64_t> got;
    for (;;) {
      auto e = it->next();
      EXPECT_TRUE(e.ok());
      if (!e.ok() || !*e) break;
      auto v = (**e)[0].flat<int64_t>();
      got.insert(got.end(), v.begin(), v.end());
    }
    EXPECT_EQ(got, Iota(0, 360, 3)) << "batch " << batch;
    for (const StageStats& s : it->stats().stages) {
      if (s.name == "slow") return s.buffer_capacity;
    }
    return int64_t{-1};
  };
  EXPECT_EQ(capacity_of_map(0), 4);  // 2 workers x 2 chunks of one
  EXPECT_EQ(capacity_of_map(3), 4);  // a batch smaller than that
  EXPECT_EQ(capacity_of_map(12), 12);
  EXPECT_EQ(capacity_of_map(32), 16);  // 8 per worker at most
}

TEST(BatchTest, MismatchedShapesNameTheElement) {
  auto ds = Dataset::range(4)
                .map([](Element e) -> Result<Element> {
                  std::vector<int64_t> v(static_cast<size_t>(e[0].scalar<int64_t>()) + 1, 1);
                  SLUICE_ASSIGN_OR_RETURN(Tensor t, Tensor::FromVector<int64_t>(v));
                  return Element({t});
                })
                .batch(2);
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
  SLUICE_EXPECT_ERROR(it.next().status(), StatusCode::kInvalidArgument,
                      "element 0 of the batch is int64[1] but element 1 is int64[2]");
}

TEST(RepeatTakeSkipTest, Conformance) {
  RunConformance({.name = "repeat",
                  .make = [](int) { return Dataset::range(4).repeat(3); },
                  .expected = Int64Elements({0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3})});
  RunConformance({.name = "take",
                  .make = [](int) { return Dataset::range(10).take(4); },
                  .expected = Int64Elements({0, 1, 2, 3})});
  RunConformance({.name = "skip",
                  .make = [](int) { return Dataset::range(10).skip(7); },
                  .expected = Int64Elements({7, 8, 9})});
  RunConformance({.name = "repeat forever then take",
                  .make =
                      [](int p) {
                        return Dataset::range(3)
                            .map([](Element e) { return e; }, {.parallelism = p})
                            .repeat()
                            .take(8);
                      },
                  .expected = Int64Elements({0, 1, 2, 0, 1, 2, 0, 1})});
  EXPECT_EQ(Dataset::range(3).repeat().cardinality(), kInfiniteCardinality);
  EXPECT_EQ(Dataset::range(3).repeat().take(5).cardinality(), 5);
  EXPECT_EQ(Dataset::range(3).skip(5).cardinality(), 0);
  EXPECT_EQ(ReadAll(Dataset::range(0).repeat()).size(), 0u);  // empty epochs end it
}

TEST(ChainTest, DeepChainSaveRestoreWithParallelStages) {
  RunConformance({.name = "map-batch-prefetch-repeat", .make = [](int p) {
                    return Dataset::range(30)
                        .map([](Element e) { return Times(std::move(e), 2); }, {.parallelism = p})
                        .prefetch(4)
                        .batch(4)
                        .map([](Element e) { return e; }, {.parallelism = p})
                        .repeat(2)
                        .prefetch(kAutotune);
                  }});
}

TEST(CancellationTest, SlowMapFunctionStopsQuickly) {
  std::atomic<int> calls{0};
  auto ds = Dataset::range(1000000).map(
      [&](Element e) {
        calls++;
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        return e;
      },
      {.parallelism = 8});
  auto t0 = std::chrono::steady_clock::now();
  {
    SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
    SLUICE_ASSERT_OK(it.next().status());
    t0 = std::chrono::steady_clock::now();
  }
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  // One in-flight call (30 ms) may finish; nothing queued behind it runs.
  EXPECT_LT(ms, 500);
  const int after = calls.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(calls.load(), after) << "work continued after the iterator was destroyed";
}

TEST(StatsTest, ReportsStagesAndJson) {
  auto ds = Dataset::range(1000)
                .map([](Element e) { return e; }, {.parallelism = 2, .name = "ident"})
                .batch(10)
                .prefetch(2);
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
  int n = 0;
  while (true) {
    SLUICE_ASSERT_OK_AND_ASSIGN(auto e, it.next());
    if (!e) break;
    ++n;
  }
  EXPECT_EQ(n, 100);
  IteratorStats st = it.stats();
  std::vector<std::string> names;
  for (const StageStats& s : st.stages) names.push_back(s.name);
  EXPECT_EQ(names, (std::vector<std::string>{"range", "ident", "batch", "prefetch"}));
  EXPECT_EQ(st.stages[1].elements, 1000);
  EXPECT_EQ(st.stages[2].elements, 100);
  EXPECT_EQ(st.stages[1].parallelism, 2);
  EXPECT_NE(st.ToJson().find("\"name\": \"ident\""), std::string::npos);
  testing::ScratchDir dir;
  SLUICE_ASSERT_OK(it.WriteTrace(dir.path() + "/trace.json"));
  EXPECT_NE(testing::ReadFileOrDie(dir.path() + "/trace.json").find("traceEvents"),
            std::string::npos);
}

TEST(RamBudgetTest, BuffersNeverExceedTheBudget) {
  // 64 KiB elements, a 1 MiB budget: prefetch(64) and map could want 8 MiB.
  auto ds = Dataset::range(300)
                .map(
                    [](Element) -> Result<Element> {
                      SLUICE_ASSIGN_OR_RETURN(Tensor t, Tensor::Zeros(DType::kUInt8, Shape{65536}));
                      return Element({t});
                    },
                    {.parallelism = 4})
                .prefetch(64)
                .with_options({.ram_budget = 1 << 20});
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
  int n = 0;
  while (true) {
    SLUICE_ASSERT_OK_AND_ASSIGN(auto e, it.next());
    if (!e) break;
    ++n;
    if (n % 50 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(n, 300);
  EXPECT_LE(it.stats().ram_peak, 1 << 20);
}

}  // namespace
}  // namespace sluice

namespace sluice {
namespace {

// Hostile iterator state: every truncation and every one-byte change of a
// real state (parallel map over a non-positional input, so buffered elements
// and counters are saved) restores with an error or yields a bounded stream;
// never a crash or a hang.
TEST(IteratorStateTest, CorruptStateIsRejectedOrHarmless) {
  auto make = [] {
    return Dataset::from_generator([] {
             return GeneratorFn([i = int64_t{0}]() mutable -> Result<std::optional<Element>> {
               if (i >= 20) return std::optional<Element>();
               return std::optional<Element>(Element({Tensor::Scalar<int64_t>(i++)}));
             });
           })
        .map([](Element e) { return e; }, {.parallelism = 2})
        .with_options({.seed = 1});
  };
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, make().iterator());
  for (int i = 0; i < 5; ++i) SLUICE_ASSERT_OK(it.next().status());
  SLUICE_ASSERT_OK_AND_ASSIGN(std::string state, it.save());
  auto try_state = [&](const std::string& s) {
    SLUICE_ASSERT_OK_AND_ASSIGN(Iterator fresh, make().iterator());
    if (!fresh.restore(s).ok()) return;
    for (int n = 0; n < 100; ++n) {
      auto e = fresh.next();
      if (!e.ok() || !e->has_value()) return;
    }
  };
  for (size_t len = 0; len < state.size(); ++len) try_state(state.substr(0, len));
  for (size_t i = 0; i < state.size(); ++i) {
    std::string s = state;
    s[i] = static_cast<char>(s[i] + 1);
    try_state(s);
  }
}

}  // namespace
}  // namespace sluice

namespace sluice {
namespace {

TEST(StatsTest, StageNamesAreUnique) {
  auto id = [](Element e) { return e; };
  auto ds = Dataset::range(3).map(id).map(id, {.name = "map_1"}).map(id).map(id);
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
  std::vector<std::string> names;
  for (const StageStats& s : it.stats().stages) names.push_back(s.name);
  EXPECT_EQ(names, (std::vector<std::string>{"range", "map", "map_1", "map_2", "map_3"}));
}

}  // namespace
}  // namespace sluice
