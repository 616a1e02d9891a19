// core/background.h: SerialQueue's order, Drain, destruction with work
// queued, scheduling from a closure, many producers; RunWorkers.
#include "sluice/core/background.h"

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace sluice {
namespace {

using std::chrono::milliseconds;

TEST(SerialQueueTest, RunsClosuresInTheOrderScheduled) {
  SerialQueue q;
  std::vector<int> seen;  // touched only by the queue's thread until Drain
  for (int i = 0; i < 1000; ++i) q.Schedule([&seen, i] { seen.push_back(i); });
  q.Drain();
  ASSERT_EQ(seen.size(), 1000u);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(seen[i], i);
}

TEST(SerialQueueTest, DrainOnAQueueNeverUsedReturns) {
  SerialQueue q;
  q.Drain();
  EXPECT_EQ(q.DiscardPending(), 0u);
}

TEST(SerialQueueTest, DrainReturnsOnceClosuresAndTheirCapturesAreGone) {
  SerialQueue q;
  auto token = std::make_shared<int>(7);
  std::weak_ptr<int> watch = token;
  std::atomic<int> ran{0};
  q.Schedule([token = std::move(token), &ran] { ran += *token; });
  q.Drain();
  EXPECT_EQ(ran, 7);
  EXPECT_TRUE(watch.expired());  // destroyed before Drain returned
}

TEST(SerialQueueTest, DrainDoesNotWaitForClosuresScheduledAfterIt) {
  SerialQueue q;
  std::promise<void> release_first, release_second;
  std::shared_future<void> first = release_first.get_future().share();
  std::shared_future<void> second = release_second.get_future().share();
  std::atomic<bool> second_done{false};
  q.Schedule([&, first] {
    first.wait();
    // Scheduled while the main thread is inside Drain().
    q.Schedule([&, second] {
      second.wait_for(std::chrono::seconds(10));  // never hangs the test
      second_done = true;
    });
  });
  std::thread releaser([&] {
    std::this_thread::sleep_for(milliseconds(100));  // main is in Drain by then
    release_first.set_value();
  });
  q.Drain();
  EXPECT_FALSE(second_done);
  release_second.set_value();
  releaser.join();
  q.Drain();
  EXPECT_TRUE(second_done);
}

TEST(SerialQueueTest, AClosureMaySchedule) {
  SerialQueue q;
  std::vector<char> order;
  std::promise<void> go;
  std::shared_future<void> started = go.get_future().share();
  q.Schedule([&, started] {
    started.wait();
    order.push_back('a');
    q.Schedule([&] { order.push_back('c'); });  // after b, queued before it
  });
  q.Schedule([&] { order.push_back('b'); });
  go.set_value();
  q.Drain();  // a and b
  q.Drain();  // c, scheduled while the first Drain waited
  EXPECT_EQ(order, (std::vector<char>{'a', 'b', 'c'}));
}

TEST(SerialQueueTest, DestructorRunsWhatIsQueuedThenJoins) {
  std::atomic<int> ran{0};
  std::promise<void> go;
  std::shared_future<void> started = go.get_future().share();
  std::thread releaser;
  {
    SerialQueue q;
    q.Schedule([&, started] {
      started.wait();
      ++ran;
    });
    for (int i = 0; i < 100; ++i) q.Schedule([&] { ++ran; });
    // Closures scheduled by a closure while the queue is being destroyed
    // run too.
    q.Schedule([&] { q.Schedule([&] { ++ran; }); });
    releaser = std::thread([&] {
      std::this_thread::sleep_for(milliseconds(20));
      go.set_value();
    });
  }  // waits for the first closure, so for the releaser
  EXPECT_EQ(ran, 102);
  releaser.join();
}

TEST(SerialQueueTest, ManyProducersEachKeepTheirOrder) {
  constexpr int kProducers = 8, kEach = 2000;
  SerialQueue q;
  std::vector<std::vector<int>> seen(kProducers);  // the queue's thread only
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (int i = 0; i < kEach; ++i) {
        q.Schedule([&seen, p, i] { seen[p].push_back(i); });
        if (i % 500 == 0) q.Drain();  // drains racing with the others' schedules
      }
    });
  }
  for (std::thread& t : producers) t.join();
  q.Drain();
  for (int p = 0; p < kProducers; ++p) {
    ASSERT_EQ(seen[p].size(), static_cast<size_t>(kEach)) << "producer " << p;
    for (int i = 0; i < kEach; ++i) ASSERT_EQ(seen[p][i], i) << "producer " << p;
  }
}

TEST(SerialQueueTest, DiscardPendingDropsWhatHasNotStarted) {
  SerialQueue q;
  std::promise<void> go, running;
  std::shared_future<void> started = go.get_future().share();
  std::atomic<int> ran{0};
  q.Schedule([&, started] {
    running.set_value();
    started.wait();
    ++ran;
  });
  running.get_future().wait();  // the first is running
  auto token = std::make_shared<int>(1);
  std::weak_ptr<int> watch = token;
  for (int i = 0; i < 10; ++i) q.Schedule([&ran, token] { ran += *token; });
  token.reset();
  EXPECT_EQ(q.DiscardPending(), 10u);
  EXPECT_TRUE(watch.expired());  // destroyed by DiscardPending, not run
  go.set_value();
  q.Drain();  // waits for the running one
  EXPECT_EQ(ran, 1);
  q.Schedule([&] { ran += 10; });  // the queue goes on
  q.Drain();
  EXPECT_EQ(ran, 11);
}

TEST(SerialQueueTest, DiscardPendingBeforeTheThreadTookAnything) {
  SerialQueue q;
  std::atomic<int> ran{0};
  std::promise<void> go;
  std::shared_future<void> started = go.get_future().share();
  q.Schedule([&, started] { started.wait(); });
  q.Schedule([&] { ++ran; });
  const size_t dropped = q.DiscardPending();  // 1 or 2, by when the thread started
  EXPECT_GE(dropped, 1u);
  go.set_value();
  q.Drain();
  EXPECT_EQ(ran, 0);
}

TEST(SerialQueueTest, TheThreadCarriesTheQueuesName) {
  SerialQueue q("sluice-test-queue-long-name");
  std::string name;
  q.Schedule([&] {
    char buf[32] = {};
    pthread_getname_np(pthread_self(), buf, sizeof(buf));
    name = buf;
  });
  q.Drain();
  EXPECT_EQ(name, "sluice-test-que");  // the first 15 bytes
}

TEST(SerialQueueDeathTest, DrainFromItsOwnClosureAbortsWithAMessage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        SerialQueue q("self-drain");
        q.Schedule([&] { q.Drain(); });
        q.Drain();
      },
      "SerialQueue self-drain: Drain\\(\\) from one of its own closures");
}

TEST(RunWorkersTest, EveryWorkerRunsOnceOnAThreadOfItsOwn) {
  std::mutex mu;
  std::multiset<int> ids;
  std::set<std::thread::id> threads;
  RunWorkers(4, [&](int w) {
    std::lock_guard<std::mutex> l(mu);
    ids.insert(w);
    threads.insert(std::this_thread::get_id());
  });
  EXPECT_EQ(ids, (std::multiset<int>{0, 1, 2, 3}));
  EXPECT_EQ(threads.size(), 4u);
  EXPECT_EQ(threads.count(std::this_thread::get_id()), 0u);
}

TEST(RunTogetherTest, TheFirstRunsOnTheCallerTheRestOnThreadsOfTheirOwnAtOnce) {
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0;
  std::map<int, std::thread::id> where;
  RunTogether(3, [&](int w) {
    std::unique_lock<std::mutex> l(mu);
    where[w] = std::this_thread::get_id();
    ++arrived;
    cv.notify_all();
    // Every call waits for the others: they run at the same time.
    EXPECT_TRUE(cv.wait_for(l, std::chrono::seconds(10), [&] { return arrived == 3; })) << w;
  });
  ASSERT_EQ(where.size(), 3u);
  EXPECT_EQ(where[0], std::this_thread::get_id());
  EXPECT_NE(where[1], std::this_thread::get_id());
  EXPECT_NE(where[2], std::this_thread::get_id());
  EXPECT_NE(where[1], where[2]);
  int calls = 0;
  RunTogether(0, [&](int w) {
    EXPECT_EQ(w, 0);
    ++calls;
  });
  EXPECT_EQ(calls, 1);
}

TEST(RunWorkersTest, NoWorkersMeansOne) {
  std::atomic<int> calls{0};
  RunWorkers(0, [&](int w) {
    EXPECT_EQ(w, 0);
    ++calls;
  });
  EXPECT_EQ(calls, 1);
}

TEST(RunWorkersTest, TicksOnTheCallingThreadWhileWorkersRunAndOnceAfter) {
  std::atomic<int> finished{0};
  int ticks = 0;
  bool last_saw_all = false;
  const std::thread::id caller = std::this_thread::get_id();
  RunWorkers(
      2,
      [&](int) {
        std::this_thread::sleep_for(milliseconds(60));
        ++finished;
      },
      [&] {
        EXPECT_EQ(std::this_thread::get_id(), caller);
        ++ticks;
        last_saw_all = finished == 2;
      },
      milliseconds(5));
  EXPECT_GE(ticks, 3);
  EXPECT_TRUE(last_saw_all);  // the last tick comes after every worker
}

}  // namespace
}  // namespace sluice
