// InProcessGroup: every collective for W = 1..8 threads as ranks, results
// identical on every rank, and failures (mismatched calls, a rank that never
// arrives, an abort) that name the rank instead of hanging.
#include "sluice/distribute/in_process.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "test_util.h"

namespace sluice {
namespace {

using namespace std::chrono_literals;

// Runs body(rank, comm) on one thread per rank; returns each rank's status.
std::vector<Status> RunRanks(int w, const std::function<Status(Communicator&)>& body,
                             std::chrono::milliseconds timeout = 20s) {
  auto comms = InProcessGroup::Create(w, {.timeout = timeout});
  std::vector<Status> out(static_cast<size_t>(w));
  std::vector<std::thread> threads;
  for (int r = 0; r < w; ++r) {
    threads.emplace_back(
        [&, r] { out[static_cast<size_t>(r)] = body(*comms[static_cast<size_t>(r)]); });
  }
  for (auto& t : threads) t.join();
  return out;
}

void ExpectAllOk(const std::vector<Status>& s) {
  for (size_t r = 0; r < s.size(); ++r) EXPECT_TRUE(s[r].ok()) << "rank " << r << ": " << s[r];
}

TEST(InProcessGroupTest, CollectivesForOneToEightRanks) {
  for (int w = 1; w <= 8; ++w) {
    SCOPED_TRACE("world size " + std::to_string(w));
    ExpectAllOk(RunRanks(w, [w](Communicator& c) -> Status {
      const int r = c.rank();
      EXPECT_EQ(c.size(), w);
      SLUICE_RETURN_IF_ERROR(c.Barrier());
      // Broadcast from the last rank.
      int64_t b[3] = {r, r * 10, -r};
      SLUICE_RETURN_IF_ERROR(c.Broadcast(b, sizeof(b), w - 1));
      EXPECT_EQ(b[0], w - 1);
      EXPECT_EQ(b[2], -(w - 1));
      // All-gather in rank order.
      int32_t mine[2] = {r, r * r};
      std::vector<int32_t> all(static_cast<size_t>(2 * w));
      SLUICE_RETURN_IF_ERROR(c.AllGather(mine, all.data(), sizeof(mine)));
      for (int k = 0; k < w; ++k) {
        EXPECT_EQ(all[static_cast<size_t>(2 * k)], k);
        EXPECT_EQ(all[static_cast<size_t>(2 * k + 1)], k * k);
      }
      // All-reduce: sum, mean, min, max over a buffer that does not split evenly.
      std::vector<float> v(37);
      for (size_t i = 0; i < v.size(); ++i)
        v[i] = static_cast<float>(r + 1) * static_cast<float>(i);
      SLUICE_RETURN_IF_ERROR(c.AllReduce(v.data(), v.size(), DType::kFloat32, ReduceOp::kSum));
      const float ranks_sum = static_cast<float>(w * (w + 1) / 2);
      for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(v[i], ranks_sum * static_cast<float>(i));
      std::vector<double> m = {static_cast<double>(r), 1.0};
      SLUICE_RETURN_IF_ERROR(c.AllReduce(m.data(), m.size(), DType::kFloat64, ReduceOp::kMean));
      EXPECT_DOUBLE_EQ(m[0], (w - 1) / 2.0);
      EXPECT_DOUBLE_EQ(m[1], 1.0);
      SLUICE_ASSIGN_OR_RETURN(int64_t lo, c.AllReduceInt(100 - r, ReduceOp::kMin));
      SLUICE_ASSIGN_OR_RETURN(int64_t hi, c.AllReduceInt(r, ReduceOp::kMax));
      EXPECT_EQ(lo, 100 - (w - 1));
      EXPECT_EQ(hi, w - 1);
      // Bytes of different lengths.
      SLUICE_ASSIGN_OR_RETURN(std::vector<std::string> words,
                              c.AllGatherBytes(std::string(static_cast<size_t>(r), 'x')));
      for (int k = 0; k < w; ++k)
        EXPECT_EQ(words[static_cast<size_t>(k)].size(), static_cast<size_t>(k));
      return Status::OK();
    }));
  }
}

TEST(InProcessGroupTest, ReductionsAreIdenticalOnEveryRank) {
  constexpr int w = 5;
  std::vector<std::vector<float>> results(w);
  ExpectAllOk(RunRanks(w, [&](Communicator& c) -> Status {
    std::vector<float> v(1000);
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = 0.1f * static_cast<float>(c.rank() + 1) / 3.0f + 1e-7f * static_cast<float>(i);
    SLUICE_RETURN_IF_ERROR(c.AllReduce(v.data(), v.size(), DType::kFloat32, ReduceOp::kMean));
    results[static_cast<size_t>(c.rank())] = v;
    return Status::OK();
  }));
  for (int r = 1; r < w; ++r) {
    EXPECT_EQ(std::memcmp(results[0].data(), results[static_cast<size_t>(r)].data(), 4000), 0);
  }
}

TEST(InProcessGroupTest, DuplicateIsAnIndependentChannel) {
  ExpectAllOk(RunRanks(3, [](Communicator& c) -> Status {
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> d, c.Duplicate());
    // The two channels interleave differently on different ranks' threads.
    std::thread other([&] {
      for (int i = 0; i < 50; ++i) EXPECT_EQ(*d->AllReduceInt(1, ReduceOp::kSum), 3);
    });
    for (int i = 0; i < 50; ++i) EXPECT_EQ(*c.AllReduceInt(2, ReduceOp::kSum), 6);
    other.join();
    return Status::OK();
  }));
}

TEST(InProcessGroupTest, MismatchedCallsFailTheGroupNamingBoth) {
  std::vector<Status> s = RunRanks(2, [](Communicator& c) -> Status {
    if (c.rank() == 0) return c.Barrier();
    int64_t x = 1;
    return c.Broadcast(&x, sizeof(x), 0);
  });
  for (const Status& st : s) {
    EXPECT_EQ(st.code(), StatusCode::kInternal) << st;
    EXPECT_NE(st.ToString().find("called"), std::string::npos) << st;
  }
  s = RunRanks(2, [](Communicator& c) -> Status {
    std::vector<float> v(static_cast<size_t>(4 + c.rank()));
    return c.AllReduce(v.data(), v.size(), DType::kFloat32, ReduceOp::kSum);
  });
  for (const Status& st : s) EXPECT_NE(st.ToString().find("16 bytes"), std::string::npos) << st;
}

TEST(InProcessGroupTest, ARankThatNeverArrivesIsNamedWithinTheTimeout) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<Status> s = RunRanks(
      4,
      [](Communicator& c) -> Status {
        if (c.rank() == 2) return Status::OK();  // leaves without the barrier
        return c.Barrier();
      },
      300ms);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  for (int r : {0, 1, 3}) {
    SLUICE_EXPECT_ERROR(s[static_cast<size_t>(r)], StatusCode::kUnavailable,
                        "rank(s) 2 did not arrive within 300 ms");
  }
}

TEST(InProcessGroupTest, AbortFailsTheOthersNamingTheRank) {
  std::vector<Status> s = RunRanks(3, [](Communicator& c) -> Status {
    if (c.rank() == 1) {
      std::this_thread::sleep_for(20ms);
      c.Abort(Status::DataLoss("bad record in shard 7"));
      return Status::OK();
    }
    Status first = c.Barrier();
    // Broken for good: later calls repeat the failure at once.
    Status again = c.Barrier();
    EXPECT_EQ(again.ToString(), first.ToString());
    return first;
  });
  for (int r : {0, 2}) {
    SLUICE_EXPECT_ERROR(s[static_cast<size_t>(r)], StatusCode::kUnavailable,
                        "rank 1 of 3 failed: DataLoss: bad record in shard 7");
  }
}

TEST(InProcessGroupTest, BadArguments) {
  auto comms = InProcessGroup::Create(1);
  int64_t x = 0;
  SLUICE_EXPECT_ERROR(comms[0]->Broadcast(&x, 8, 1), StatusCode::kInvalidArgument, "root 1");
  SLUICE_EXPECT_ERROR(comms[0]->AllReduce(&x, 1, DType::kInt64, ReduceOp::kMean),
                      StatusCode::kInvalidArgument, "mean of int64");
  SLUICE_EXPECT_ERROR(comms[0]->AllReduce(&x, 1, DType::kString, ReduceOp::kSum),
                      StatusCode::kInvalidArgument, "dtype string");
  EXPECT_EQ(comms[0]->Describe(), "in-process, rank 0 of 1");
}

}  // namespace
}  // namespace sluice
