// filter, flat_map, interleave, shuffle, padded_batch, unbatch, zip,
// concatenate, enumerate, ignore_errors: conformance and tf.data semantics.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <set>
#include <thread>

#include "conformance.h"
#include "sluice/pipeline/dataset.h"
#include "test_util.h"

namespace sluice {
namespace {

using testing::Int64Elements;
using testing::ReadAll;
using testing::RunConformance;

std::vector<int64_t> Iota(int64_t a, int64_t b) {
  std::vector<int64_t> v;
  for (int64_t i = a; i < b; ++i) v.push_back(i);
  return v;
}

int64_t Value(const Element& e) { return e[0].scalar<int64_t>(); }

// range(n) through a map with `p` workers (exercises concurrency upstream).
Dataset ParallelRange(int64_t n, int p) {
  return Dataset::range(n).map([](Element e) { return e; }, {.parallelism = p});
}

std::vector<int64_t> ReadInts(const Dataset& ds) {
  std::vector<int64_t> out;
  Result<Iterator> it = ds.iterator();
  EXPECT_TRUE(it.ok()) << it.status().ToString();
  if (!it.ok()) return out;
  for (;;) {
    Result<std::optional<Element>> e = it->next();
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    if (!e.ok() || !e->has_value()) break;
    out.push_back(Value(**e));
  }
  return out;
}

// ---- filter ----------------------------------------------------------------

TEST(FilterTest, Conformance) {
  auto even = [](const Element& e) -> Result<bool> { return Value(e) % 2 == 0; };
  RunConformance(
      {.name = "filter",
       .make = [&](int p) { return ParallelRange(30, p).filter(even); },
       .expected = Int64Elements({0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28}),
       .make_failing =
           [] {
             return Dataset::range(10).filter(
                 [](const Element& e) -> Result<bool> {
                   if (Value(e) == 7) return Status::DataLoss("bad seven");
                   return true;
                 },
                 {.name = "keep"});
           },
       .error_substring = "stage 'keep' failed on element 7"});
  EXPECT_EQ(Dataset::range(10).filter(even).cardinality(), kUnknownCardinality);
  EXPECT_EQ(Dataset::range(0).filter(even).cardinality(), 0);
  EXPECT_EQ(Dataset::range(3).repeat().filter(even).cardinality(), kInfiniteCardinality);
  EXPECT_EQ(ReadAll(Dataset::range(5).filter([](const Element&) -> Result<bool> {
              return false;
            })).size(),
            0u);
}

// ---- flat_map ----------------------------------------------------------------

TEST(FlatMapTest, Conformance) {
  auto fn = [](const Element& e) -> Result<Dataset> { return Dataset::range(Value(e)); };
  RunConformance({.name = "flat_map",
                  .make = [&](int p) { return ParallelRange(5, p).flat_map(fn); },
                  .expected = Int64Elements({0, 0, 1, 0, 1, 2, 0, 1, 2, 3}),
                  .make_failing =
                      [] {
                        return Dataset::range(5).flat_map([](const Element& e) -> Result<Dataset> {
                          if (Value(e) == 3) return Status::NotFound("no file three");
                          return Dataset::range(2);
                        });
                      },
                  .error_substring = "stage 'flat_map' failed on element 3"});
  // Sub-datasets that are themselves parallel.
  RunConformance({.name = "flat_map over parallel maps",
                  .make =
                      [](int p) {
                        return Dataset::range(4).flat_map([p](const Element& e) -> Result<Dataset> {
                          return ParallelRange(Value(e) + 2, p).prefetch(2);
                        });
                      },
                  .expected = Int64Elements({0, 1, 0, 1, 2, 0, 1, 2, 3, 0, 1, 2, 3, 4})});
}

TEST(FlatMapTest, ReturnedDatasetErrorIsReported) {
  auto ds = Dataset::range(3).flat_map([](const Element&) -> Result<Dataset> {
    return Dataset::range(0, 5, 0);  // carries InvalidArgument
  });
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
  SLUICE_EXPECT_ERROR(it.next().status(), StatusCode::kInvalidArgument, "step must not be 0");
}

TEST(FlatMapTest, SubDatasetStagesShareOneEntryInStats) {
  // Every sub-dataset's map is the same stage: the stats list does not grow
  // with the number of sub-datasets opened.
  auto ds = Dataset::range(200).flat_map([](const Element& e) -> Result<Dataset> {
    return Dataset::range(Value(e) % 3 + 1).map([](Element x) { return x; }, {.name = "inner"});
  });
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
  int64_t n = 0;
  while (true) {
    SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<Element> e, it.next());
    if (!e) break;
    ++n;
  }
  const IteratorStats st = it.stats();
  int inner = 0;
  for (const StageStats& s : st.stages) inner += s.name.rfind("inner", 0) == 0;
  EXPECT_EQ(inner, 1);
  EXPECT_LE(st.stages.size(), 4u);
  for (const StageStats& s : st.stages) {
    if (s.name == "inner") {
      EXPECT_EQ(s.elements, n);
    }
  }
}

TEST(FlatMapTest, UnseededShufflesInsideRestoreExactly) {
  // Shuffles without their own seed inside the sub-datasets take their seed
  // from their place in the graph and the saved iteration, so a restored
  // iterator shuffles the later sub-datasets exactly as the original does.
  // Over a repeat, so later epochs (reshuffled) are covered too.
  auto ds = Dataset::range(4)
                .flat_map([](const Element& e) -> Result<Dataset> {
                  return Dataset::range(Value(e) * 10, Value(e) * 10 + 8).shuffle(4);
                })
                .repeat(2)
                .with_options({.seed = 3});
  for (size_t k : {0u, 5u, 13u, 30u, 40u}) {
    SLUICE_ASSERT_OK_AND_ASSIGN(Iterator a, ds.iterator());
    for (size_t i = 0; i < k; ++i) ASSERT_TRUE(a.next().ok());
    SLUICE_ASSERT_OK_AND_ASSIGN(std::string state, a.save());
    SLUICE_ASSERT_OK_AND_ASSIGN(Iterator b, ds.iterator());
    SLUICE_ASSERT_OK(b.restore(state));
    for (size_t i = k; i < 64; ++i) {
      SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<Element> x, a.next());
      SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<Element> y, b.next());
      ASSERT_TRUE(x.has_value() && y.has_value()) << i;
      EXPECT_EQ(Value(*y), Value(*x)) << "restored at " << k << ", element " << i;
    }
    SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<Element> end, b.next());
    EXPECT_FALSE(end.has_value());
  }
}

// ---- interleave ----------------------------------------------------------------

TEST(InterleaveTest, TfDocsExample) {
  // Dataset.range(1, 6).interleave(lambda x: Dataset.from_tensors(x).repeat(6),
  //                                cycle_length=2, block_length=4)
  const std::vector<int64_t> want = {1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3,
                                     3, 4, 4, 4, 4, 3, 3, 4, 4, 5, 5, 5, 5, 5, 5};
  for (int64_t p : std::vector<int64_t>{1, 2, 4, kAutotune}) {
    auto ds = Dataset::range(1, 6).interleave(
        [](const Element& e) -> Result<Dataset> {
          return Dataset::from_tensors(Element({e[0]})).repeat(6);
        },
        {.cycle_length = 2, .block_length = 4, .parallelism = p});
    EXPECT_EQ(ReadInts(ds), want) << "parallelism " << p;
  }
}

TEST(InterleaveTest, CycleTwoBlockTwo) {
  auto ds = Dataset::range(3).interleave(
      [](const Element& e) -> Result<Dataset> {
        return Dataset::from_tensors(Element({e[0]})).repeat(3);
      },
      {.cycle_length = 2, .block_length = 2});
  EXPECT_EQ(ReadInts(ds), (std::vector<int64_t>{0, 0, 1, 1, 0, 1, 2, 2, 2}));
}

// tf.data's interleave order, computed here on plain vectors: slot k of
// `cycle` takes `block` elements in turn; an ended slot is closed and passed
// over, and refilled from the next input when the cycle comes back to it.
std::vector<int64_t> ReferenceInterleave(const std::vector<std::vector<int64_t>>& inputs,
                                         size_t cycle, int64_t block) {
  std::vector<std::optional<std::vector<int64_t>>> slots(cycle);
  std::vector<size_t> pos(cycle, 0);
  std::vector<int64_t> out;
  size_t next = 0, k = 0;
  int64_t taken = 0;
  auto next_slot = [&] {
    k = (k + 1) % cycle;
    taken = 0;
  };
  for (;;) {
    const bool open = std::any_of(slots.begin(), slots.end(), [](const auto& s) { return s; });
    if (next == inputs.size() && !open) return out;
    if (!slots[k]) {
      if (next == inputs.size()) {
        next_slot();
      } else {
        slots[k] = inputs[next++];
        pos[k] = 0;
      }
    } else if (pos[k] == slots[k]->size()) {
      slots[k].reset();
      next_slot();
    } else {
      out.push_back((*slots[k])[pos[k]++]);
      if (++taken == block) next_slot();
    }
  }
}

// The split of interleave into cycle, read-ahead and iterator keeps the
// order exact: every cycle/block/parallelism gives the reference order,
// with empty inputs, inputs ending mid-block and slow reads racing the
// consumer, also when restored half-way into a fresh iterator.
TEST(InterleaveTest, EveryParallelismGivesTheReferenceOrder) {
  std::vector<std::vector<int64_t>> inputs;
  for (int64_t x = 0; x < 9; ++x) inputs.push_back(Iota(x * 100, x * 100 + (x * 5) % 7));
  for (int64_t cycle = 1; cycle <= 4; ++cycle) {
    for (int64_t block = 1; block <= 3; ++block) {
      const std::vector<int64_t> want =
          ReferenceInterleave(inputs, static_cast<size_t>(cycle), block);
      for (int64_t p : {1, 2, 4}) {
        const Dataset ds = Dataset::range(9).interleave(
            [](const Element& e) -> Result<Dataset> {
              const int64_t x = Value(e);
              Dataset d = Dataset::range(x * 100, x * 100 + (x * 5) % 7);
              if (x % 2 == 0) return d;
              return d.map([](Element v) {  // slow: the consumer overtakes read-ahead
                std::this_thread::sleep_for(std::chrono::microseconds(300));
                return v;
              });
            },
            {.cycle_length = cycle, .block_length = block, .parallelism = p});
        const std::string what = "cycle " + std::to_string(cycle) + " block " +
                                 std::to_string(block) + " parallelism " + std::to_string(p);
        EXPECT_EQ(ReadInts(ds), want) << what;

        SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
        std::vector<int64_t> got;
        for (size_t i = 0; i < want.size() / 2; ++i) {
          SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<Element> e, it.next());
          ASSERT_TRUE(e.has_value()) << what;
          got.push_back(Value(*e));
        }
        SLUICE_ASSERT_OK_AND_ASSIGN(std::string state, it.save());
        SLUICE_ASSERT_OK_AND_ASSIGN(Iterator restored, ds.iterator());
        SLUICE_ASSERT_OK(restored.restore(state));
        for (;;) {
          SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<Element> e, restored.next());
          if (!e) break;
          got.push_back(Value(*e));
        }
        EXPECT_EQ(got, want) << what << ", restored after " << want.size() / 2;
      }
    }
  }
}

TEST(InterleaveTest, Conformance) {
  // Sub-datasets of different lengths so slots end and refill at various points.
  auto make = [](int p, int64_t cycle, int64_t block) {
    return ParallelRange(7, p).interleave(
        [](const Element& e) -> Result<Dataset> {
          const int64_t x = Value(e);
          return Dataset::range(x * 100, x * 100 + (x % 4) + 1);
        },
        {.cycle_length = cycle, .block_length = block, .parallelism = p});
  };
  for (int64_t cycle : {1, 3}) {
    for (int64_t block : {1, 2}) {
      RunConformance(
          {.name = "interleave cycle " + std::to_string(cycle) + " block " + std::to_string(block),
           .make = [=](int p) { return make(p, cycle, block); }});
    }
  }
  RunConformance({.name = "interleave exact",
                  .make = [&](int p) { return make(p, 3, 2); },
                  .expected = Int64Elements({0, 100, 101, 200, 201, 300, 301, 202, 302, 303, 400,
                                             500, 501, 600, 601, 602})});
  RunConformance({.name = "interleave failing",
                  .make = [&](int p) { return make(p, 2, 1); },
                  .make_failing =
                      [] {
                        return Dataset::range(6).interleave(
                            [](const Element& e) -> Result<Dataset> {
                              if (Value(e) == 4) return Status::NotFound("missing shard 4");
                              return Dataset::range(3);
                            },
                            {.cycle_length = 2, .parallelism = 3, .name = "files"});
                      },
                  .error_substring = "stage 'files' failed on element 4"});
}

TEST(InterleaveTest, NestedParallelStagesDoNotDeadlock) {
  // Sub-datasets are parallel maps with prefetch; cpu budgets down to 1.
  RunConformance({.name = "interleave of parallel maps",
                  .make =
                      [](int p) {
                        return ParallelRange(6, p).interleave(
                            [p](const Element& e) -> Result<Dataset> {
                              const int64_t x = Value(e);
                              return ParallelRange(10, p)
                                  .map(
                                      [x](Element v) {
                                        return Element(
                                            {Tensor::Scalar<int64_t>(x * 100 + Value(v))});
                                      },
                                      {.parallelism = p})
                                  .prefetch(3);
                            },
                            {.cycle_length = 3, .block_length = 2, .parallelism = p});
                      },
                  .max_save_positions = 16});
}

// An outer prefetch whose consumer helps (holding its input lock) into
// interleave, which destroys finished sub-iterators that have queued workers
// of their own, with cpu budgets down to 1: nothing may wait for a task that
// needs a free thread to start.
TEST(InterleaveTest, PrefetchOverInterleaveOfPrefetches) {
  RunConformance({.name = "prefetch over interleave of prefetches",
                  .make =
                      [](int p) {
                        return ParallelRange(6, p)
                            .interleave(
                                [p](const Element& e) -> Result<Dataset> {
                                  return ParallelRange(Value(e) + 10, p).prefetch(3);
                                },
                                {.cycle_length = 3, .block_length = 2, .parallelism = p})
                            .prefetch(2);
                      },
                  .max_save_positions = 16});
}

TEST(InterleaveTest, NonDeterministicIsAPermutation) {
  auto make = [](int64_t p) {
    return Dataset::range(8).interleave(
        [](const Element& e) -> Result<Dataset> {
          const int64_t x = Value(e);
          return Dataset::range(x * 10, x * 10 + 5);
        },
        {.cycle_length = 4, .parallelism = p, .deterministic = false});
  };
  RunConformance({.name = "interleave nondeterministic",
                  .make = [&](int) { return make(4); },
                  .expected = ReadAll(make(1)),
                  .ordered = false});
}

TEST(InterleaveTest, AutotuneCycleLengthIsAConstantNotTheCpuBudget) {
  // kAutotune is kAutotuneCycleLength whatever the CPU budget (the order
  // must not depend on the machine): 20 inputs, 16 open at once.
  static_assert(kAutotuneCycleLength == 16);
  const auto make = [](int cpu_budget) {
    return Dataset::range(20)
        .interleave([](const Element& e) -> Result<Dataset> {
          return Dataset::from_tensors(Element({e[0]})).repeat(2);
        })
        .with_options({.cpu_budget = cpu_budget});
  };
  std::vector<int64_t> want;
  for (int64_t round = 0; round < 2; ++round) {
    for (int64_t i = 0; i < 16; ++i) want.push_back(i);
  }
  for (int64_t round = 0; round < 2; ++round) {
    for (int64_t i = 16; i < 20; ++i) want.push_back(i);
  }
  // Budgets up to 8: a budget raises the process's TBB worker limit for
  // good (EnsureWorkers), and later tests would share the cores with that
  // many spinning workers.
  for (int budget : {1, 2, 3, 8}) EXPECT_EQ(ReadInts(make(budget)), want) << budget;
  EXPECT_EQ(Dataset::range(3).interleave(nullptr).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Dataset::range(3)
                .interleave([](const Element&) -> Result<Dataset> { return Dataset::range(1); },
                            {.block_length = 0})
                .status()
                .code(),
            StatusCode::kInvalidArgument);
}

TEST(InterleaveTest, AutotuneParallelismIsTunedWithinTheCycle) {
  auto ds = Dataset::range(8)
                .interleave(
                    [](const Element& e) -> Result<Dataset> {
                      return Dataset::from_tensors(Element({e[0]})).repeat(50);
                    },
                    {.cycle_length = 4, .parallelism = kAutotune, .name = "files"})
                .with_options({.cpu_budget = 2});
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
  std::vector<int64_t> got;
  for (;;) {
    SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<Element> e, it.next());
    if (!e) break;
    got.push_back(Value(*e));
  }
  ASSERT_EQ(got.size(), 400u);
  EXPECT_EQ(std::vector<int64_t>(got.begin(), got.begin() + 4), (std::vector<int64_t>{0, 1, 2, 3}));
  for (const StageStats& s : it.stats().stages) {
    if (s.name != "files") continue;
    EXPECT_TRUE(s.autotuned);
    EXPECT_GE(s.parallelism, 1);
    EXPECT_LE(s.parallelism, 4);  // never more tasks than open datasets
  }
}

// ---- shuffle ----------------------------------------------------------------

TEST(ShuffleTest, Conformance) {
  RunConformance({.name = "shuffle", .make = [](int p) {
                    return ParallelRange(100, p).shuffle(
                        10, {.seed = 5, .reshuffle_each_iteration = false});
                  }});
  RunConformance({.name = "shuffle pipeline seed", .make = [](int p) {
                    return ParallelRange(50, p).shuffle(1000, {.reshuffle_each_iteration = false});
                  }});
  RunConformance({.name = "shuffle reshuffled",
                  .make = [](int p) { return ParallelRange(60, p).shuffle(16); },
                  .expected = Int64Elements(Iota(0, 60)),
                  .ordered = false});
  EXPECT_EQ(Dataset::range(10).shuffle(0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Dataset::range(10).shuffle(3).cardinality(), 10);
}

TEST(ShuffleTest, PermutationThatDependsOnTheSeed) {
  auto make = [](uint64_t seed) {
    return Dataset::range(1000).shuffle(200, {.seed = seed, .reshuffle_each_iteration = false});
  };
  std::vector<int64_t> a = ReadInts(make(1));
  std::vector<int64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, Iota(0, 1000));
  EXPECT_NE(a, Iota(0, 1000));
  EXPECT_NE(ReadInts(make(2)), a);
  EXPECT_EQ(ReadInts(make(1)), a);
  // A buffer of 1 keeps the order; a full buffer can move the last element first.
  EXPECT_EQ(ReadInts(Dataset::range(20).shuffle(1, {.seed = 3})), Iota(0, 20));
  std::set<int64_t> firsts;
  for (uint64_t s = 0; s < 64; ++s) {
    firsts.insert(ReadInts(Dataset::range(10).shuffle(10, {.seed = s})).front());
  }
  EXPECT_GE(firsts.size(), 8u);
}

TEST(ShuffleTest, ReshuffleEachIteration) {
  auto epochs = [](bool reshuffle) {
    auto v = ReadInts(Dataset::range(100)
                          .shuffle(100, {.seed = 9, .reshuffle_each_iteration = reshuffle})
                          .repeat(2));
    EXPECT_EQ(v.size(), 200u);
    return std::make_pair(std::vector<int64_t>(v.begin(), v.begin() + 100),
                          std::vector<int64_t>(v.begin() + 100, v.end()));
  };
  auto [a1, a2] = epochs(true);
  EXPECT_NE(a1, a2);
  auto [b1, b2] = epochs(false);
  EXPECT_EQ(b1, b2);
  // Each iterator() of the same dataset is a new iteration too.
  auto ds = Dataset::range(100).shuffle(100, {.seed = 9});
  EXPECT_NE(ReadInts(ds), ReadInts(ds));
  auto fixed = Dataset::range(100).shuffle(100, {.seed = 9, .reshuffle_each_iteration = false});
  EXPECT_EQ(ReadInts(fixed), ReadInts(fixed));
}

TEST(ShuffleTest, RamBudgetIsAHardLimit) {
  auto ds = Dataset::range(100)
                .map([](Element) -> Result<Element> {
                  SLUICE_ASSIGN_OR_RETURN(Tensor t, Tensor::Zeros(DType::kUInt8, Shape{65536}));
                  return Element({t});
                })
                .shuffle(50, {.seed = 1, .name = "big_shuffle"})
                .with_options({.ram_budget = 1 << 20});
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
  Result<std::optional<Element>> e = it.next();
  SLUICE_EXPECT_ERROR(e.status(), StatusCode::kResourceExhausted, "stage 'big_shuffle'");
  EXPECT_NE(e.status().message().find("buffer_size 50"), std::string_view::npos);
  EXPECT_NE(e.status().message().find("1048576"), std::string_view::npos);
  EXPECT_LE(it.stats().ram_peak, 1 << 20);
  // A buffer that fits works.
  auto ok = Dataset::range(100)
                .map([](Element) -> Result<Element> {
                  SLUICE_ASSIGN_OR_RETURN(Tensor t, Tensor::Zeros(DType::kUInt8, Shape{65536}));
                  return Element({t});
                })
                .shuffle(8, {.seed = 1})
                .with_options({.ram_budget = 1 << 20});
  EXPECT_EQ(ReadAll(ok).size(), 100u);
}

// ---- padded_batch ----------------------------------------------------------------

// Element x: an int64 vector of x copies of x.
Dataset Ragged(int64_t a, int64_t b) {
  return Dataset::range(a, b).map([](Element e) -> Result<Element> {
    const int64_t x = Value(e);
    SLUICE_ASSIGN_OR_RETURN(Tensor t,
                            Tensor::FromVector<int64_t>(std::vector<int64_t>(size_t(x), x)));
    return Element({t});
  });
}

TEST(PaddedBatchTest, PadsToTheLongest) {
  auto v = ReadAll(Ragged(1, 6).padded_batch(2));
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0], "(int64[2,2] {1, 0, 2, 2})");
  EXPECT_EQ(v[1], "(int64[2,4] {3, 3, 3, 0, 4, 4, 4, 4})");
  EXPECT_EQ(v[2], "(int64[1,5] {5, 5, 5, 5, 5})");
  RunConformance(
      {.name = "padded_batch", .make = [](int p) {
         return Ragged(0, 9).map([](Element e) { return e; }, {.parallelism = p}).padded_batch(3);
       }});
}

TEST(PaddedBatchTest, PaddedShapesAndValues) {
  auto ds = Ragged(1, 4).padded_batch(2, {.padded_shapes = {Shape{4}},
                                          .padding_values = {Tensor::Scalar<int64_t>(-1)},
                                          .drop_remainder = true});
  SLUICE_ASSERT_OK(ds.status());
  auto v = ReadAll(ds);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0], "(int64[2,4] {1, -1, -1, -1, 2, 2, -1, -1})");
  // Multi-dimensional rows and unknown padded dims.
  auto grid = Dataset::range(1, 3).map([](Element e) -> Result<Element> {
    const int64_t x = Value(e);
    std::vector<float> vals(size_t(x * 2), float(x));
    SLUICE_ASSIGN_OR_RETURN(Tensor t, Tensor::FromVector<float>(vals, Shape{x, 2}));
    return Element({t}, {"g"});
  });
  auto g = ReadAll(grid.padded_batch(2, {.padded_shapes = {Shape{3, Shape::kUnknownDim}}}));
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0], "(g: float32[2,3,2] {1, 1, 0, 0, 0, 0, 2, 2, 2, 2, 0, 0})");
}

TEST(PaddedBatchTest, Strings) {
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor words, Tensor::FromStrings({"a", "bb", "ccc"}));
  auto ds = Dataset::from_tensor_slices({words}).map([](Element e) -> Result<Element> {
    std::string_view w = e[0].scalar<std::string_view>();
    std::vector<std::string> parts(w.size(), std::string(w));
    SLUICE_ASSIGN_OR_RETURN(Tensor t, Tensor::FromStrings(parts));
    return Element({t});
  });
  auto v = ReadAll(ds.padded_batch(2));
  ASSERT_EQ(v.size(), 2u);
  auto padded = ReadAll(ds.padded_batch(3, {.padding_values = {Tensor::StringScalar("-")}}));
  ASSERT_EQ(padded.size(), 1u);
  EXPECT_NE(padded[0].find("string[3,3]"), std::string::npos) << padded[0];
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.padded_batch(3).iterator());
  SLUICE_ASSERT_OK_AND_ASSIGN(auto b, it.next());
  ASSERT_TRUE(b.has_value());
  auto flat = (*b)[0].flat<std::string_view>();
  EXPECT_EQ(std::vector<std::string>(flat.begin(), flat.end()),
            (std::vector<std::string>{"a", "", "", "bb", "bb", "", "ccc", "ccc", "ccc"}));
}

TEST(PaddedBatchTest, Errors) {
  // Run time: an element longer than a fixed padded dim, named.
  auto ds = Ragged(1, 6).padded_batch(2, {.padded_shapes = {Shape{3}}});
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
  SLUICE_ASSERT_OK(it.next().status());
  SLUICE_EXPECT_ERROR(it.next().status(), StatusCode::kInvalidArgument,
                      "element 1 of the batch is int64[4], larger than its padded shape [3]");
  // Build time, with a known spec: count, rank, dtype of the padding value.
  auto known = Dataset::range(4).batch(2);
  EXPECT_EQ(known.padded_batch(2, {.padded_shapes = {Shape{2}, Shape{2}}}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(known.padded_batch(2, {.padded_shapes = {Shape{2, 2}}}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(known.padded_batch(2, {.padding_values = {Tensor::Scalar<float>(0)}}).status().code(),
            StatusCode::kInvalidArgument);
  auto ok = known.padded_batch(3, {.padded_shapes = {Shape{5}}, .drop_remainder = true});
  SLUICE_ASSERT_OK(ok.status());
  EXPECT_EQ(ok.element_spec().DebugString(), "(int64[3,5])");
  EXPECT_EQ(Dataset::range(3).padded_batch(0).status().code(), StatusCode::kInvalidArgument);
}

// ---- unbatch ----------------------------------------------------------------

TEST(UnbatchTest, Conformance) {
  RunConformance({.name = "unbatch",
                  .make = [](int p) { return ParallelRange(10, p).batch(4).unbatch(); },
                  .expected = Int64Elements(Iota(0, 10))});
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor a, Tensor::FromVector<int64_t>({1, 2, 3, 4, 5, 6}));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor m, a.Reshape(Shape{3, 2}));
  auto ds = Dataset::from_tensors(Element({m, a.Slice(0, 3).value()}, {"m", "v"})).unbatch();
  EXPECT_EQ(ds.element_spec().DebugString(), "(m: int64[2], v: int64[])");
  EXPECT_EQ(ds.cardinality(), 3);
  EXPECT_EQ(ReadAll(ds), (std::vector<std::string>{"(m: int64[2] {1, 2}, v: int64[] {1})",
                                                   "(m: int64[2] {3, 4}, v: int64[] {2})",
                                                   "(m: int64[2] {5, 6}, v: int64[] {3})"}));
}

TEST(UnbatchTest, Errors) {
  SLUICE_EXPECT_ERROR(Dataset::range(3).unbatch().status(), StatusCode::kInvalidArgument, "scalar");
  auto mismatched = Dataset::range(2).map([](Element) -> Result<Element> {
    SLUICE_ASSIGN_OR_RETURN(Tensor a, Tensor::FromVector<int64_t>({1, 2, 3}));
    SLUICE_ASSIGN_OR_RETURN(Tensor b, Tensor::FromVector<int64_t>({1, 2}));
    return Element({a, b});
  });
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, mismatched.unbatch().iterator());
  SLUICE_EXPECT_ERROR(it.next().status(), StatusCode::kInvalidArgument, "int64[3] and int64[2]");
}

// ---- zip, concatenate, enumerate ------------------------------------------------

TEST(ZipTest, Conformance) {
  RunConformance({.name = "zip", .make = [](int p) {
                    return Dataset::zip({ParallelRange(5, p), Dataset::range(10, 20)});
                  }});
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor x, Tensor::FromVector<float>({0.5f, 1.5f}));
  auto ds = Dataset::zip({Dataset::from_tensor_slices({x}, {"x"}), Dataset::range(7)});
  EXPECT_EQ(ds.cardinality(), 2);
  EXPECT_EQ(ds.element_spec().DebugString(), "(x: float32[], int64[])");
  EXPECT_EQ(ReadAll(ds), (std::vector<std::string>{"(x: float32[] {0.5}, int64[] {0})",
                                                   "(x: float32[] {1.5}, int64[] {1})"}));
  EXPECT_EQ(Dataset::zip({Dataset::range(3).repeat(), Dataset::range(4)}).cardinality(), 4);
  EXPECT_EQ(Dataset::zip({}).status().code(), StatusCode::kInvalidArgument);
}

TEST(ConcatenateTest, Conformance) {
  RunConformance(
      {.name = "concatenate",
       .make = [](int p) { return ParallelRange(3, p).concatenate(ParallelRange(4, p).skip(2)); },
       .expected = Int64Elements({0, 1, 2, 2, 3})});
  EXPECT_EQ(Dataset::range(3).concatenate(Dataset::range(4)).cardinality(), 7);
  EXPECT_EQ(Dataset::range(3).repeat().concatenate(Dataset::range(4)).cardinality(),
            kInfiniteCardinality);
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor f, Tensor::FromVector<float>({1.0f}));
  SLUICE_EXPECT_ERROR(Dataset::range(3).concatenate(Dataset::from_tensor_slices({f})).status(),
                      StatusCode::kInvalidArgument, "concatenate");
  // Specs merge to the most specific compatible one.
  auto b = Dataset::range(5)
               .batch(2, {.drop_remainder = true})
               .concatenate(Dataset::range(3).batch(3, {.drop_remainder = true}));
  EXPECT_EQ(b.element_spec().DebugString(), "(int64[?])");
}

TEST(EnumerateTest, Conformance) {
  RunConformance(
      {.name = "enumerate", .make = [](int p) { return ParallelRange(6, p).enumerate(10); }});
  auto ds = Dataset::range(100, 103).enumerate();
  EXPECT_EQ(ds.element_spec().DebugString(), "(index: int64[], int64[])");
  EXPECT_EQ(ds.cardinality(), 3);
  EXPECT_EQ(ReadAll(ds), (std::vector<std::string>{"(index: int64[] {0}, int64[] {100})",
                                                   "(index: int64[] {1}, int64[] {101})",
                                                   "(index: int64[] {2}, int64[] {102})"}));
}

// ---- ignore_errors ----------------------------------------------------------------

Dataset FailOn(std::set<int64_t> bad, int p = 1) {
  return Dataset::range(10).map(
      [bad](Element e) -> Result<Element> {
        if (bad.count(Value(e))) return Status::DataLoss("corrupt record");
        return e;
      },
      {.parallelism = p, .name = "parse"});
}

TEST(IgnoreErrorsTest, SkipsAndCounts) {
  RunConformance({.name = "ignore_errors",
                  .make =
                      [](int p) {
                        return FailOn({3, 7}, p).ignore_errors();
                      },
                  .expected = Int64Elements({0, 1, 2, 4, 5, 6, 8, 9})});
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, FailOn({0, 3, 9}).ignore_errors().iterator());
  int n = 0;
  for (;;) {
    SLUICE_ASSERT_OK_AND_ASSIGN(auto e, it.next());
    if (!e) break;
    ++n;
  }
  EXPECT_EQ(n, 7);
  IteratorStats st = it.stats();
  int64_t ignored = -1;
  for (const StageStats& s : st.stages) {
    if (s.kind == "ignore_errors") ignored = s.errors_ignored;
  }
  EXPECT_EQ(ignored, 3);
}

TEST(IgnoreErrorsTest, AnInputThatAlwaysFailsEnds) {
  auto ds = Dataset::from_generator([] {
              return GeneratorFn([]() -> Result<std::optional<Element>> {
                return Status::Unavailable("disk gone");
              });
            }).ignore_errors();
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
  Result<std::optional<Element>> e = it.next();
  SLUICE_EXPECT_ERROR(e.status(), StatusCode::kUnavailable, "disk gone");
  EXPECT_NE(e.status().message().find("1000 times in a row"), std::string_view::npos)
      << e.status().ToString();
}

// ---- the tutorial chain ----------------------------------------------------------------

TEST(TutorialTest, MnistLikeChain) {
  // from_tensor_slices((images, labels)).map(normalize, AUTOTUNE)
  //     .shuffle(1000, seed).batch(32)
  const int64_t n = 300;
  std::vector<uint8_t> pixels(static_cast<size_t>(n * 28 * 28));
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = uint8_t(i * 31 % 251);
  std::vector<int64_t> labels(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) labels[size_t(i)] = i;
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor images, Tensor::FromVector<uint8_t>(pixels, Shape{n, 28, 28}));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor label_t, Tensor::FromVector<int64_t>(labels));
  auto make = [&](uint64_t seed) {
    return Dataset::from_tensor_slices({images, label_t}, {"image", "label"})
        .map(
            [](Element e) -> Result<Element> {
              SLUICE_ASSIGN_OR_RETURN(Tensor img, e.get("image"));
              SLUICE_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(DType::kFloat32, img.shape()));
              auto src = img.flat<uint8_t>();
              auto dst = out.flat<float>();
              for (size_t i = 0; i < src.size(); ++i) dst[i] = float(src[i]) / 255.0f;
              return Element({out, *e.get("label")}, {"image", "label"});
            },
            {.parallelism = kAutotune})
        .shuffle(1000, {.seed = seed})
        .batch(32);
  };
  auto ds = make(42);
  SLUICE_ASSERT_OK(ds.status());
  EXPECT_EQ(ds.cardinality(), 10);
  std::vector<int64_t> seen;
  int batches = 0;
  for (const Element& b : ds) {
    ++batches;
    EXPECT_EQ(b.get("image")->shape().dim(1), 28);
    for (int64_t l : b.get("label")->flat<int64_t>()) seen.push_back(l);
  }
  EXPECT_EQ(batches, 10);
  std::vector<int64_t> sorted = seen;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, labels);
  EXPECT_NE(seen, labels);
  // Reproducible: the same seed gives the same first epoch.
  EXPECT_EQ(ReadAll(make(42)), ReadAll(make(42)));
  EXPECT_NE(ReadAll(make(42)), ReadAll(make(43)));
}

}  // namespace
}  // namespace sluice
