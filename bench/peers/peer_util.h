// The helpers the peer programs (sluice_cases, bare_decode) share: Die,
// RunFor (work on N threads for a time), Usage (the process's CPU time,
// context switches and page faults over an interval) and GlobRecordFiles.
// Their command lines go through bench/common/args.h. Header-only and
// standard C++ only, so that bare_decode stays free of sluice's libraries.
// Thread-safe: no shared state (RunFor's work runs on its threads).
#ifndef SLUICE_BENCH_PEERS_PEER_UTIL_H_
#define SLUICE_BENCH_PEERS_PEER_UTIL_H_

#include <glob.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>
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
  if (out.empty()) Die(program, "no files match " + pattern);
  return out;
}

}  // namespace sluice::peers

#endif  // SLUICE_BENCH_PEERS_PEER_UTIL_H_
