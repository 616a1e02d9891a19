// distribute: the properties every rank's share must have, for W = 1..8
// ranks in one process: disjoint, covering (all but the reported left-over),
// equal counts, an order that does not depend on W, save on W ranks and
// restore on W', padding with weight-0 copies, and the errors.
#include "sluice/distribute/distribute.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <thread>

#include "sluice/distribute/in_process.h"
#include "sluice/records/tfrecord_writer.h"
#include "test_util.h"

namespace sluice {
namespace {

using testing::ScratchDir;

InputContext Rank(int r, int w) {
  InputContext c;
  c.rank = r;
  c.world_size = w;
  return c;
}

// The first component of each element as int64 (a record's text as its
// number: "r12" -> 12).
int64_t ValueOf(const Element& e) {
  if (e[0].dtype() == DType::kInt64) return e[0].scalar<int64_t>();
  std::string_view s = e[0].scalar<std::string_view>();
  return std::stoll(std::string(s.substr(1)));
}

struct Share {
  std::vector<int64_t> values;
  std::vector<float> weights;  // with pad_for_eval
};

Share ReadShare(const Dataset& ds, int64_t limit = -1, Iterator* keep = nullptr) {
  Share out;
  auto it = ds.iterator();
  EXPECT_TRUE(it.ok()) << it.status();
  if (!it.ok()) return out;
  while (limit < 0 || static_cast<int64_t>(out.values.size()) < limit) {
    auto e = it->next();
    EXPECT_TRUE(e.ok()) << e.status();
    if (!e.ok() || !e->has_value()) break;
    out.values.push_back(ValueOf(**e));
    if (const Tensor* w = (*e)->find("sample_weight")) out.weights.push_back(w->scalar<float>());
  }
  if (keep) *keep = std::move(*it);
  return out;
}

std::vector<int64_t> ReadValues(const Dataset& ds) { return ReadShare(ds).values; }

// Indexed (or not) TFRecord files whose records are "r<global number>".
std::vector<std::string> WriteFiles(const ScratchDir& dir, const std::vector<int>& counts,
                                    bool index) {
  std::vector<std::string> paths;
  int next = 0;
  for (size_t f = 0; f < counts.size(); ++f) {
    const std::string path = dir.file("part-" + std::to_string(f) + ".tfrecord");
    TFRecordWriterOptions o;
    o.write_index = index;
    auto w = TFRecordWriter::Open(path, o);
    EXPECT_TRUE(w.ok());
    for (int r = 0; r < counts[f]; ++r) EXPECT_TRUE(w->Write("r" + std::to_string(next++)).ok());
    EXPECT_TRUE(w->Close().ok());
    paths.push_back(path);
  }
  return paths;
}

// Checks that the shares of `make(ctx)` for W ranks are disjoint, equally
// long, and that element k of rank r is global[k * W + r].
void ExpectExactShares(const std::function<Dataset(const InputContext&)>& make,
                       const std::vector<int64_t>& global, int w) {
  SCOPED_TRACE("world size " + std::to_string(w));
  const size_t per = global.size() / static_cast<size_t>(w);
  std::set<int64_t> seen;
  for (int r = 0; r < w; ++r) {
    const std::vector<int64_t> mine = ReadValues(make(Rank(r, w)));
    ASSERT_EQ(mine.size(), per) << "rank " << r;
    for (size_t k = 0; k < mine.size(); ++k) {
      EXPECT_EQ(mine[k], global[k * static_cast<size_t>(w) + static_cast<size_t>(r)]);
      EXPECT_TRUE(seen.insert(mine[k]).second) << "duplicate " << mine[k];
    }
  }
  EXPECT_EQ(seen.size(), per * static_cast<size_t>(w));
}

TEST(DistributeTest, RecordSharesOfAGlobalShuffleDoNotDependOnTheRankCount) {
  ScratchDir dir;
  const auto files = WriteFiles(dir, {13, 40, 7, 21}, /*index=*/true);
  auto make = [&](const InputContext& c) {
    return TFRecordDataset(files).global_shuffle({.seed = 11}).apply(distribute(c));
  };
  const std::vector<int64_t> global = ReadValues(make(Rank(0, 1)));
  ASSERT_EQ(global.size(), 81u);
  EXPECT_NE(global, ReadValues(TFRecordDataset(files)));  // shuffled
  for (int w = 1; w <= 8; ++w) ExpectExactShares(make, global, w);
  auto plan = PlanDistribution(TFRecordDataset(files), Rank(1, 4));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->policy, DistributePolicy::kRecord);
  EXPECT_EQ(plan->per_rank, 20);
  EXPECT_EQ(plan->dropped, 1);
  EXPECT_EQ(plan->ToString(),
            "RECORD: 81 elements over 4 ranks, 20 each, 1 left over [AUTO: random access with a "
            "known size]");
}

TEST(DistributeTest, EpochsAreReshuffledTheSameWayOnEveryRankCount) {
  auto make = [](const InputContext& c) {
    return Dataset::range(30).global_shuffle({.seed = 2}).apply(distribute(c)).repeat(3);
  };
  // Every epoch holds each element once, in a new order.
  const std::vector<int64_t> one = ReadValues(make(Rank(0, 1)));
  ASSERT_EQ(one.size(), 90u);
  std::vector<int64_t> e0(one.begin(), one.begin() + 30), e1(one.begin() + 30, one.begin() + 60);
  EXPECT_NE(e0, e1);
  std::sort(e1.begin(), e1.end());
  EXPECT_EQ(e1.front(), 0);
  EXPECT_EQ(e1.back(), 29);
  for (int w : {2, 3, 5}) {
    for (int r = 0; r < w; ++r) {
      const std::vector<int64_t> mine = ReadValues(make(Rank(r, w)));
      const size_t per = 30 / static_cast<size_t>(w);
      ASSERT_EQ(mine.size(), 3 * per);
      for (size_t epoch = 0; epoch < 3; ++epoch) {
        for (size_t k = 0; k < per; ++k) {
          EXPECT_EQ(mine[epoch * per + k],
                    one[epoch * 30 + k * static_cast<size_t>(w) + static_cast<size_t>(r)]);
        }
      }
    }
  }
}

TEST(DistributeTest, DataSharesOfAnInputReadInOrder) {
  // A generator: no random access, not a file source.
  auto source = [] {
    return Dataset::from_generator([] {
      auto i = std::make_shared<int64_t>(0);
      return GeneratorFn([i]() -> Result<std::optional<Element>> {
        if (*i >= 29) return std::optional<Element>();
        return std::optional<Element>(Element({Tensor::Scalar<int64_t>((*i)++ * 10)}));
      });
    });
  };
  auto make = [&](const InputContext& c) { return source().apply(distribute(c)); };
  std::vector<int64_t> global;
  for (int64_t i = 0; i < 29; ++i) global.push_back(i * 10);
  for (int w = 1; w <= 8; ++w) ExpectExactShares(make, global, w);
  auto plan = PlanDistribution(source(), Rank(0, 3));
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->policy, DistributePolicy::kData);
  EXPECT_NE(plan->ToString().find("an incomplete last round is dropped"), std::string::npos);
}

TEST(DistributeTest, FileSharesStopTogether) {
  ScratchDir dir;
  const std::vector<int> counts = {5, 9, 4, 12, 6};
  const auto files = WriteFiles(dir, counts, /*index=*/false);
  for (int w = 1; w <= 5; ++w) {
    SCOPED_TRACE("world size " + std::to_string(w));
    std::vector<int64_t> totals(static_cast<size_t>(w), 0);
    for (size_t f = 0; f < counts.size(); ++f) totals[f % static_cast<size_t>(w)] += counts[f];
    const int64_t least = *std::min_element(totals.begin(), totals.end());
    std::set<int64_t> seen;
    for (int r = 0; r < w; ++r) {
      auto plan = PlanDistribution(TFRecordDataset(files), Rank(r, w));
      ASSERT_TRUE(plan.ok()) << plan.status();
      EXPECT_EQ(plan->policy, DistributePolicy::kFile);
      EXPECT_EQ(plan->per_rank, least);
      EXPECT_EQ(plan->dropped, 36 - least * w);
      const std::vector<int64_t> mine =
          ReadValues(TFRecordDataset(files).apply(distribute(Rank(r, w))));
      EXPECT_EQ(static_cast<int64_t>(mine.size()), least);
      for (int64_t v : mine) EXPECT_TRUE(seen.insert(v).second);
    }
  }
  SLUICE_EXPECT_ERROR(TFRecordDataset(files)
                          .apply(distribute(Rank(0, 6), {.policy = DistributePolicy::kFile}))
                          .status(),
                      StatusCode::kInvalidArgument, "5 files for 6 ranks");
  // AUTO falls back to DATA when there are fewer files than ranks.
  auto plan = PlanDistribution(TFRecordDataset(files), Rank(0, 6));
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->policy, DistributePolicy::kData);
  EXPECT_EQ(ReadValues(TFRecordDataset(files).apply(distribute(Rank(5, 6)))).size(), 6u);
}

TEST(DistributeTest, FileCountsAgreeThroughACommunicator) {
  ScratchDir dir;
  const auto files = WriteFiles(dir, {5, 9, 4, 12}, /*index=*/false);
  constexpr int w = 3;
  auto comms = InProcessGroup::Create(w);
  std::vector<int64_t> sizes(w);
  std::vector<std::thread> threads;
  for (int r = 0; r < w; ++r) {
    threads.emplace_back([&, r] {
      InputContext c = InputContext::FromCommunicator(std::move(comms[static_cast<size_t>(r)]));
      sizes[static_cast<size_t>(r)] =
          static_cast<int64_t>(ReadValues(TFRecordDataset(files).apply(distribute(c))).size());
    });
  }
  for (auto& t : threads) t.join();
  // Ranks hold 5 + 12, 9 and 4 records: every one reads 4.
  EXPECT_EQ(sizes, std::vector<int64_t>({4, 4, 4}));
}

TEST(DistributeTest, PaddingForEvaluationCountsEveryElementOnce) {
  ScratchDir dir;
  const auto files = WriteFiles(dir, {10, 13}, /*index=*/true);
  for (int w = 1; w <= 8; ++w) {
    SCOPED_TRACE("world size " + std::to_string(w));
    std::map<int64_t, float> weight_of;
    size_t length = 0;
    for (int r = 0; r < w; ++r) {
      const Share s =
          ReadShare(TFRecordDataset(files).apply(distribute(Rank(r, w), {.pad_for_eval = true})));
      if (r == 0) length = s.values.size();
      EXPECT_EQ(s.values.size(), length);  // equal steps
      ASSERT_EQ(s.weights.size(), s.values.size());
      for (size_t k = 0; k < s.values.size(); ++k) weight_of[s.values[k]] += s.weights[k];
    }
    EXPECT_EQ(length, (23u + static_cast<size_t>(w) - 1) / static_cast<size_t>(w));
    ASSERT_EQ(weight_of.size(), 23u);                                    // every element present...
    for (const auto& [v, wsum] : weight_of) EXPECT_EQ(wsum, 1.0f) << v;  // ...counted once
  }
  // The same through FILE sharding: ranks pad up to the longest.
  ScratchDir plain_dir;
  const auto plain = WriteFiles(plain_dir, {3, 8, 5}, /*index=*/false);
  float total = 0;
  for (int r = 0; r < 2; ++r) {
    const Share s =
        ReadShare(TFRecordDataset(plain).apply(distribute(Rank(r, 2), {.pad_for_eval = true})));
    EXPECT_EQ(s.values.size(), 8u);
    for (float x : s.weights) total += x;
  }
  EXPECT_EQ(total, 16.0f);
}

TEST(DistributeTest, SavedOnWRanksRestoresOnAnyOther) {
  auto make = [](const InputContext& c) {
    return Dataset::range(100)
        .global_shuffle({.seed = 9})
        .apply(distribute(c))
        .map([](Element e) { return e; }, {.parallelism = 2})
        .batch(2)
        .prefetch(2);
  };
  // One rank's view of the epoch, element by element.
  std::vector<int64_t> global;
  for (const Element& b : make(Rank(0, 1)).unbatch()) global.push_back(b[0].scalar<int64_t>());
  ASSERT_EQ(global.size(), 100u);
  auto batches_of = [](Iterator& it) {
    std::vector<int64_t> out;
    for (;;) {
      auto b = it.next();
      EXPECT_TRUE(b.ok()) << b.status();
      if (!b.ok() || !b->has_value()) break;
      for (int64_t v : (**b)[0].flat<int64_t>()) out.push_back(v);
    }
    return out;
  };
  for (int w : {1, 2, 4}) {
    for (int w2 : {1, 3, 4, 8}) {
      SCOPED_TRACE(std::to_string(w) + " ranks, restored on " + std::to_string(w2));
      // Every rank reads 3 batches (6 elements) and saves.
      std::vector<std::string> states;
      std::set<int64_t> before;
      for (int r = 0; r < w; ++r) {
        SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, make(Rank(r, w)).iterator());
        for (int k = 0; k < 3; ++k) {
          SLUICE_ASSERT_OK_AND_ASSIGN(auto b, it.next());
          ASSERT_TRUE(b.has_value());
          for (int64_t v : (*b)[0].flat<int64_t>()) before.insert(v);
        }
        SLUICE_ASSERT_OK_AND_ASSIGN(std::string s, it.save());
        states.push_back(std::move(s));
      }
      const size_t done = 6 * static_cast<size_t>(w);
      // The first w * 6 positions of the global order were read.
      EXPECT_EQ(before,
                std::set<int64_t>(global.begin(), global.begin() + static_cast<long>(done)));
      // w2 ranks continue from any rank's state: position p of the rest is
      // read by rank p mod w2.
      const size_t per = (100 - done) / static_cast<size_t>(w2);
      for (int r = 0; r < w2; ++r) {
        SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, make(Rank(r, w2)).iterator());
        SLUICE_ASSERT_OK(it.restore(states[static_cast<size_t>(r) % states.size()]));
        const std::vector<int64_t> rest = batches_of(it);
        ASSERT_EQ(rest.size(), per);
        for (size_t k = 0; k < rest.size(); ++k) {
          EXPECT_EQ(rest[k], global[done + k * static_cast<size_t>(w2) + static_cast<size_t>(r)]);
        }
      }
    }
  }
}

TEST(DistributeTest, RandomMapsDrawTheSameForAnyRankCount) {
  auto make = [](const InputContext& c) {
    return Dataset::range(40)
        .global_shuffle()
        .apply(distribute(c))
        .map(
            [](Element e, const MapContext& m) -> Result<Element> {
              e.push_back(Tensor::Scalar<int64_t>(static_cast<int64_t>(m.rng().NextU64() >> 1)));
              return e;
            },
            {.parallelism = 3})
        .with_options({.seed = 77});
  };
  std::map<int64_t, int64_t> draw;  // element -> its draw with one rank
  for (const Element& e : make(Rank(0, 1))) draw[e[0].scalar<int64_t>()] = e[1].scalar<int64_t>();
  ASSERT_EQ(draw.size(), 40u);
  for (int w : {2, 3, 8}) {
    for (int r = 0; r < w; ++r) {
      int n = 0;
      for (const Element& e : make(Rank(r, w))) {
        EXPECT_EQ(draw[e[0].scalar<int64_t>()], e[1].scalar<int64_t>()) << w << " ranks";
        ++n;
      }
      EXPECT_EQ(n, 40 / w);
    }
  }
}

TEST(DistributeTest, OffAndBadArguments) {
  EXPECT_EQ(ReadValues(
                Dataset::range(5).apply(distribute(Rank(1, 2), {.policy = DistributePolicy::kOff})))
                .size(),
            5u);
  SLUICE_EXPECT_ERROR(Dataset::range(5).apply(distribute(Rank(2, 2))).status(),
                      StatusCode::kInvalidArgument, "rank 2 is outside [0, world size 2)");
  SLUICE_EXPECT_ERROR(Dataset::range(5).apply(distribute(Rank(0, 0))).status(),
                      StatusCode::kInvalidArgument, "outside");
  // RECORD needs random access: the message says what is missing.
  ScratchDir dir;
  const auto files = WriteFiles(dir, {4, 4}, /*index=*/false);
  SLUICE_EXPECT_ERROR(TFRecordDataset(files)
                          .apply(distribute(Rank(0, 2), {.policy = DistributePolicy::kRecord}))
                          .status(),
                      StatusCode::kFailedPrecondition, "has no index");
  SLUICE_EXPECT_ERROR(Dataset::range(8)
                          .shuffle(4)
                          .apply(distribute(Rank(0, 2), {.policy = DistributePolicy::kRecord}))
                          .status(),
                      StatusCode::kFailedPrecondition, "does not allow random access");
  SLUICE_EXPECT_ERROR(
      Dataset::range(8).apply(distribute(Rank(0, 2), {.policy = DistributePolicy::kFile})).status(),
      StatusCode::kFailedPrecondition, "not a file source");
  // A communicator that disagrees with the context.
  auto comms = InProcessGroup::Create(1);
  InputContext c = Rank(0, 2);
  c.communicator = std::move(comms[0]);
  SLUICE_EXPECT_ERROR(Dataset::range(5).apply(distribute(c)).status(), StatusCode::kInvalidArgument,
                      "in-process, rank 0 of 1");
}

}  // namespace
}  // namespace sluice
