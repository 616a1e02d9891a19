#include "sluice/core/background.h"

#include <pthread.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace sluice {

struct SerialQueue::State {
  explicit State(std::string n) : name(std::move(n)) {}

  void Run() {
    pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
    std::unique_lock<std::mutex> l(mu);
    for (;;) {
      if (queue.empty()) {
        if (stopping) return;  // everything queued has run
        ++idle;
        work_cv.wait(l, [this] { return stopping || !queue.empty(); });
        --idle;
        continue;
      }
      std::function<void()> fn = std::move(queue.front());
      queue.pop_front();
      l.unlock();
      fn();
      fn = nullptr;  // what it captured goes before Drain() returns
      l.lock();
      // The queue holds the newest queue.size() closures scheduled, so
      // every one before them has finished (run, or discarded).
      done = scheduled - queue.size();
      if (drainers > 0) done_cv.notify_all();
    }
  }

  const std::string name;
  std::mutex mu;
  std::condition_variable work_cv;  // work for the thread, or stopping
  std::condition_variable done_cv;  // `done` moved on
  std::deque<std::function<void()>> queue;
  uint64_t scheduled = 0;  // closures ever scheduled
  uint64_t done = 0;       // the first `done` of them have finished
  int idle = 0;            // the thread waits on work_cv
  int drainers = 0;        // threads waiting in Drain()
  bool stopping = false;
  std::thread thread;  // started by the first Schedule
};

SerialQueue::SerialQueue(std::string name) : state_(std::make_unique<State>(std::move(name))) {}

SerialQueue::~SerialQueue() {
  {
    std::lock_guard<std::mutex> l(state_->mu);
    state_->stopping = true;
  }
  state_->work_cv.notify_one();
  if (state_->thread.joinable()) state_->thread.join();
}

void SerialQueue::Schedule(std::function<void()> fn) {
  State& s = *state_;
  bool wake;
  {
    std::lock_guard<std::mutex> l(s.mu);
    s.queue.push_back(std::move(fn));
    ++s.scheduled;
    if (!s.thread.joinable()) {
      s.thread = std::thread([&s] { s.Run(); });
    }
    wake = s.idle > 0;
  }
  if (wake) s.work_cv.notify_one();
}

void SerialQueue::Drain() {
  State& s = *state_;
  std::unique_lock<std::mutex> l(s.mu);
  if (s.done >= s.scheduled) return;
  if (std::this_thread::get_id() == s.thread.get_id()) {
    std::fprintf(stderr, "sluice: SerialQueue %s: Drain() from one of its own closures\n",
                 s.name.c_str());
    std::abort();
  }
  const uint64_t target = s.scheduled;
  ++s.drainers;
  s.done_cv.wait(l, [&] { return s.done >= target; });
  --s.drainers;
}

size_t SerialQueue::DiscardPending() {
  State& s = *state_;
  std::deque<std::function<void()>> dropped;
  {
    std::lock_guard<std::mutex> l(s.mu);
    dropped.swap(s.queue);
    // Nothing runs: every closure has finished. Else the running one sets
    // `done` when it finishes.
    if (s.done + dropped.size() == s.scheduled) {
      s.done = s.scheduled;
      if (s.drainers > 0) s.done_cv.notify_all();
    }
  }
  return dropped.size();  // destroyed here, outside the lock
}

void RunWorkers(int workers, const std::function<void(int)>& work,
                const std::function<void()>& tick, std::chrono::milliseconds tick_every) {
  workers = std::max(1, workers);
  std::mutex mu;
  std::condition_variable done_cv;
  int running = workers;
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(workers));
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      work(w);
      std::lock_guard<std::mutex> l(mu);
      if (--running == 0) done_cv.notify_all();
    });
  }
  {
    std::unique_lock<std::mutex> l(mu);
    while (running > 0) {
      done_cv.wait_for(l, tick_every, [&] { return running == 0; });
      if (tick) {
        l.unlock();
        tick();
        l.lock();
      }
    }
  }
  for (std::thread& t : threads) t.join();
}

void RunTogether(int n, const std::function<void(int)>& work) {
  n = std::max(1, n);
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(n - 1));
  for (int w = 1; w < n; ++w) threads.emplace_back([&work, w] { work(w); });
  work(0);
  for (std::thread& t : threads) t.join();
}

}  // namespace sluice
