#include "sluice/pipeline/internal/reaper.h"

#include "sluice/core/background.h"

namespace sluice::pipeline_internal {
namespace {

SerialQueue& TheReaper() {
  static SerialQueue reaper("sluice-reaper");
  return reaper;
}

}  // namespace

void DestroyLater(std::function<void()> destroy) { TheReaper().Schedule(std::move(destroy)); }

void WaitForReaper() { TheReaper().Drain(); }

}  // namespace sluice::pipeline_internal
