// sample_from_datasets and choose_from_datasets: conformance, tf.data's
// documented examples, exhaustion, bad arguments, restore under new weights,
// and random access (shard over a mixture equals the mixture).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <thread>

#include "conformance.h"
#include "sluice/pipeline/dataset.h"
#include "test_util.h"

namespace sluice {
namespace {

using testing::Int64Elements;
using testing::ReadAll;
using testing::RunConformance;

int64_t Value(const Element& e) { return e[0].scalar<int64_t>(); }

std::vector<int64_t> Values(const Dataset& ds, int64_t limit = -1) {
  auto it = ds.iterator();
  EXPECT_TRUE(it.ok()) << it.status();
  std::vector<int64_t> out;
  while (limit < 0 || static_cast<int64_t>(out.size()) < limit) {
    auto e = it->next();
    EXPECT_TRUE(e.ok()) << e.status();
    if (!e.ok() || !*e) break;
    out.push_back(Value(**e));
  }
  return out;
}

// Inputs range(100j, 100j + n_j), through a map with p workers.
std::vector<Dataset> Inputs(std::vector<int64_t> sizes, int p = 1) {
  std::vector<Dataset> out;
  for (size_t j = 0; j < sizes.size(); ++j) {
    Dataset d =
        Dataset::range(100 * static_cast<int64_t>(j), 100 * static_cast<int64_t>(j) + sizes[j]);
    if (p > 1) d = d.map([](Element e) { return e; }, {.parallelism = p});
    out.push_back(d);
  }
  return out;
}

// Each input's elements appear in its own order, and all of them.
void ExpectMergeOf(const std::vector<int64_t>& got, std::vector<int64_t> sizes) {
  std::map<int64_t, int64_t> next;  // input -> its next expected value
  for (int64_t v : got) {
    const int64_t j = v / 100;
    ASSERT_EQ(v, 100 * j + next[j]) << "out of order within input " << j;
    ++next[j];
  }
  for (size_t j = 0; j < sizes.size(); ++j) EXPECT_EQ(next[static_cast<int64_t>(j)], sizes[j]);
}

Dataset WeightsDataset(const std::vector<float>& flat, int64_t n) {
  auto t = Tensor::FromVector<float>(std::span<const float>(flat),
                                     Shape{static_cast<int64_t>(flat.size()) / n, n});
  EXPECT_TRUE(t.ok());
  return Dataset::from_tensor_slices({*t});
}

TEST(SampleFromDatasetsTest, Conformance) {
  RunConformance({.name = "sample_from_datasets",
                  .make =
                      [](int p) {
                        return Dataset::sample_from_datasets(Inputs({10, 12, 5}, p),
                                                             {0.5, 0.3, 0.2}, {.seed = 7});
                      },
                  .make_failing =
                      [] {
                        auto in = Inputs({10, 10});
                        in[1] = in[1].map(
                            [](Element e) -> Result<Element> {
                              if (Value(e) == 104) return Status::DataLoss("bad 104");
                              return e;
                            },
                            {.name = "bad_map"});
                        return Dataset::sample_from_datasets(in, {}, {.seed = 1});
                      },
                  .error_substring = "bad 104"});
  // Random-access inputs (a positional, random-access mixture), stopping
  // on the first empty input, and weights from a dataset.
  RunConformance(
      {.name = "sample_from_datasets random access", .make = [](int) {
         return Dataset::sample_from_datasets(Inputs({20, 3, 9}), {1, 2, 1}, {.seed = 3});
       }});
  RunConformance({.name = "sample_from_datasets stop_on_empty", .make = [](int p) {
                    return Dataset::sample_from_datasets(
                        Inputs({20, 4}, p), {}, {.seed = 5, .stop_on_empty_dataset = true});
                  }});
  RunConformance(
      {.name = "sample_from_datasets weights dataset", .make = [](int p) {
         return Dataset::sample_from_datasets(
             Inputs({30, 30}, p),
             WeightsDataset({1, 0, 0.5, 0.5, 0, 1, 0.2, 0.8, 0.9, 0.1, 1, 1}, 2).repeat(3),
             {.seed = 11});
       }});
}

TEST(SampleFromDatasetsTest, DocExampleMergesBothInOrder) {
  // tf.data: sample_from_datasets([range(0, 3), range(100, 103)], [0.5, 0.5]).
  auto ds = Dataset::sample_from_datasets(Inputs({3, 3}), {0.5, 0.5}, {.seed = 1});
  ASSERT_TRUE(ds.status().ok()) << ds.status();
  EXPECT_EQ(ds.cardinality(), 6);
  ExpectMergeOf(Values(ds), {3, 3});
}

TEST(SampleFromDatasetsTest, SameSeedSameOrderOtherSeedOther) {
  auto mix = [](uint64_t seed) {
    return Values(Dataset::sample_from_datasets(Inputs({50, 50, 50}), {}, {.seed = seed}));
  };
  EXPECT_EQ(mix(4), mix(4));
  EXPECT_NE(mix(4), mix(5));
  // The pipeline seed when the stage has none.
  auto piped = [](uint64_t seed) {
    return Values(Dataset::sample_from_datasets(Inputs({50, 50})).with_options({.seed = seed}));
  };
  EXPECT_EQ(piped(9), piped(9));
  EXPECT_NE(piped(9), piped(10));
}

TEST(SampleFromDatasetsTest, RerandomizeEachIteration) {
  auto epochs = [](bool rerandomize) {
    auto v =
        Values(Dataset::sample_from_datasets(Inputs({20, 20}), {},
                                             {.seed = 2, .rerandomize_each_iteration = rerandomize})
                   .repeat(2));
    return std::make_pair(std::vector<int64_t>(v.begin(), v.begin() + 40),
                          std::vector<int64_t>(v.begin() + 40, v.end()));
  };
  auto [a0, a1] = epochs(false);
  EXPECT_EQ(a0, a1);
  auto [b0, b1] = epochs(true);
  EXPECT_NE(b0, b1);
  ExpectMergeOf(b1, {20, 20});
}

TEST(SampleFromDatasetsTest, WeightsGiveTheProportions) {
  auto ds = Dataset::sample_from_datasets(
      {Dataset::range(0, 1).repeat(), Dataset::range(1, 2).repeat()}, {9, 1}, {.seed = 3});
  EXPECT_EQ(ds.cardinality(), kInfiniteCardinality);
  auto v = Values(ds, 20000);
  int64_t ones = 0;
  for (int64_t x : v) ones += x;
  EXPECT_NEAR(static_cast<double>(ones) / 20000, 0.1, 0.01);
}

TEST(SampleFromDatasetsTest, ExhaustedInputIsDroppedOrEnds) {
  // Default: every element of every input, the weights renormalized.
  auto all = Dataset::sample_from_datasets(Inputs({5, 40}), {0.9, 0.1}, {.seed = 8});
  EXPECT_EQ(all.cardinality(), 45);
  ExpectMergeOf(Values(all), {5, 40});
  // stop_on_empty_dataset: ends when input 0 (drawn most) is found empty.
  auto stop = Dataset::sample_from_datasets(Inputs({5, 40}), {0.9, 0.1},
                                            {.seed = 8, .stop_on_empty_dataset = true});
  EXPECT_EQ(stop.cardinality(), kUnknownCardinality);
  auto v = Values(stop);
  EXPECT_LT(v.size(), 45u);
  int64_t from0 = 0;
  for (int64_t x : v) from0 += x < 100 ? 1 : 0;
  EXPECT_EQ(from0, 5);
  // A weight of 0: never drawn; the mixture ends with the others.
  auto zero = Dataset::sample_from_datasets(Inputs({5, 7, 9}), {1, 0, 1}, {.seed = 1});
  EXPECT_EQ(zero.cardinality(), 14);
  for (int64_t x : Values(zero)) EXPECT_NE(x / 100, 1);
}

TEST(SampleFromDatasetsTest, Cardinality) {
  auto inf = [] { return Dataset::range(3).repeat(); };
  EXPECT_EQ(Dataset::sample_from_datasets({inf(), inf()}).cardinality(), kInfiniteCardinality);
  EXPECT_EQ(Dataset::sample_from_datasets({inf(), Dataset::range(3)}).cardinality(),
            kInfiniteCardinality);
  EXPECT_EQ(
      Dataset::sample_from_datasets({inf(), Dataset::range(3)}, {}, {.stop_on_empty_dataset = true})
          .cardinality(),
      kUnknownCardinality);
  auto filtered = Dataset::range(10).filter([](const Element&) -> Result<bool> { return true; });
  EXPECT_EQ(Dataset::sample_from_datasets({filtered, Dataset::range(3)}).cardinality(),
            kUnknownCardinality);
  EXPECT_EQ(Dataset::sample_from_datasets({Dataset::range(4), Dataset::range(3)}).cardinality(), 7);
}

TEST(SampleFromDatasetsTest, BadArguments) {
  auto expect_invalid = [](const Dataset& ds, const std::string& part) {
    EXPECT_EQ(ds.status().code(), StatusCode::kInvalidArgument) << ds.status();
    EXPECT_NE(ds.status().message().find(part), std::string::npos) << ds.status();
  };
  expect_invalid(Dataset::sample_from_datasets({}), "no datasets");
  expect_invalid(Dataset::sample_from_datasets(Inputs({3, 3}), {1}), "1 weights for 2");
  expect_invalid(Dataset::sample_from_datasets(Inputs({3, 3}), {1, -1}), "non-negative");
  expect_invalid(
      Dataset::sample_from_datasets(Inputs({3, 3}), {1, std::numeric_limits<double>::quiet_NaN()}),
      "finite");
  expect_invalid(Dataset::sample_from_datasets(Inputs({3, 3}), {0, 0}), "no positive weight");
  auto floats = Dataset::from_tensors(Element({Tensor::Scalar<float>(1.0f)}));
  expect_invalid(Dataset::sample_from_datasets({Dataset::range(3), Dataset::range(2), floats}),
                 "datasets[0]");
  expect_invalid(Dataset::sample_from_datasets({Dataset::range(3), Dataset::range(2), floats}),
                 "datasets[2]");
  expect_invalid(Dataset::sample_from_datasets(Inputs({3, 3}), Dataset::range(3)),
                 "float32 or float64 vector");
  // A bad weights element: the error at its draw.
  auto it =
      Dataset::sample_from_datasets(Inputs({3, 3}), WeightsDataset({1, 1, -1, 1}, 2)).iterator();
  ASSERT_TRUE(it.ok());
  ASSERT_TRUE(it->next().ok());
  auto e = it->next();
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(e.status().message().find("weights element 1"), std::string::npos) << e.status();
}

TEST(SampleFromDatasetsTest, WeightsDatasetDrivesEachDraw) {
  // One-hot weights: the draws follow them exactly; the end of the weights
  // ends the mixture.
  auto ds = Dataset::sample_from_datasets(Inputs({10, 10}),
                                          WeightsDataset({1, 0, 0, 1, 0, 1, 1, 0, 0, 2}, 2));
  EXPECT_EQ(Values(ds), (std::vector<int64_t>{0, 100, 101, 1, 102}));
}

// Reads k elements, saves, and restores the state into `other`.
std::pair<std::vector<int64_t>, std::vector<int64_t>> SaveThenRestoreInto(const Dataset& ds,
                                                                          int64_t k,
                                                                          const Dataset& other,
                                                                          int64_t rest) {
  auto it = ds.iterator();
  EXPECT_TRUE(it.ok());
  std::vector<int64_t> head;
  for (int64_t i = 0; i < k; ++i) head.push_back(Value(**it->next()));
  // Stages that read ahead (prefetch) fill their buffers: the state then
  // holds inputs past the consumer, and restore rewinds to it.
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  auto state = it->save();
  EXPECT_TRUE(state.ok()) << state.status();
  auto it2 = other.iterator();
  EXPECT_TRUE(it2.ok());
  Status s = it2->restore(*state);
  EXPECT_TRUE(s.ok()) << s;
  std::vector<int64_t> tail;
  for (int64_t i = 0; i < rest; ++i) {
    auto e = it2->next();
    EXPECT_TRUE(e.ok()) << e.status();
    if (!e.ok() || !*e) break;
    tail.push_back(Value(**e));
  }
  return {head, tail};
}

// Every input of the tail continues right after the head's last element.
void ExpectContinues(const std::vector<int64_t>& head, const std::vector<int64_t>& tail) {
  std::map<int64_t, int64_t> next;
  for (int64_t v : head) next[v / 100] = v % 100 + 1;
  for (int64_t v : tail) {
    ASSERT_EQ(v % 100, next[v / 100]) << "input " << v / 100 << " did not continue";
    ++next[v / 100];
  }
}

TEST(SampleFromDatasetsTest, RestoreUnderNewWeightsContinuesEveryInput) {
  auto mix = [](std::vector<double> w, bool prefetch) {
    auto ds = Dataset::sample_from_datasets(Inputs({90, 90, 90}), std::move(w), {.seed = 3});
    return prefetch ? ds.prefetch(8) : ds;
  };
  for (bool prefetch : {false, true}) {
    SCOPED_TRACE(prefetch ? "under prefetch (it rewinds)" : "alone");
    // Only input 2 from now on.
    auto [head, tail] =
        SaveThenRestoreInto(mix({1, 1, 1}, prefetch), 30, mix({0, 0, 1}, prefetch), 1000);
    ExpectContinues(head, tail);
    for (int64_t v : tail) EXPECT_EQ(v / 100, 2);
    // Input 2 ends, then (its weight gone) the mixture ends.
    int64_t from2 = 0;
    for (int64_t v : head) from2 += v / 100 == 2 ? 1 : 0;
    EXPECT_EQ(static_cast<int64_t>(tail.size()), 90 - from2);
    // Other weights, every input still continuing.
    auto [h2, t2] =
        SaveThenRestoreInto(mix({1, 1, 1}, prefetch), 40, mix({0.1, 0.3, 0.6}, prefetch), 1000);
    ExpectContinues(h2, t2);
    EXPECT_EQ(h2.size() + t2.size(), 270u);
    // The same weights: exactly the saved mixture's remaining elements.
    auto [h3, t3] =
        SaveThenRestoreInto(mix({2, 1, 1}, prefetch), 40, mix({2, 1, 1}, prefetch), 1000);
    auto whole = Values(mix({2, 1, 1}, prefetch));
    h3.insert(h3.end(), t3.begin(), t3.end());
    EXPECT_EQ(h3, whole);
  }
}

TEST(SampleFromDatasetsTest, StateOfAnotherInputCountIsAnError) {
  auto it = Dataset::sample_from_datasets(Inputs({5, 5}), {}, {.seed = 1}).iterator();
  ASSERT_TRUE(it->next().ok());
  auto state = it->save();
  ASSERT_TRUE(state.ok());
  auto other = Dataset::sample_from_datasets(Inputs({5, 5, 5}), {}, {.seed = 1}).iterator();
  Status s = other->restore(*state);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("of 2 datasets"), std::string::npos) << s;
}

TEST(SampleFromDatasetsTest, RandomAccessAndShardsEqualTheMixture) {
  auto ds = Dataset::sample_from_datasets(Inputs({40, 25, 31}), {0.5, 0.2, 0.3}, {.seed = 17});
  ASSERT_TRUE(ds.random_access());
  EXPECT_EQ(ds.cardinality(), 96);
  const auto whole = Values(ds);
  ExpectMergeOf(whole, {40, 25, 31});
  for (int64_t num : {1, 2, 3}) {
    SCOPED_TRACE(num);
    std::vector<std::vector<int64_t>> shards;
    for (int64_t idx = 0; idx < num; ++idx) shards.push_back(Values(ds.shard(num, idx)));
    std::vector<int64_t> joined;
    for (size_t i = 0; joined.size() < whole.size(); ++i) {
      const auto& s = shards[i % static_cast<size_t>(num)];
      ASSERT_LT(i / static_cast<size_t>(num), s.size());
      joined.push_back(s[i / static_cast<size_t>(num)]);
    }
    EXPECT_EQ(joined, whole);
  }
  // Random access (Get) agrees with reading: global_shuffle is a
  // permutation, and take/skip through the positional iterator.
  auto shuffled = Values(ds.global_shuffle({.seed = 1}));
  auto sorted_whole = whole;
  std::sort(shuffled.begin(), shuffled.end());
  std::sort(sorted_whole.begin(), sorted_whole.end());
  EXPECT_EQ(shuffled, sorted_whole);
  EXPECT_EQ(Values(ds.skip(50)), std::vector<int64_t>(whole.begin() + 50, whole.end()));
  // Not random access when stopping on an empty input.
  EXPECT_FALSE(Dataset::sample_from_datasets(Inputs({4, 4}), {}, {.stop_on_empty_dataset = true})
                   .random_access());
}

TEST(ChooseFromDatasetsTest, Conformance) {
  // tf.data's documented example: choices [0, 1, 2] x 3 over three
  // repeated inputs give foo, bar, baz, foo, bar, baz, ...
  auto words = [] {
    std::vector<Dataset> d;
    for (const char* w : {"foo", "bar", "baz"}) {
      d.push_back(Dataset::from_tensors(Element({Tensor::StringScalar(w)})).repeat());
    }
    return d;
  };
  std::vector<std::string> expected;
  for (int r = 0; r < 3; ++r) {
    for (const char* w : {"foo", "bar", "baz"}) {
      expected.push_back(Element({Tensor::StringScalar(w)}).DebugString(1000));
    }
  }
  RunConformance(
      {.name = "choose_from_datasets",
       .make =
           [&](int) { return Dataset::choose_from_datasets(words(), Dataset::range(3).repeat(3)); },
       .expected = expected});
  RunConformance(
      {.name = "choose_from_datasets parallel",
       .make =
           [](int p) {
             auto choice = Dataset::range(40).map(
                 [](Element e) { return Element({Tensor::Scalar<int64_t>(Value(e) * 7 % 3)}); },
                 {.parallelism = p});
             return Dataset::choose_from_datasets(Inputs({20, 20, 20}, p), choice);
           },
       .make_failing =
           [] {
             return Dataset::choose_from_datasets(Inputs({5, 5}), Dataset::range(3).repeat());
           },
       .error_substring = "choice 2 is 2, outside [0, 2)"});
}

TEST(ChooseFromDatasetsTest, DocExampleCardinalityAndOrder) {
  auto ds = Dataset::choose_from_datasets(
      {Dataset::range(0, 1).repeat(), Dataset::range(1, 2).repeat(), Dataset::range(2, 3).repeat()},
      Dataset::range(3).repeat(3));
  EXPECT_EQ(ds.cardinality(), 9);
  EXPECT_EQ(Values(ds), (std::vector<int64_t>{0, 1, 2, 0, 1, 2, 0, 1, 2}));
}

TEST(ChooseFromDatasetsTest, ExhaustedInput) {
  auto choices = [] {
    auto t = Tensor::FromVector<int64_t>(std::vector<int64_t>{0, 1, 0, 1, 0, 1, 1});
    return Dataset::from_tensor_slices({*t});
  };
  // Default: stops at the first choice of an exhausted input.
  auto stop = Dataset::choose_from_datasets(Inputs({2, 5}), choices());
  EXPECT_EQ(stop.cardinality(), kUnknownCardinality);
  EXPECT_EQ(Values(stop), (std::vector<int64_t>{0, 100, 1, 101}));
  // Otherwise its choices are skipped.
  auto skip =
      Dataset::choose_from_datasets(Inputs({2, 5}), choices(), {.stop_on_empty_dataset = false});
  EXPECT_EQ(Values(skip), (std::vector<int64_t>{0, 100, 1, 101, 102, 103}));
}

TEST(ChooseFromDatasetsTest, BadArguments) {
  auto c = Dataset::range(2);
  EXPECT_EQ(Dataset::choose_from_datasets({}, c).status().code(), StatusCode::kInvalidArgument);
  auto floats = Dataset::from_tensors(Element({Tensor::Scalar<float>(1.0f)}));
  auto bad_choice = Dataset::choose_from_datasets(Inputs({2, 2}), floats);
  EXPECT_EQ(bad_choice.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad_choice.status().message().find("int64 scalars"), std::string::npos);
  auto bad_spec = Dataset::choose_from_datasets({Dataset::range(2), floats}, c);
  EXPECT_NE(bad_spec.status().message().find("datasets[1]"), std::string::npos)
      << bad_spec.status();
  auto neg = Dataset::choose_from_datasets(
      Inputs({2, 2}),
      Dataset::from_tensor_slices({*Tensor::FromVector<int64_t>(std::vector<int64_t>{1, -3})}));
  auto it = neg.iterator();
  ASSERT_TRUE(it->next().ok());
  auto e = it->next();
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(e.status().message().find("choice 1 is -3"), std::string::npos) << e.status();
}

TEST(ChooseFromDatasetsTest, StateOfAnotherInputCountIsAnError) {
  auto it = Dataset::choose_from_datasets(Inputs({5, 5}), Dataset::range(2).repeat()).iterator();
  ASSERT_TRUE(it->next().ok());
  auto state = it->save();
  auto other =
      Dataset::choose_from_datasets(Inputs({5, 5, 5}), Dataset::range(2).repeat()).iterator();
  EXPECT_EQ(other->restore(*state).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice
