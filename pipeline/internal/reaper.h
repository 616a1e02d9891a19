// Reaper: finishes destroying pipelines whose tasks are still running.
//
// Destroying an Iterator must return promptly (docs/pipeline.md,
// "Cancellation"), but a map call already running cannot be interrupted, and
// its task still uses the stage, the context and the function. When such
// calls outlive the destructor's grace period, the Iterator hands what it
// owns to the reaper: one process-wide SerialQueue (core/background.h) that
// destroys each handed-over pipeline in turn, which waits for its running
// calls as the destructor would have. Nothing is freed while a task can
// still touch it.
//
// At process exit (static destruction) the reaper finishes the work it holds
// before its thread is joined, so a call still running delays exit as it
// would have delayed the destructor. Thread-safe.
#ifndef SLUICE_PIPELINE_INTERNAL_REAPER_H_
#define SLUICE_PIPELINE_INTERNAL_REAPER_H_

#include <functional>

namespace sluice::pipeline_internal {

// Runs `destroy` on the reaper's thread, after every destruction handed over
// before it.
void DestroyLater(std::function<void()> destroy);

// Returns once every destruction handed over so far has run (for tests).
void WaitForReaper();

}  // namespace sluice::pipeline_internal

#endif  // SLUICE_PIPELINE_INTERNAL_REAPER_H_
