#include "sluice/pipeline/internal/context.h"

#include <time.h>

#include <sched.h>
#include <sys/resource.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <random>
#include <thread>

#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>

#include "sluice/core/json_writer.h"
#include "sluice/pipeline/internal/autotune.h"
#include "sluice/pipeline/internal/node.h"

namespace sluice::pipeline_internal {

// Destroyed in reverse order of the members: the node, then the graph, then
// the arena (the destructor of IteratorContext has waited for the graph).
struct IteratorContext::Executor {
  using Node = tbb::flow::function_node<std::function<void()>, tbb::flow::continue_msg>;
  std::unique_ptr<tbb::task_arena> arena;
  std::unique_ptr<tbb::flow::graph> graph;
  std::unique_ptr<Node> node;
};
namespace {
constexpr size_t kMaxTraceEvents = 200'000;

uint64_t RandomSeed() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

int64_t ReadCgroupLimit() {
  std::ifstream f("/sys/fs/cgroup/memory.max");
  std::string s;
  if (f >> s && s != "max") {
    try {
      return std::stoll(s);
    } catch (...) {
    }
  }
  return -1;
}
// TBB starts (hardware threads - 1) workers for the whole process. A
// pipeline whose arena has T slots needs T of them, since its arena reserves
// no slot for the consumer thread (which helps from outside). Raise the
// process limit to the largest arena seen; never lower it. (TBB creates the
// threads only when tasks need them.)
void EnsureWorkers(int budget) {
  static std::mutex mu;
  static std::unique_ptr<tbb::global_control> control;
  static int current = 0;
  std::lock_guard<std::mutex> l(mu);
  const int want = std::max(budget + 1, static_cast<int>(std::thread::hardware_concurrency()));
  if (want <= current) return;
  control = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism,
                                                  static_cast<size_t>(want));
  current = want;
}
}  // namespace

int DefaultCpuBudget() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
}

int64_t DefaultRamBudget() {
  int64_t avail = -1;
  std::ifstream f("/proc/meminfo");
  std::string key;
  int64_t value;
  std::string unit;
  while (f >> key >> value >> unit) {
    if (key == "MemAvailable:") {
      avail = value * 1024;
      break;
    }
  }
  if (avail < 0) {
    struct sysinfo si;
    if (sysinfo(&si) == 0) avail = static_cast<int64_t>(si.freeram) * si.mem_unit;
  }
  const int64_t cg = ReadCgroupLimit();
  if (cg > 0 && (avail < 0 || cg < avail)) avail = cg;
  if (avail <= 0) avail = int64_t{1} << 30;
  return avail / 2;
}

namespace {
// The thread's CPU time (ns) and voluntary context switches so far.
void ThreadUsage(int64_t* cpu_ns, int64_t* blocks) {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  *cpu_ns = (int64_t{u.ru_utime.tv_sec} + u.ru_stime.tv_sec) * 1'000'000'000 +
            (int64_t{u.ru_utime.tv_usec} + u.ru_stime.tv_usec) * 1000;
  *blocks = u.ru_nvcsw;
}
}  // namespace

CallTimer::CallTimer(StageCounters* c, int64_t calls, bool count_busy, int sample_every)
    : c_(c),
      calls_(calls),
      count_busy_(count_busy),
      sampled_(c->slow_calls.load(std::memory_order_relaxed) ||
               c->calls.fetch_add(1, std::memory_order_relaxed) % sample_every == 0),
      wall0_(count_busy || sampled_ ? NowNs() : 0) {
  if (sampled_) ThreadUsage(&cpu0_, &blocks0_);
}

CallTimer::~CallTimer() {
  if (!count_busy_ && !sampled_) return;  // nothing to time
  const int64_t wall = NowNs() - wall0_;
  if (count_busy_) c_->busy_ns.fetch_add(wall, std::memory_order_relaxed);
  if (sampled_) {
    int64_t cpu1 = 0, blocks1 = 0;
    ThreadUsage(&cpu1, &blocks1);
    // Never blocked: compute, whatever share of the wall time the machine
    // gave the thread.
    const int64_t cpu = blocks1 == blocks0_ ? wall : std::min(cpu1 - cpu0_, wall);
    c_->cpu_sample_ns.fetch_add(cpu, std::memory_order_relaxed);
    c_->wall_sample_ns.fetch_add(wall, std::memory_order_relaxed);
    c_->slow_calls.store(wall > 20'000 * calls_, std::memory_order_relaxed);
    if (wall > 0) {
      const int64_t now = std::clamp<int64_t>(cpu * 1000 / wall, 0, 1000);
      const int64_t old = c_->cpu_permille.load(std::memory_order_relaxed);
      c_->cpu_permille.store((3 * old + now) / 4, std::memory_order_relaxed);
    }
  }
}

std::string ByteSize(int64_t bytes) {
  char buf[96];
  const double b = static_cast<double>(bytes);
  if (bytes >= (int64_t{1} << 30)) {
    std::snprintf(buf, sizeof(buf), "%.1f GiB (%lld bytes)", b / (1 << 30),
                  static_cast<long long>(bytes));
  } else if (bytes >= (int64_t{1} << 20)) {
    std::snprintf(buf, sizeof(buf), "%.1f MiB (%lld bytes)", b / (1 << 20),
                  static_cast<long long>(bytes));
  } else {
    std::snprintf(buf, sizeof(buf), "%lld bytes", static_cast<long long>(bytes));
  }
  return buf;
}

Status TooBigForBudget(const std::string& stage, const std::string& what, int64_t bytes,
                       int64_t limit) {
  return Status::ResourceExhausted("stage '" + stage + "': " + what + " needs " + ByteSize(bytes) +
                                   ", more than the whole ram_budget of " + ByteSize(limit) +
                                   "; raise Options::ram_budget");
}

Status MemoryBudget::CheckRequired(const std::string& stage) const {
  const int64_t need = required();
  if (need <= limit_) return Status::OK();
  return Status::ResourceExhausted(
      "stage '" + stage + "': what the pipeline must hold to go on, " + ByteSize(need) +
      " (the read buffers of its open files, batches being built, shuffle buffers, in-memory "
      "caches, room for one element per parallel stage), is more than the whole ram_budget of " +
      ByteSize(limit_) +
      "; raise Options::ram_budget, or open fewer files at once (cycle_length, "
      "num_parallel_reads) or use smaller batches and buffers");
}

bool MemoryBudget::TryCharge(int64_t n) {
  int64_t cur = used_.load(std::memory_order_relaxed);
  do {
    if (n > 0 && cur + n > limit_) return false;
  } while (!used_.compare_exchange_weak(cur, cur + n, std::memory_order_relaxed));
  int64_t p = peak_.load(std::memory_order_relaxed);
  while (cur + n > p && !peak_.compare_exchange_weak(p, cur + n, std::memory_order_relaxed)) {
  }
  return true;
}

void MemoryBudget::Charge(int64_t n) {
  const int64_t now = used_.fetch_add(n, std::memory_order_relaxed) + n;
  int64_t p = peak_.load(std::memory_order_relaxed);
  while (now > p && !peak_.compare_exchange_weak(p, now, std::memory_order_relaxed)) {
  }
}

IteratorContext::IteratorContext(const Options& o)
    : cpu_budget_(o.cpu_budget.value_or(DefaultCpuBudget())),
      max_threads_(
          std::max(1, o.max_threads.value_or(std::max(1, cpu_budget_) * kOversubscription))),
      seed_(o.seed ? *o.seed : RandomSeed()),
      deterministic_(o.deterministic.value_or(true)),
      autotune_(o.autotune.value_or(true)),
      map_and_batch_fusion_(o.map_and_batch_fusion.value_or(true)),
      start_ns_(NowNs()),
      memory_(o.ram_budget.value_or(DefaultRamBudget())),
      cpu_(std::max(1, cpu_budget_)) {
  EnsureWorkers(max_threads_);
  exec_ = std::make_unique<Executor>();
  // No slot reserved for a master: the consumer helps from outside.
  exec_->arena = std::make_unique<tbb::task_arena>(max_threads_, 0);
  // A graph runs its tasks in the arena it was made in.
  exec_->arena->execute([this] { exec_->graph = std::make_unique<tbb::flow::graph>(); });
  exec_->node = std::make_unique<Executor::Node>(
      *exec_->graph, tbb::flow::unlimited, [this](const std::function<void()>& work) {
        SLUICE_TSAN_ACQUIRE(&submitted_);
        running_tasks_.fetch_add(1, std::memory_order_acq_rel);
        work();
        running_tasks_.fetch_sub(1, std::memory_order_acq_rel);
        SLUICE_TSAN_RELEASE(&finished_);
        return tbb::flow::continue_msg();
      });
  tuner_ = std::make_unique<Autotuner>(this);
}

IteratorContext::~IteratorContext() {
  Cancel();
  exec_->arena->execute([this] { exec_->graph->wait_for_all(); });
  SLUICE_TSAN_ACQUIRE(&finished_);
  exec_->node.reset();
}

void IteratorContext::Submit(std::function<void()> work) {
  SLUICE_TSAN_RELEASE(&submitted_);
  exec_->node->try_put(std::move(work));
}

void IteratorContext::Cancel() {
  cancelled_.store(true);
  cpu_.Cancel();
}

bool IteratorContext::WaitUntilIdle(int64_t timeout_ns) const {
  const int64_t deadline = NowNs() + timeout_ns;
  while (running_tasks_.load(std::memory_order_acquire) > 0) {
    if (NowNs() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return true;
}

void IteratorContext::RegisterTree(const DatasetNode& root, uint64_t scope) {
  std::lock_guard<std::mutex> l(mu_);
  RegisterLocked(root, MixSeed(scope, 0x726f6f74));  // "root"
}

void IteratorContext::RegisterLocked(const DatasetNode& node, uint64_t key) {
  Alias& a = aliases_[&node];
  if (a.refs == 0) a.key = key;
  ++a.refs;
  const uint64_t own = a.key;  // a node shared by two trees keeps its first key
  const auto& inputs = node.inputs();
  for (size_t i = 0; i < inputs.size(); ++i) RegisterLocked(*inputs[i], MixSeed(own, i + 1));
}

void IteratorContext::UnregisterTree(const DatasetNode& root) {
  std::lock_guard<std::mutex> l(mu_);
  UnregisterLocked(root);
}

void IteratorContext::UnregisterLocked(const DatasetNode& node) {
  for (const auto& in : node.inputs()) UnregisterLocked(*in);
  auto it = aliases_.find(&node);
  if (it != aliases_.end() && it->second.refs > 0 && --it->second.refs == 0) aliases_.erase(it);
}

uint64_t IteratorContext::KeyOf(const DatasetNode* node) {
  std::lock_guard<std::mutex> l(mu_);
  return KeyOfLocked(node);
}

uint64_t IteratorContext::KeyOfLocked(const DatasetNode* node) {
  auto it = aliases_.find(node);
  if (it != aliases_.end()) return it->second.key;
  // Not under a registered root (a dataset built while iterating): known
  // by its address for the rest of the pipeline's life.
  const uint64_t key = MixSeed(reinterpret_cast<uintptr_t>(node), 0x61646472);  // "addr"
  aliases_[node] = Alias{key, 0};
  return key;
}

StageCounters* IteratorContext::CountersFor(const DatasetNode* node) {
  std::lock_guard<std::mutex> l(mu_);
  auto& slot = counters_[KeyOfLocked(node)];
  if (!slot) {
    slot = std::make_unique<StageCounters>();
    slot->kind = node->kind();
    // Unique names: "map", "map_1", "map_2"... (skipping names users took).
    std::string name = node->name();
    int& uses = name_uses_[node->name()];
    while (!stage_names_.insert(name).second) name = node->name() + "_" + std::to_string(++uses);
    slot->name = name;
    stage_order_.push_back(slot.get());
  }
  return slot.get();
}

uint64_t IteratorContext::StageSeed(const DatasetNode* node,
                                    std::optional<uint64_t> explicit_seed) {
  if (explicit_seed) return *explicit_seed;
  std::lock_guard<std::mutex> l(mu_);
  return MixSeed(seed_, KeyOfLocked(node));
}

Tunable* IteratorContext::AddTunable(StageCounters* stage, std::string what, int64_t initial,
                                     int64_t min, int64_t max, int64_t bytes_per_unit,
                                     std::function<void()> on_change) {
  auto t = std::make_unique<Tunable>();
  t->stage = stage;
  t->what = std::move(what);
  t->min = min;
  t->max = std::max(min, max);
  t->value = std::clamp(initial, t->min, t->max);
  t->bytes_per_unit = bytes_per_unit;
  t->on_change = std::move(on_change);
  stage->autotuned = autotune_;
  Tunable* raw = t.get();
  std::lock_guard<std::mutex> l(mu_);
  if (autotune_)
    tunables_.push_back(std::move(t));
  else
    kept_.push_back(std::move(t));
  return raw;
}

void IteratorContext::RemoveTunable(Tunable* t) {
  std::scoped_lock l(tuner_mu_, mu_);
  tuner_->Forget(t);
  auto drop = [t](std::vector<std::unique_ptr<Tunable>>& v) {
    v.erase(std::remove_if(v.begin(), v.end(), [t](auto& p) { return p.get() == t; }), v.end());
  };
  drop(tunables_);
  drop(kept_);
}

std::vector<Tunable*> IteratorContext::TunablesSnapshot() const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<Tunable*> out;
  for (auto& t : tunables_) out.push_back(t.get());
  return out;
}

void IteratorContext::OnConsumerElement() {
  const int64_t n = consumer_elements_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (!autotune_ && (n & 63) != 0) return;
  std::unique_lock<std::mutex> l(tuner_mu_, std::try_to_lock);
  if (!l.owns_lock()) return;
  const int64_t now = NowNs();
  if (autotune_) {
    tuner_->MaybeTick(now, n);
  } else if (now - trace_last_ns_ > 100'000'000) {
    RecordCounters(now);
  }
}

double IteratorContext::TraceTimeUs() const {
  return static_cast<double>(NowNs() - start_ns_) / 1e3;
}

void IteratorContext::AddTraceEvent(TraceEvent event) {
  std::lock_guard<std::mutex> l(trace_mu_);
  if (trace_.size() >= kMaxTraceEvents) trace_.pop_front();
  trace_.push_back(std::move(event));
}

void IteratorContext::RecordCounters(int64_t now_ns) {
  std::vector<StageCounters*> stages;
  {
    std::lock_guard<std::mutex> l(mu_);
    stages = stage_order_;
  }
  const int64_t dt = trace_last_ns_ == 0 ? 0 : now_ns - trace_last_ns_;
  trace_last_ns_ = now_ns;
  const double ts = static_cast<double>(now_ns - start_ns_) / 1e3;
  for (size_t i = 0; i < stages.size(); ++i) {
    StageCounters* s = stages[i];
    const int64_t busy = s->busy_ns.load(std::memory_order_relaxed);
    const int64_t prev = trace_busy_.count(s) ? trace_busy_[s] : busy;
    trace_busy_[s] = busy;
    const double util = dt > 0 ? static_cast<double>(busy - prev) / static_cast<double>(dt) : 0;
    AddTraceEvent({.phase = 'C',
                   .name = s->name,
                   .tid = i + 1,
                   .ts_us = ts,
                   .busy_threads = util,
                   .buffer_depth = s->buffer_depth.load(),
                   .parallelism = s->parallelism.load()});
  }
}

std::string IteratorContext::TraceJson() const {
  JsonWriter w;
  w.BeginObject();
  w.Key("displayTimeUnit").String("ms");
  w.Key("traceEvents").BeginArray();
  const auto metadata = [&](const char* name, std::optional<size_t> tid, std::string_view value) {
    w.BeginObject().Key("name").String(name).Key("ph").String("M").Key("pid").Int(1);
    if (tid) w.Key("tid").Int(static_cast<int64_t>(*tid));
    w.Key("args").BeginObject().Key("name").String(value).EndObject();
    w.EndObject();
  };
  metadata("process_name", std::nullopt, "sluice pipeline");
  {
    std::lock_guard<std::mutex> l(mu_);
    for (size_t i = 0; i < stage_order_.size(); ++i) {
      metadata("thread_name", i + 1, stage_order_[i]->name);
    }
  }
  std::lock_guard<std::mutex> l(trace_mu_);
  for (const TraceEvent& e : trace_) {
    w.BeginObject();
    w.Key("name").String(e.name);
    w.Key("ph").String(std::string_view(&e.phase, 1));
    if (e.phase == 'i') w.Key("s").String("g");  // a global instant event
    w.Key("pid").Int(1);
    w.Key("tid").Int(static_cast<int64_t>(e.tid));
    w.Key("ts").Double(e.ts_us);
    w.Key("args").BeginObject();
    if (e.phase == 'C') {
      w.Key("busy_threads").Double(e.busy_threads, 4);
      w.Key("buffer_depth").Int(e.buffer_depth);
      w.Key("parallelism").Int(e.parallelism);
    } else {
      w.Key("reason").String(e.reason);
    }
    w.EndObject();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return w.Take() + "\n";
}

IteratorStats IteratorContext::Snapshot() const {
  IteratorStats st;
  st.elapsed_ns = NowNs() - start_ns_;
  st.elements = consumer_elements_.load();
  st.cpu_budget = cpu_budget_;
  st.ram_budget = memory_.limit();
  st.ram_used = memory_.used();
  st.ram_peak = memory_.peak();
  std::lock_guard<std::mutex> l(mu_);
  st.tuner_steps = tuner_->steps();
  st.cpu_wait_ns = cpu_.wait_ns();
  for (const StageCounters* c : stage_order_) {
    if (c->kind == "options") continue;  // with_options has no run-time stage
    StageStats s;
    s.name = c->name;
    s.kind = c->kind;
    s.elements = c->elements.load();
    s.bytes = c->bytes.load();
    if (c->async) {
      s.busy_ns = c->busy_ns.load();
      s.wait_ns = c->wait_ns.load();
      s.input_wait_ns = c->input_wait_ns.load();
      s.room_wait_ns = c->room_wait_ns.load();
      s.input_hold_ns = c->input_hold_ns.load();
      s.lock_wait_ns = c->lock_wait_ns.load();
    } else {
      int64_t self = c->total_ns.load();
      for (const StageCounters* in : c->inputs) self -= in->total_ns.load();
      s.busy_ns = std::max<int64_t>(0, self) + c->busy_ns.load();
    }
    s.reads_ahead = c->reads_ahead.load();
    s.reads_in_place = c->reads_in_place.load();
    s.read_wait_ns = c->read_wait_ns.load();
    s.parallelism = c->parallelism.load();
    s.buffer_depth = c->buffer_depth.load();
    s.buffer_capacity = c->buffer_capacity.load();
    s.buffered_bytes = c->buffered_bytes.load();
    s.autotuned = c->autotuned.load();
    s.errors_ignored = c->errors_ignored.load();
    s.tokens = c->tokens.load();
    s.padding_tokens = c->padding_tokens.load();
    {
      std::lock_guard<std::mutex> rl(c->reason_mu);
      s.tuner_reason = c->tuner_reason;
      s.errors = c->errors_kept;
    }
    st.stages.push_back(std::move(s));
  }
  return st;
}

}  // namespace sluice::pipeline_internal
