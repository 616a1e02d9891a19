// SlowCalls: map functions that are slow to return, for cancellation tests.
//
// A call made through Block() does not return until Release() is called (or
// `max_wait` passes, so that a test of a destructor that waits for it fails
// instead of hanging). entered() counts the calls that are blocked or were.
// The waits are long (10 s) because they end as soon as what they wait for
// happens: on a loaded 2-core machine (load 15 measured under ctest -j2 and
// two compilers) a worker's first call took more than 2 s to start.
// Thread-safe; share it with the functions by shared_ptr.
#ifndef SLUICE_TESTS_PIPELINE_SLOW_CALLS_H_
#define SLUICE_TESTS_PIPELINE_SLOW_CALLS_H_

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace sluice::testing {

class SlowCalls {
 public:
  explicit SlowCalls(std::chrono::milliseconds max_wait = std::chrono::milliseconds(10000))
      : max_wait_(max_wait) {}

  void Block() {
    std::unique_lock<std::mutex> l(mu_);
    ++entered_;
    cv_.notify_all();
    cv_.wait_for(l, max_wait_, [this] { return released_; });
  }
  void Release() {
    std::lock_guard<std::mutex> l(mu_);
    released_ = true;
    cv_.notify_all();
  }
  // Waits up to `timeout` for `n` calls to have entered Block().
  bool WaitEntered(int n, std::chrono::milliseconds timeout = std::chrono::milliseconds(10000)) {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, timeout, [&] { return entered_ >= n; });
  }
  int entered() const {
    std::lock_guard<std::mutex> l(mu_);
    return entered_;
  }

 private:
  const std::chrono::milliseconds max_wait_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int entered_ = 0;
  bool released_ = false;
};

// Milliseconds `f()` takes.
template <typename F>
double MillisecondsOf(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_PIPELINE_SLOW_CALLS_H_
