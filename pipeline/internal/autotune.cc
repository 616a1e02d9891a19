#include "sluice/pipeline/internal/autotune.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "sluice/pipeline/internal/context.h"

namespace sluice::pipeline_internal {
namespace {
constexpr double kGain = 1.04;        // a step must win 4% to be kept
constexpr int64_t kMinElements = 16;  // a period must see this many elements
constexpr int64_t kMaxPeriodNs = 200'000'000;
constexpr int64_t kFreezeNs = 2'000'000'000;  // undone steps are not retried for 2 s
}  // namespace

Autotuner::Autotuner(IteratorContext* ctx) : ctx_(ctx) {}

void Autotuner::Forget(Tunable* t) {
  frozen_until_.erase(t);
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
  std::string esc;
  for (char c : reason) esc += (c == '"' || c == '\\') ? '\'' : c;
  char buf[512];
  std::snprintf(buf, sizeof(buf),
                R"({"name":"autotune %s","ph":"i","s":"g","pid":1,"tid":0,"ts":%.3f,)"
                R"("args":{"reason":"%s"}})",
                t->stage->name.c_str(), ctx_->TraceTimeUs(), esc.c_str());
  ctx_->AddTraceEvent(buf);
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
    if (rate > trial_.baseline * kGain ||
        (tried < trial_.old_value && rate > trial_.baseline / kGain)) {
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
      frozen_until_[t] = now_ns + kFreezeNs;
      period_ns_ = std::min<int64_t>(period_ns_ * 3 / 2, kMaxPeriodNs);
      settle_ = 1;
    }
    return;
  }
  TryStep(rate, now_ns);
}

bool Autotuner::TryStep(double rate, int64_t now_ns) {
  std::vector<Tunable*> tunables = ctx_->TunablesSnapshot();
  if (tunables.empty()) return false;
  const int64_t dt = std::max<int64_t>(now_ns - last_ns_, 1);
  // Utilisation of each tunable's stage: busy time per unit of parallelism.
  Tunable* up = nullptr;
  double up_load = 0;
  Tunable* down = nullptr;
  double down_load = 1e9;
  for (Tunable* t : tunables) {
    const int64_t busy = t->stage->busy_ns.load(std::memory_order_relaxed);
    const int64_t prev = last_busy_.count(t) ? last_busy_[t] : busy;
    last_busy_[t] = busy;
    const int64_t v = t->value.load();
    const double load =
        static_cast<double>(busy - prev) / static_cast<double>(dt) / static_cast<double>(v);
    const bool frozen = frozen_until_.count(t) && frozen_until_[t] > now_ns;
    const bool ram_ok = t->bytes_per_unit == 0 ||
                        ctx_->memory().used() + t->bytes_per_unit <= ctx_->memory().limit();
    if (v < t->max && !frozen && ram_ok && (load > up_load || up == nullptr)) {
      up = t;
      up_load = load;
    }
    if (v > t->min && load < 0.25 && load < down_load) {
      down = t;
      down_load = load;
    }
  }
  Tunable* t = nullptr;
  int64_t next = 0;
  if (up != nullptr && up_load >= 0.5) {
    t = up;
    const int64_t v = t->value.load();
    next = std::min<int64_t>(t->max, v + std::max<int64_t>(1, v / 4));
  } else if (down != nullptr) {
    t = down;
    next = t->value.load() - 1;
  } else {
    return false;
  }
  trial_ = {t, t->value.load(), rate};
  has_trial_ = true;
  char msg[200];
  std::snprintf(msg, sizeof(msg), "trying %s %lld -> %lld (per-unit load %.2f)", t->what.c_str(),
                static_cast<long long>(trial_.old_value), static_cast<long long>(next),
                t == up ? up_load : down_load);
  Set(t, next, msg);
  settle_ = 1;
  return true;
}

}  // namespace sluice::pipeline_internal
