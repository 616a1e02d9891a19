// PeerArgs: the "--flag value" command lines of the peer programs
// (sluice_cases, bare_decode) and their shared helpers. Header-only and
// standard C++ only, so that bare_decode stays free of sluice's libraries.
//
//   Args a;
//   PeerArgs p("bare_decode", "--mode decode --images DIR | --mode read --files GLOB");
//   p.Add("--mode", &a.mode).Add("--threads", &a.threads).Add("--seconds", &a.seconds);
//   p.Parse(argc, argv);
//
// Every flag takes a value; numbers must parse whole ("--threads 4x" is an
// error). --help (or -h) prints the usage on stdout and exits with status
// 0; a bad command line (an unknown flag, a missing or malformed value)
// prints "PROGRAM: what is wrong" and the usage on stderr and exits with
// status 2, as every program of the repository does. Not thread-safe; used
// once at start-up.
#ifndef SLUICE_BENCH_PEERS_PEER_ARGS_H_
#define SLUICE_BENCH_PEERS_PEER_ARGS_H_

#include <glob.h>
#include <sys/resource.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <variant>
#include <vector>

namespace sluice::peers {

// Prints "PROGRAM: MESSAGE" to stderr and exits with status 1.
[[noreturn]] inline void Die(std::string_view program, const std::string& message) {
  std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(program.size()), program.data(),
               message.c_str());
  std::exit(1);
}

// Runs work(thread, stop) on `threads` threads for `seconds`; each returns
// its item count. Returns the total and sets *elapsed.
template <typename Work>
inline double RunFor(int threads, double seconds, Work work, double* elapsed) {
  std::atomic<bool> stop{false};
  std::vector<double> counts(threads, 0);
  std::vector<std::thread> pool;
  const auto t0 = std::chrono::steady_clock::now();
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] { counts[t] = work(t, stop); });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (std::thread& th : pool) th.join();
  *elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double total = 0;
  for (double c : counts) total += c;
  return total;
}

// The process's CPU time, context switches and minor page faults, for the
// usage over a timed interval (Usage::Json). glibc and Linux only.
struct Usage {
  double cpu_s = 0;
  long vcsw = 0, ivcsw = 0, minflt = 0;

  static Usage Now() {
    rusage r{};
    getrusage(RUSAGE_SELF, &r);
    Usage u;
    u.cpu_s = static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
              static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec) * 1e-6;
    u.vcsw = r.ru_nvcsw;
    u.ivcsw = r.ru_nivcsw;
    u.minflt = r.ru_minflt;
    return u;
  }
  // ,"cpus":...,"vcsw_per_s":...,"ivcsw_per_s":...,"minflt_per_s":... for
  // the interval from `start` to now, `seconds` long (cpus: CPU seconds per
  // second, the cores the process kept busy).
  static std::string Json(const Usage& start, double seconds) {
    const Usage end = Now();
    char s[200];
    std::snprintf(s, sizeof(s),
                  ",\"cpus\":%.2f,\"vcsw_per_s\":%.0f,\"ivcsw_per_s\":%.0f,\"minflt_per_s\":%.0f",
                  (end.cpu_s - start.cpu_s) / seconds,
                  static_cast<double>(end.vcsw - start.vcsw) / seconds,
                  static_cast<double>(end.ivcsw - start.ivcsw) / seconds,
                  static_cast<double>(end.minflt - start.minflt) / seconds);
    return s;
  }
};

class PeerArgs {
 public:
  // `synopsis`: how the flags go together, printed after the flag list.
  explicit PeerArgs(std::string program, std::string synopsis = "")
      : program_(std::move(program)), synopsis_(std::move(synopsis)) {}

  template <typename T>
  PeerArgs& Add(std::string flag, T* value) {
    flags_.push_back({std::move(flag), value});
    return *this;
  }

  void Parse(int argc, char** argv) const {
    for (int i = 1; i < argc; ++i) {
      const std::string flag = argv[i];
      if (flag == "--help" || flag == "-h") {
        std::fputs(Usage().c_str(), stdout);
        std::exit(0);
      }
    }
    for (int i = 1; i < argc; ++i) {
      const std::string flag = argv[i];
      const Flag* f = Find(flag);
      if (f == nullptr) UsageError("unknown flag " + flag + " (flags: " + Names() + ")");
      if (i + 1 >= argc) UsageError("missing value after " + flag);
      const std::string value = argv[++i];
      if (!std::visit([&](auto* out) { return Set(value, out); }, f->value)) {
        UsageError(flag + ": expected a number, got '" + value + "'");
      }
    }
  }

  // "usage: PROGRAM [--flag VALUE]...", then the synopsis.
  std::string Usage() const {
    std::string usage = "usage: " + program_;
    for (const Flag& f : flags_) usage += " [" + f.name + " VALUE]";
    usage += "\n";
    if (!synopsis_.empty()) usage += "  " + program_ + " " + synopsis_ + "\n";
    return usage;
  }

  // "PROGRAM: MESSAGE" and the usage on stderr, exit status 2.
  [[noreturn]] void UsageError(const std::string& message) const {
    std::fprintf(stderr, "%s: %s\n%s", program_.c_str(), message.c_str(), Usage().c_str());
    std::exit(2);
  }

  [[noreturn]] void Die(const std::string& message) const { peers::Die(program_, message); }

 private:
  struct Flag {
    std::string name;
    std::variant<std::string*, int*, int64_t*, double*> value;
  };

  const Flag* Find(const std::string& name) const {
    for (const Flag& f : flags_) {
      if (f.name == name) return &f;
    }
    return nullptr;
  }
  std::string Names() const {
    std::string names;
    for (const Flag& f : flags_) names += (names.empty() ? "" : " ") + f.name;
    return names;
  }

  static bool Set(const std::string& s, std::string* out) {
    *out = s;
    return true;
  }
  template <typename T>
  static bool Set(const std::string& s, T* out) {
    const char* end = s.data() + s.size();
    auto [ptr, ec] = std::from_chars(s.data(), end, *out);
    return !s.empty() && ec == std::errc() && ptr == end;
  }

  std::string program_;
  std::string synopsis_;
  std::vector<Flag> flags_;
};

// The files `pattern` matches, sorted, without the record indexes (.idx)
// and labels files (-labels.txt) written next to shards. Dies naming the
// pattern if none is left.
inline std::vector<std::string> GlobRecordFiles(std::string_view program,
                                                const std::string& pattern) {
  glob_t g{};
  std::vector<std::string> out;
  if (glob(pattern.c_str(), 0, nullptr, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) {
      const std::string name = g.gl_pathv[i];
      if (!name.ends_with(".idx") && !name.ends_with("-labels.txt")) out.push_back(name);
    }
  }
  globfree(&g);
  if (out.empty()) Die(program, "no TFRecord files match " + pattern);
  return out;
}

}  // namespace sluice::peers

#endif  // SLUICE_BENCH_PEERS_PEER_ARGS_H_
