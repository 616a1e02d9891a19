// Background work outside the pipeline's arena: the library's one way to run
// code on a thread of its own (docs/architecture.md, "Background work").
//
// SerialQueue: closures run one at a time, in the order they were scheduled,
// on one thread the queue owns (started with the first Schedule). A host
// stream, the pipeline's reaper and the overlapped gradient reduction are
// each one SerialQueue. The queue owns each closure from Schedule until it
// has run and been destroyed. Thread-safe: Schedule, Drain and
// DiscardPending may be called from any threads at once, and Schedule from
// inside a closure of the same queue.
//
// RunWorkers: `workers` threads, each running one call of `work`, while the
// calling thread ticks (progress, an interrupt check); returns once every
// call has returned.
//
// Nothing here throws: a closure (or `work`, or `tick`) that lets an
// exception escape ends the process (std::terminate), as on any thread.
#ifndef SLUICE_CORE_BACKGROUND_H_
#define SLUICE_CORE_BACKGROUND_H_

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

namespace sluice {

class SerialQueue {
 public:
  // `name` names the thread for debuggers and `top` (its first 15 bytes).
  explicit SerialQueue(std::string name = "sluice-queue");
  // Runs every closure still queued, and those they schedule, then joins
  // the thread. REQUIRES: no other thread calls the queue any more, and the
  // destructor does not run on the queue's own thread.
  ~SerialQueue();

  SerialQueue(const SerialQueue&) = delete;
  SerialQueue& operator=(const SerialQueue&) = delete;

  // Queues `fn` to run after every closure scheduled before it. `fn` is
  // destroyed on the queue's thread once it has run. REQUIRES: fn.
  void Schedule(std::function<void()> fn);

  // Returns once every closure scheduled before the call has run and been
  // destroyed (or was discarded); closures scheduled meanwhile are not
  // waited for. REQUIRES: not called from a closure of this queue (it would
  // wait for itself; the process aborts with a message instead).
  void Drain();

  // Destroys, on the calling thread, the closures not yet started, and
  // returns how many; the one running (if any) goes on. Drain() after it
  // waits only for that one.
  size_t DiscardPending();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Runs work(w) for w = 0 .. workers - 1, each on a thread of its own (at
// least one). Meanwhile the calling thread calls tick() every `tick_every`,
// and once more after the last call of work has returned; then RunWorkers
// returns. An empty `tick` is not called.
void RunWorkers(int workers, const std::function<void(int)>& work,
                const std::function<void()>& tick = {},
                std::chrono::milliseconds tick_every = std::chrono::milliseconds(200));

// Runs work(0) on the calling thread and work(1) .. work(n - 1) each on a
// thread of its own, all at once; returns once every call has returned.
// For work that must share the caller's thread state (the training core's
// replica 0, whose device and backend the caller set up). n < 1 is one.
void RunTogether(int n, const std::function<void(int)>& work);

}  // namespace sluice

#endif  // SLUICE_CORE_BACKGROUND_H_
