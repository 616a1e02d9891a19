#include "sluice/pipeline/internal/reaper.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace sluice::pipeline_internal {
namespace {

class Reaper {
 public:
  Reaper() : thread_([this] { Run(); }) {}
  ~Reaper() {
    {
      std::lock_guard<std::mutex> l(mu_);
      exiting_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  void Add(std::function<void()> destroy) {
    {
      std::lock_guard<std::mutex> l(mu_);
      queue_.push_back(std::move(destroy));
      ++added_;
    }
    cv_.notify_all();
  }

  void Wait() {
    std::unique_lock<std::mutex> l(mu_);
    const uint64_t target = added_;
    cv_.wait(l, [&] { return done_ >= target; });
  }

 private:
  void Run() {
    std::unique_lock<std::mutex> l(mu_);
    for (;;) {
      cv_.wait(l, [this] { return exiting_ || !queue_.empty(); });
      if (queue_.empty()) return;  // exiting, and nothing left
      std::function<void()> destroy = std::move(queue_.front());
      queue_.pop_front();
      l.unlock();
      destroy();
      destroy = nullptr;  // whatever it captured goes too
      l.lock();
      ++done_;
      cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  uint64_t added_ = 0;
  uint64_t done_ = 0;
  bool exiting_ = false;
  std::thread thread_;  // last: starts once the rest is made
};

Reaper& TheReaper() {
  static Reaper reaper;
  return reaper;
}

}  // namespace

void DestroyLater(std::function<void()> destroy) { TheReaper().Add(std::move(destroy)); }

void WaitForReaper() { TheReaper().Wait(); }

}  // namespace sluice::pipeline_internal
