#include "conformance.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>

#include "sanitizer_slowdown.h"
#include "slow_calls.h"
#include "test_util.h"

namespace sluice::testing {
namespace {

constexpr uint64_t kSeed = 1234;

Dataset Seeded(const Dataset& ds, int cpu_budget = 0, int max_threads = 0) {
  Options o;
  o.seed = kSeed;
  if (cpu_budget > 0) o.cpu_budget = cpu_budget;
  if (max_threads > 0) o.max_threads = max_threads;
  return ds.with_options(o);
}

std::vector<std::string> ReadN(Iterator& it, int n, bool* ended) {
  std::vector<std::string> out;
  *ended = false;
  while (n < 0 || static_cast<int>(out.size()) < n) {
    Result<std::optional<Element>> e = it.next();
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    if (!e.ok() || !e->has_value()) {
      *ended = true;
      break;
    }
    out.push_back((*e)->DebugString(1000));
  }
  return out;
}

std::vector<std::string> Sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

std::vector<std::string> ReadAll(const Dataset& ds) {
  Result<Iterator> it = ds.iterator();
  EXPECT_TRUE(it.ok()) << it.status().ToString();
  if (!it.ok()) return {};
  bool ended;
  return ReadN(*it, -1, &ended);
}

std::vector<std::string> Int64Elements(const std::vector<int64_t>& values) {
  std::vector<std::string> out;
  for (int64_t v : values) out.push_back(Element({Tensor::Scalar<int64_t>(v)}).DebugString(1000));
  return out;
}

void RunConformance(const ConformanceCase& c) {
  SCOPED_TRACE("conformance case " + c.name);
  const Dataset base = Seeded(c.make(1));
  ASSERT_TRUE(base.status().ok()) << base.status().ToString();
  const std::vector<std::string> got = ReadAll(base);
  const std::vector<std::string> expected = c.expected.empty() ? got : c.expected;

  // Elements.
  if (c.ordered) {
    EXPECT_EQ(got, expected);
  } else {
    EXPECT_EQ(Sorted(got), Sorted(expected));
  }
  // A second iterator of the same Dataset is independent and equal.
  if (c.ordered) {
    EXPECT_EQ(ReadAll(base), got) << "second iterator differs";
  }

  // Cardinality.
  const int64_t card = base.cardinality();
  if (card >= 0) {
    EXPECT_EQ(card, static_cast<int64_t>(expected.size())) << "cardinality";
  }
  EXPECT_NE(card, kInfiniteCardinality) << "a finite case reports infinite cardinality";

  // Determinism under parallelism and CPU budgets.
  for (int p : {2, 3, 4, 8}) {
    for (int cpus : {1, 2, 4}) {
      Dataset d = Seeded(c.make(p), cpus);
      std::vector<std::string> v = ReadAll(d);
      if (c.ordered) {
        EXPECT_EQ(v, got) << "parallelism " << p << ", cpu_budget " << cpus;
      } else {
        EXPECT_EQ(Sorted(v), Sorted(got)) << "parallelism " << p << ", cpu_budget " << cpus;
      }
    }
    // An arena of one thread: more workers than threads must still finish.
    std::vector<std::string> v = ReadAll(Seeded(c.make(p), 2, /*max_threads=*/1));
    if (c.ordered) {
      EXPECT_EQ(v, got) << "parallelism " << p << ", max_threads 1";
    } else {
      EXPECT_EQ(Sorted(v), Sorted(got)) << "parallelism " << p << ", max_threads 1";
    }
  }

  // Save / restore at every position (ordered cases; parallelism 1 and 4).
  if (c.check_save_restore && c.ordered) {
    const int n = static_cast<int>(got.size());
    const int step = std::max(1, n / std::max(1, c.max_save_positions));
    for (int p : {1, 4}) {
      const Dataset d = Seeded(c.make(p), 2);
      for (int k = 0; k <= n; k += step) {
        SCOPED_TRACE("save after " + std::to_string(k) + " elements, parallelism " +
                     std::to_string(p));
        SLUICE_ASSERT_OK_AND_ASSIGN(Iterator a, d.iterator());
        bool ended;
        std::vector<std::string> head = ReadN(a, k, &ended);
        ASSERT_EQ(head, std::vector<std::string>(got.begin(), got.begin() + k));
        SLUICE_ASSERT_OK_AND_ASSIGN(std::string state, a.save());
        SLUICE_ASSERT_OK_AND_ASSIGN(Iterator b, d.iterator());
        SLUICE_ASSERT_OK(b.restore(state));
        const std::vector<std::string> rest(got.begin() + k, got.end());
        EXPECT_EQ(ReadN(b, -1, &ended), rest) << "restored iterator";
        EXPECT_EQ(ReadN(a, -1, &ended), rest) << "saved iterator after save()";
      }
    }
  }

  // Cancellation: destroying an iterator mid-flight returns within 100 ms,
  // also while a map call above the stage is slow to return.
  for (int p : {1, 4}) {
    const Dataset d = Seeded(c.make(p), 2);
    for (int k : {0, 1, 3}) {
      std::optional<Iterator> it;
      {
        SLUICE_ASSERT_OK_AND_ASSIGN(Iterator made, d.iterator());
        it.emplace(std::move(made));
      }
      bool ended;
      ReadN(*it, k, &ended);
      const double ms = MillisecondsOf([&] { it.reset(); });
      EXPECT_LT(ms, 100 * testing::kSanitizerSlowdown)
          << "iterator destruction took " << ms << " ms after " << k << " elements, parallelism "
          << p;
    }
  }
  if (got.size() >= 2) {
    auto slow = std::make_shared<SlowCalls>();
    // Element 0 is computed by the consumer; later ones by workers, blocked.
    const Dataset d = Seeded(c.make(4), 2)
                          .map(
                              [slow](Element e, const MapContext& mc) -> Result<Element> {
                                if (mc.index > 0) slow->Block();
                                return e;
                              },
                              {.parallelism = 2});
    std::optional<Iterator> it;
    {
      SLUICE_ASSERT_OK_AND_ASSIGN(Iterator made, d.iterator());
      it.emplace(std::move(made));
    }
    bool ended;
    ReadN(*it, 1, &ended);
    EXPECT_TRUE(slow->WaitEntered(1)) << "no map call started";
    const double ms = MillisecondsOf([&] { it.reset(); });
    slow->Release();
    EXPECT_LT(ms, 100 * testing::kSanitizerSlowdown)
        << "iterator destruction waited " << ms << " ms for a slow map call";
  }

  // Error propagation.
  if (c.make_failing) {
    Result<Iterator> it = c.make_failing().iterator();
    ASSERT_TRUE(it.ok()) << it.status().ToString();
    Status err;
    for (int i = 0; i < 100000 && err.ok(); ++i) {
      Result<std::optional<Element>> e = it->next();
      if (!e.ok())
        err = e.status();
      else if (!e->has_value())
        break;
    }
    EXPECT_FALSE(err.ok()) << "the failing dataset did not fail";
    EXPECT_NE(err.message().find(c.error_substring), std::string_view::npos) << err.ToString();
  }
}

}  // namespace sluice::testing
