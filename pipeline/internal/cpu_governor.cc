#include "sluice/pipeline/internal/cpu_governor.h"

#include <algorithm>
#include <chrono>
#include <vector>

namespace sluice::pipeline_internal {
namespace {

// What the current thread holds, per governor (a thread computing for a
// pipeline inside a function of another holds for both).
struct Hold {
  CpuGovernor* gov;
  int64_t units;
};
thread_local std::vector<Hold> t_holds;

Hold* Find(CpuGovernor* gov) {
  for (Hold& h : t_holds) {
    if (h.gov == gov) return &h;
  }
  return nullptr;
}

}  // namespace

void CpuGovernor::Cancel() {
  {
    std::lock_guard<std::mutex> l(mu_);
    cancelled_.store(true);
  }
  cv_.notify_all();
}

void CpuGovernor::Take(int64_t units) {
  // Without waiters, a compare-and-swap; with waiters, a place in line, so
  // that a thread taking units again and again (the consumer) cannot starve
  // one that waits.
  int64_t cur = used_.load(std::memory_order_relaxed);
  while (waiters_.load(std::memory_order_acquire) == 0 &&
         (cur + units <= capacity_ || cancelled_.load(std::memory_order_relaxed))) {
    if (used_.compare_exchange_weak(cur, cur + units, std::memory_order_acq_rel)) return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> l(mu_);
  waiters_.fetch_add(1, std::memory_order_acq_rel);
  const uint64_t ticket = next_ticket_++;
  cv_.wait(l, [&] {
    if (cancelled_.load(std::memory_order_relaxed)) {
      used_.fetch_add(units, std::memory_order_acq_rel);
      return true;
    }
    if (ticket != serving_) return false;
    // A compare-and-swap, not check-then-add: a thread on the fast path may
    // take units between the two.
    int64_t c = used_.load(std::memory_order_relaxed);
    while (c + units <= capacity_) {
      if (used_.compare_exchange_weak(c, c + units, std::memory_order_acq_rel)) return true;
    }
    return false;
  });
  if (ticket == serving_) ++serving_;
  waiters_.fetch_sub(1, std::memory_order_acq_rel);
  l.unlock();
  wait_ns_.fetch_add(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
          .count(),
      std::memory_order_relaxed);
  cv_.notify_all();  // the next in line may fit too
}

void CpuGovernor::Give(int64_t units) {
  if (units <= 0) return;
  used_.fetch_sub(units, std::memory_order_acq_rel);
  if (waiters_.load(std::memory_order_acquire) > 0) {
    // Under the lock, so a waiter between its check and its wait is not missed.
    { std::lock_guard<std::mutex> l(mu_); }
    cv_.notify_all();
  }
}

CpuUse::CpuUse(CpuGovernor* gov, int64_t permille) : gov_(gov) {
  if (gov_ == nullptr) return;
  const int64_t want = std::clamp<int64_t>(permille, CpuGovernor::kMinPermille, 1000) *
                       CpuGovernor::kUnitsPerCpu / 1000;
  Hold* h = Find(gov_);
  if (h == nullptr) {
    t_holds.push_back({gov_, 0});
    h = &t_holds.back();
    pushed_ = true;
  }
  before_ = h->units;
  if (h->units > want) {
    gov_->Give(h->units - want);
    h->units = want;
  } else if (h->units < want) {
    // Never wait while holding units: give them back, then wait for all.
    const int64_t held = h->units;
    h->units = 0;
    gov_->Give(held);
    gov_->Take(want);
    h = Find(gov_);
    h->units = want;
  }
}

CpuUse::~CpuUse() {
  if (gov_ == nullptr) return;
  Hold* h = Find(gov_);
  if (h == nullptr) return;
  // Give back what this scope added; keep up to what the thread held.
  if (h->units > before_) {
    gov_->Give(h->units - before_);
    h->units = before_;
  }
  if (pushed_) {
    gov_->Give(h->units);
    t_holds.erase(t_holds.begin() + (h - t_holds.data()));
  }
}

CpuIdle::CpuIdle(CpuGovernor* gov) {
  if (gov == nullptr) return;
  Hold* h = Find(gov);
  if (h == nullptr || h->units == 0) return;
  const int64_t held = h->units;
  h->units = 0;
  gov->Give(held);
}

}  // namespace sluice::pipeline_internal
