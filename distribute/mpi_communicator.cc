// MpiCommunicator: blocking MPI collectives (MPI's fastest: its
// non-blocking ones run 2-5x slower for large buffers) watched by a thread
// that ends the job when one overruns its deadline, and MPI's lifetime
// (init on first use, barrier-then-finalize at exit).
#include "sluice/distribute/mpi_communicator.h"

// The C API only: MPI's deprecated C++ bindings would need their own library.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>

#include "sluice/core/background.h"

namespace sluice {
namespace {

// Process-wide MPI state.
std::mutex g_init_mu;
bool g_we_initialized = false;
std::atomic<bool> g_broken{false};  // a collective failed: abort at exit
std::chrono::milliseconds g_exit_timeout{0};

std::string MpiError(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string(text, static_cast<size_t>(len));
}

// Polls `req` until it completes or `timeout` passes: spinning briefly (low
// latency for small collectives), then yielding, then sleeping 50 us.
bool WaitFor(MPI_Request* req, std::chrono::milliseconds timeout, int* error) {
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + timeout;
  for (int64_t polls = 0;; ++polls) {
    int done = 0;
    *error = MPI_Test(req, &done, MPI_STATUS_IGNORE);
    if (*error != MPI_SUCCESS || done) return true;
    if ((polls & 255) == 0) {
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) return false;
      if (now - start > std::chrono::milliseconds(2)) {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      } else if (now - start > std::chrono::microseconds(200)) {
        sched_yield();
      }
    }
  }
}

// At exit (if sluice initialized MPI): every rank meets in a barrier before
// MPI_Finalize, which would otherwise hang on a rank that is gone or stuck.
void FinalizeAtExit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (!g_broken.load()) {
    MPI_Request req;
    int error = MPI_Ibarrier(MPI_COMM_WORLD, &req);
    if (error == MPI_SUCCESS && WaitFor(&req, g_exit_timeout, &error) && error == MPI_SUCCESS) {
      MPI_Finalize();
      return;
    }
    std::fprintf(stderr,
                 "sluice: at exit, not every MPI rank reached the final barrier within %lld ms; "
                 "aborting the job\n",
                 static_cast<long long>(g_exit_timeout.count()));
  } else {
    std::fprintf(stderr, "sluice: a collective failed earlier; aborting the MPI job at exit\n");
  }
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

Status EnsureInitialized(std::chrono::milliseconds timeout) {
  std::lock_guard<std::mutex> l(g_init_mu);
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) {
    int provided = MPI_THREAD_SINGLE;
    MPI_Query_thread(&provided);
    if (provided < MPI_THREAD_SERIALIZED) {
      return Status::FailedPrecondition(
          "MPI: the program initialized MPI below MPI_THREAD_SERIALIZED; sluice calls MPI from "
          "more than one thread (use MPI_Init_thread)");
    }
    return Status::OK();
  }
  int provided = MPI_THREAD_SINGLE;
  const int error = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
  if (error != MPI_SUCCESS) {
    return Status::Unavailable("MPI: MPI_Init_thread failed: " + MpiError(error));
  }
  if (provided < MPI_THREAD_SERIALIZED) {
    return Status::FailedPrecondition(
        "MPI: the library offers no thread support beyond "
        "MPI_THREAD_FUNNELED; sluice needs MPI_THREAD_SERIALIZED");
  }
  g_we_initialized = true;
  g_exit_timeout = timeout;
  std::atexit(FinalizeAtExit);
  return Status::OK();
}

MPI_Datatype MpiType(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return MPI_FLOAT;
    case DType::kFloat64: return MPI_DOUBLE;
    case DType::kInt32: return MPI_INT32_T;
    case DType::kInt64: return MPI_INT64_T;
    default: return MPI_UINT8_T;
  }
}

// Ends the job if a collective runs past its deadline: a blocked MPI call
// cannot be cancelled, so the error is printed (naming the ranks that are
// gone, as far as this host can tell) and MPI_Abort ends every rank.
//
// Arm() and Disarm() are a few relaxed atomic stores: no lock, no
// allocation, no wake-up. The watchdog thread polls every tenth of the
// timeout (10 ms to 1 s) instead of being told about each call: waking it
// per collective put a context switch on every all-reduce, which cost small
// collectives half their speed on a busy 2-core machine.
class Watchdog {
 public:
  explicit Watchdog(std::function<std::string()> suspects) : suspects_(std::move(suspects)) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> l(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    // ~SerialQueue then waits for Run() to return.
  }
  // Watches collective `seq` (`what`, a string literal) on `rank` until
  // Disarm().
  void Arm(const char* what, uint64_t seq, int rank, std::chrono::milliseconds timeout) {
    if (!started_.load(std::memory_order_acquire)) Start();
    what_.store(what, std::memory_order_relaxed);
    seq_.store(seq, std::memory_order_relaxed);
    rank_.store(rank, std::memory_order_relaxed);
    timeout_ms_.store(timeout.count(), std::memory_order_relaxed);
    const int64_t now = NowMs();
    deadline_ms_.store(now + std::max<int64_t>(timeout.count(), 1), std::memory_order_release);
  }
  void Disarm() { deadline_ms_.store(0, std::memory_order_release); }

 private:
  static int64_t NowMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  void Start() {
    std::lock_guard<std::mutex> l(mu_);
    if (started_.load(std::memory_order_relaxed)) return;
    watcher_.Schedule([this] { Run(); });  // its one closure, until quit_
    started_.store(true, std::memory_order_release);
  }
  void Run() {
    std::unique_lock<std::mutex> l(mu_);
    while (!quit_) {
      const int64_t timeout = timeout_ms_.load(std::memory_order_relaxed);
      const int64_t tick = std::clamp<int64_t>(timeout / 10, 10, 1000);
      cv_.wait_for(l, std::chrono::milliseconds(tick));
      const int64_t deadline = deadline_ms_.load(std::memory_order_acquire);
      if (quit_ || deadline == 0 || NowMs() < deadline) continue;
      std::fprintf(stderr,
                   "sluice: Unavailable: MPI %s #%llu on rank %d did not complete within %lld ms: "
                   "%s; aborting the MPI job\n",
                   what_.load(std::memory_order_relaxed),
                   static_cast<unsigned long long>(seq_.load(std::memory_order_relaxed)),
                   rank_.load(std::memory_order_relaxed), static_cast<long long>(timeout),
                   suspects_().c_str());
      std::fflush(stderr);
      g_broken.store(true);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }

  std::function<std::string()> suspects_;
  std::mutex mu_;
  std::condition_variable cv_;  // only to stop the thread
  bool quit_ = false;
  std::atomic<bool> started_{false};
  std::atomic<const char*> what_{""};
  std::atomic<uint64_t> seq_{0};
  std::atomic<int> rank_{0};
  std::atomic<int64_t> timeout_ms_{1000};
  std::atomic<int64_t> deadline_ms_{0};  // 0: disarmed
  // Runs Run(); last, so that Run() ends before the rest goes.
  SerialQueue watcher_{"sluice-mpi-watch"};
};

MPI_Op MpiOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kMin: return MPI_MIN;
    case ReduceOp::kMax: return MPI_MAX;
    default: return MPI_SUM;
  }
}

// kMean of 2 ranks in MPI's own pass: (in + inout) / 2, the same sum and
// the same quotient as MPI_SUM then Divide (with 2 ranks every element is
// reduced exactly once, and a + b == b + a), without a pass of its own.
template <typename T>
void SumHalve(void* in, void* inout, int* len, MPI_Datatype*) {
  const T* a = static_cast<const T*>(in);
  T* b = static_cast<T*>(inout);
  constexpr size_t kBlock = 32 / sizeof(T);
  const size_t n = static_cast<size_t>(*len);
  const T two = 2;
  size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {  // blocks the compiler vectorizes
    T block[kBlock];
    for (size_t j = 0; j < kBlock; ++j) block[j] = (a[i + j] + b[i + j]) / two;
    for (size_t j = 0; j < kBlock; ++j) b[i + j] = block[j];
  }
  for (; i < n; ++i) b[i] = (a[i] + b[i]) / two;
}

MPI_Op MeanOfTwo(DType dtype) {
  static MPI_Op ops[2] = {MPI_OP_NULL, MPI_OP_NULL};
  static std::once_flag once;
  std::call_once(once, [] {
    MPI_Op_create(&SumHalve<float>, 1, &ops[0]);
    MPI_Op_create(&SumHalve<double>, 1, &ops[1]);
  });
  return ops[dtype == DType::kFloat32 ? 0 : 1];
}

// Where a rank runs, gathered once, to tell which ones have exited.
struct Peer {
  char host[64];
  int64_t pid;
};

class MpiComm : public Communicator {
 public:
  MpiComm(MPI_Comm comm, int rank, int size, std::chrono::milliseconds timeout,
          std::shared_ptr<const std::vector<Peer>> peers)
      : Communicator(rank, size),
        comm_(comm),
        timeout_(timeout),
        peers_(std::move(peers)),
        watchdog_([this] { return Suspects(); }) {}
  ~MpiComm() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && broken_.ok()) MPI_Comm_free(&comm_);
  }

  std::string Describe() const override {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    std::string v(version, static_cast<size_t>(len));
    v = v.substr(0, v.find_first_of(",\n"));
    return "MPI (" + v + "), rank " + std::to_string(rank()) + " of " + std::to_string(size());
  }

  Status Barrier() override {
    std::lock_guard<std::mutex> l(mu_);
    return Complete("barrier", [&] { return MPI_Barrier(comm_); });
  }

  Status Broadcast(void* data, size_t bytes, int root) override {
    if (root < 0 || root >= size()) {
      return Status::InvalidArgument("broadcast: root " + std::to_string(root) + " outside [0, " +
                                     std::to_string(size()) + ")");
    }
    std::lock_guard<std::mutex> l(mu_);
    size_t done = 0;
    do {  // in pieces of at most INT_MAX bytes (MPI counts are ints)
      const size_t n = std::min<size_t>(bytes - done, INT_MAX);
      SLUICE_RETURN_IF_ERROR(Complete("broadcast", [&] {
        return MPI_Bcast(static_cast<char*>(data) + done, static_cast<int>(n), MPI_BYTE, root,
                         comm_);
      }));
      done += n;
    } while (done < bytes);
    return Status::OK();
  }

  Status AllGather(const void* in, void* out, size_t bytes) override {
    if (bytes > INT_MAX) {
      return Status::InvalidArgument("all-gather: " + std::to_string(bytes) +
                                     " bytes per rank; at most 2 GiB");
    }
    std::lock_guard<std::mutex> l(mu_);
    return Complete("all-gather", [&] {
      return MPI_Allgather(in, static_cast<int>(bytes), MPI_BYTE, out, static_cast<int>(bytes),
                           MPI_BYTE, comm_);
    });
  }

  Status AllReduce(void* data, size_t count, DType dtype, ReduceOp op) override {
    SLUICE_RETURN_IF_ERROR(CheckReduce(dtype, op));
    std::lock_guard<std::mutex> l(mu_);
    const size_t esize = DTypeSize(dtype);
    const bool halve = op == ReduceOp::kMean && size() == 2;
    const MPI_Op mpi_op = halve ? MeanOfTwo(dtype) : MpiOp(op);
    for (size_t done = 0; done < count;) {
      const size_t n = std::min<size_t>(count - done, size_t{1} << 30);
      SLUICE_RETURN_IF_ERROR(Complete("all-reduce", [&] {
        return MPI_Allreduce(MPI_IN_PLACE, static_cast<char*>(data) + done * esize,
                             static_cast<int>(n), MpiType(dtype), mpi_op, comm_);
      }));
      done += n;
    }
    if (op == ReduceOp::kMean && !halve) Divide(data, count, dtype, size());
    return Status::OK();
  }

  Result<std::unique_ptr<Communicator>> Duplicate() override {
    std::lock_guard<std::mutex> l(mu_);
    MPI_Comm dup = MPI_COMM_NULL;
    SLUICE_RETURN_IF_ERROR(Complete("duplicate", [&] { return MPI_Comm_dup(comm_, &dup); }));
    MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
    return std::unique_ptr<Communicator>(
        std::make_unique<MpiComm>(dup, rank(), size(), timeout_, peers_));
  }

  void Abort(const Status& why) override {
    std::fprintf(stderr, "sluice: rank %d of %d aborts the MPI job: %s\n", rank(), size(),
                 why.ToString().c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

 private:
  // Runs one blocking collective under the watchdog.
  template <typename Call>
  Status Complete(const char* what, Call call) {
    if (!broken_.ok()) return broken_;
    const uint64_t seq = seq_++;
    watchdog_.Arm(what, seq, rank(), timeout_);
    const int error = call();
    watchdog_.Disarm();
    if (error != MPI_SUCCESS) {
      return Break(Status::Unavailable("MPI " + std::string(what) + " #" + std::to_string(seq) +
                                       " failed on rank " + std::to_string(rank()) + ": " +
                                       MpiError(error)));
    }
    return Status::OK();
  }

  Status Break(Status s) {
    broken_ = s;
    g_broken.store(true);
    return s;
  }

  // Which ranks are gone, as far as this host can tell.
  std::string Suspects() const {
    char host[64] = {};
    gethostname(host, sizeof(host) - 1);
    std::string gone, remote;
    for (int r = 0; r < size(); ++r) {
      const Peer& p = (*peers_)[static_cast<size_t>(r)];
      if (r == rank()) continue;
      if (std::strncmp(p.host, host, sizeof(host)) != 0) {
        remote += (remote.empty() ? "" : ", ") + std::to_string(r);
      } else if (kill(static_cast<pid_t>(p.pid), 0) != 0 && errno == ESRCH) {
        gone += (gone.empty() ? "" : ", ") + std::string("rank ") + std::to_string(r) + " (pid " +
                std::to_string(p.pid) + ")";
      }
    }
    std::string out;
    if (!gone.empty()) out = gone + " exited";
    if (out.empty()) out = "every rank on this host is alive but did not take part";
    if (!remote.empty()) out += "; ranks " + remote + " run on other hosts and were not checked";
    return out;
  }

  MPI_Comm comm_;
  const std::chrono::milliseconds timeout_;
  std::shared_ptr<const std::vector<Peer>> peers_;
  std::mutex mu_;
  uint64_t seq_ = 0;
  Status broken_;
  Watchdog watchdog_;  // last: its thread stops before the rest goes
};

}  // namespace

bool MpiCommunicator::Available() { return true; }

Result<std::unique_ptr<Communicator>> MpiCommunicator::Create(CommunicatorOptions options) {
  const auto timeout = options.timeout.count() > 0 ? options.timeout : DefaultCollectiveTimeout();
  SLUICE_RETURN_IF_ERROR(EnsureInitialized(timeout));
  MPI_Comm comm = MPI_COMM_NULL;
  int error = MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  if (error != MPI_SUCCESS) return Status::Unavailable("MPI: MPI_Comm_dup: " + MpiError(error));
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  Peer me{};
  gethostname(me.host, sizeof(me.host) - 1);
  me.pid = static_cast<int64_t>(getpid());
  auto peers = std::make_shared<std::vector<Peer>>(static_cast<size_t>(size));
  error = MPI_Allgather(&me, sizeof(Peer), MPI_BYTE, peers->data(), sizeof(Peer), MPI_BYTE, comm);
  if (error != MPI_SUCCESS) {
    return Status::Unavailable("MPI: exchanging host names: " + MpiError(error));
  }
  return std::unique_ptr<Communicator>(
      std::make_unique<MpiComm>(comm, rank, size, timeout, std::move(peers)));
}

}  // namespace sluice
