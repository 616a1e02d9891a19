#include "sluice/pipeline/internal/autotune.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "sluice/pipeline/internal/context.h"

namespace sluice::pipeline_internal {
namespace {
constexpr double kGain = 1.04;  // a step must win 4% to be kept
// A step that costs nothing (down on an idle stage, more threads for one
// that waits) is undone only if throughput fell by more than this: a period
// of a few dozen elements is that noisy on a loaded machine, and a wrong
// undo freezes the parameter for kFreezeNs.
constexpr double kFreeStepLoss = 1.15;
constexpr int64_t kMinElements = 16;  // a period must see this many elements
constexpr int64_t kMaxPeriodNs = 200'000'000;
constexpr int64_t kFreezeNs = 2'000'000'000;  // undone steps are not retried for 2 s
}  // namespace

int64_t StepUp(int64_t v, int64_t max, double share, double cores, double budget) {
  int64_t next = std::min<int64_t>(max, share < 0.5 ? 2 * v : v + std::max<int64_t>(1, v / 4));
  if (share <= 0) return cores > budget + 0.25 ? v : next;
  {
    // The most extra units that fit; before, a step that did not fit whole
    // was not taken at all, so with 16 cores a compute map stepped down to
    // 14 or 15 never came back (15 + 15 / 4 = 18 > 16).
    const double room = (budget + 0.25 - cores) / share;
    const int64_t fit = room < 0 ? 0 : static_cast<int64_t>(std::min(room, 1e9));
    next = std::min<int64_t>(next, v + fit);
  }
  return std::max<int64_t>(next, v);
}

Autotuner::Autotuner(IteratorContext* ctx) : ctx_(ctx) {}

void Autotuner::Forget(Tunable* t) {
  frozen_until_.erase(t);
  frozen_down_until_.erase(t);
  last_busy_.erase(t);
  if (has_trial_ && trial_.tunable == t) has_trial_ = false;
}

void Autotuner::MaybeTick(int64_t now_ns, int64_t consumer_elements) {
  if (last_ns_ == 0) {
    last_ns_ = now_ns;
    last_elements_ = consumer_elements;
    return;
  }
  const int64_t dt = now_ns - last_ns_;
  if (dt < period_ns_) return;
  const int64_t n = consumer_elements - last_elements_;
  if (n < kMinElements && dt < 4 * kMaxPeriodNs) return;  // too few to measure
  const double rate = static_cast<double>(n) * 1e9 / static_cast<double>(dt);
  Tick(now_ns, rate);
  last_ns_ = now_ns;
  last_elements_ = consumer_elements;
}

void Autotuner::Set(Tunable* t, int64_t value, const std::string& reason) {
  t->value.store(value, std::memory_order_relaxed);
  Record(t, reason);
  if (t->on_change) t->on_change();
  ++steps_;
}

void Autotuner::Record(Tunable* t, const std::string& reason) {
  {
    std::lock_guard<std::mutex> l(t->stage->reason_mu);
    t->stage->tuner_reason = reason;
  }
  ctx_->AddTraceEvent({.phase = 'i',
                       .name = "autotune " + t->stage->name,
                       .tid = 0,
                       .ts_us = ctx_->TraceTimeUs(),
                       .reason = reason});
}

void Autotuner::Tick(int64_t now_ns, double rate) {
  ctx_->RecordCounters(now_ns);
  if (settle_ > 0) {
    --settle_;
    return;
  }
  if (has_trial_) {
    has_trial_ = false;
    Tunable* t = trial_.tunable;
    const int64_t tried = t->value.load();
    char msg[256];
    // A step up must win; a step down, or more threads for a stage that
    // waits (they cost no CPU), need only not lose.
    const bool free_step = tried < trial_.old_value || trial_.waits;
    if (rate > trial_.baseline * kGain || (free_step && rate > trial_.baseline / kFreeStepLoss)) {
      std::snprintf(msg, sizeof(msg), "%s %lld -> %lld kept: %.0f -> %.0f elements/s",
                    t->what.c_str(), static_cast<long long>(trial_.old_value),
                    static_cast<long long>(tried), trial_.baseline, rate);
      Record(t, msg);
      period_ns_ = std::max<int64_t>(period_ns_ * 5 / 4, 20'000'000);
    } else {
      std::snprintf(msg, sizeof(msg), "%s %lld -> %lld undone: %.0f -> %.0f elements/s",
                    t->what.c_str(), static_cast<long long>(trial_.old_value),
                    static_cast<long long>(tried), trial_.baseline, rate);
      Set(t, trial_.old_value, msg);
      // Only the direction that failed is frozen.
      (tried > trial_.old_value ? frozen_until_ : frozen_down_until_)[t] = now_ns + kFreezeNs;
      period_ns_ = std::min<int64_t>(period_ns_ * 3 / 2, kMaxPeriodNs);
      settle_ = 1;
    }
    return;
  }
  TryStep(rate, now_ns);
}

double Autotuner::CpuShare(Tunable* t) {
  StageCounters* c = t->stage;
  const int64_t cpu = c->cpu_sample_ns.load(std::memory_order_relaxed);
  const int64_t wall = c->wall_sample_ns.load(std::memory_order_relaxed);
  auto& last = last_sample_[c];
  double share = 1.0;  // unmeasured: assume compute
  if (wall - last.second > 1'000'000) {
    share = static_cast<double>(cpu - last.first) / static_cast<double>(wall - last.second);
    last = {cpu, wall};
  } else if (wall > 0) {
    share = static_cast<double>(cpu) / static_cast<double>(wall);
  }
  return std::clamp(share, 0.0, 1.0);
}

bool Autotuner::TryStep(double rate, int64_t now_ns) {
  std::vector<Tunable*> tunables = ctx_->TunablesSnapshot();
  if (tunables.empty()) return false;
  const int64_t dt = std::max<int64_t>(now_ns - last_ns_, 1);
  // CPU the tuned parallel stages use: parallelism x CPU share, in cores.
  std::map<const Tunable*, double> share;
  double cores = 0;
  for (Tunable* t : tunables) {
    if (t->what != "parallelism") continue;
    share[t] = CpuShare(t);
    cores += share[t] * static_cast<double>(t->value.load());
  }
  const double budget = static_cast<double>(ctx_->cpu_budget());
  // Utilisation of each tunable's stage: busy time per unit of parallelism.
  Tunable* up = nullptr;
  double up_load = 0;
  int64_t up_next = 0;
  Tunable* down = nullptr;
  double down_load = 1e9;
  for (Tunable* t : tunables) {
    const int64_t busy = t->stage->busy_ns.load(std::memory_order_relaxed);
    const bool seen = last_busy_.count(t) > 0;
    const int64_t prev = seen ? last_busy_[t] : busy;
    last_busy_[t] = busy;
    if (!seen) continue;  // no load known yet: neither up nor down
    const int64_t v = t->value.load();
    const double load =
        static_cast<double>(busy - prev) / static_cast<double>(dt) / static_cast<double>(v);
    const bool frozen = frozen_until_.count(t) && frozen_until_[t] > now_ns;
    const bool frozen_down = frozen_down_until_.count(t) && frozen_down_until_[t] > now_ns;
    const int64_t unit_bytes = t->bytes_per_unit.load(std::memory_order_relaxed);
    const bool ram_ok =
        unit_bytes == 0 || ctx_->memory().used() + unit_bytes <= ctx_->memory().limit();
    // A stage that mostly waits (I/O) doubles; compute grows by a quarter,
    // and only as far as the cores it would take stay within the CPU budget.
    int64_t next = 0;
    if (share.count(t)) {
      next = StepUp(v, t->max, share[t], cores, budget);
    } else {
      next = std::min<int64_t>(t->max, v + std::max<int64_t>(1, v / 4));
    }
    const bool cpu_ok = next > v;
    if (v < t->max && !frozen && ram_ok && cpu_ok && (load > up_load || up == nullptr)) {
      up = t;
      up_load = load;
      up_next = next;
    }
    if (v > t->min && !frozen_down && load < 0.25 && load < down_load) {
      down = t;
      down_load = load;
    }
  }
  Tunable* t = nullptr;
  int64_t next = 0;
  if (up != nullptr && up_load >= 0.5) {
    t = up;
    next = up_next;
  } else if (down != nullptr) {
    t = down;
    next = t->value.load() - 1;
  } else {
    return false;
  }
  trial_ = {t, t->value.load(), rate, t == up && share.count(t) && share[t] < 0.5};
  has_trial_ = true;
  char msg[200];
  std::snprintf(msg, sizeof(msg), "trying %s %lld -> %lld (per-unit load %.2f, cpu share %.2f)",
                t->what.c_str(), static_cast<long long>(trial_.old_value),
                static_cast<long long>(next), t == up ? up_load : down_load,
                share.count(t) ? share[t] : 0.0);
  Set(t, next, msg);
  settle_ = 1;
  return true;
}

}  // namespace sluice::pipeline_internal
