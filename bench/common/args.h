// CommandLine: the command lines of the bench programs with flags of their own
// (make_imagenet_like, pipeline_autotune_bench, gpu_jpeg_bench, the peer
// programs sluice_cases and bare_decode). Standard C++ only, so that a
// program that measures a bare library (bare_decode) links nothing of
// sluice's.
//
//   struct { std::string mode; int threads = 4; bool quick = false; } a;
//   CommandLine args("bare_decode", "--mode decode --images DIR | --mode read --files GLOB");
//   args.Add("--mode", &a.mode).Add("--threads", &a.threads, 1, 1024).Switch("--quick", &a.quick);
//   args.Parse(argc, argv);
//
// A flag's value follows it ("--threads 4") or an '=' ("--threads=4"); a
// switch takes none. Numbers must parse whole ("--threads 4x" is an error)
// and lie in the flag's range if it has one; a list ("--batches 64,128")
// is comma-separated numbers. --help (or -h) anywhere prints the usage on
// stdout and exits with status 0; a bad command line (an unknown flag, an
// extra argument, a missing or malformed value) prints "PROGRAM: what is
// wrong" and the usage on stderr and exits with status 2, as every program
// of the repository does (docs/architecture.md, "Command lines"). Nothing
// is run before Parse() returns.
//
// Ownership: the targets belong to the caller and must outlive Parse().
// Not thread-safe; used once at start-up.
#ifndef SLUICE_BENCH_COMMON_ARGS_H_
#define SLUICE_BENCH_COMMON_ARGS_H_

#include <cstdint>
#include <limits>
#include <string>
#include <variant>
#include <vector>

namespace sluice::bench {

// No limit on a number's range.
inline constexpr double kUnbounded = std::numeric_limits<double>::infinity();

class CommandLine {
 public:
  // `synopsis`: how the flags go together (and their defaults), printed
  // after the flag list.
  explicit CommandLine(std::string program, std::string synopsis = "");

  // A flag with a value. Numbers outside [lo, hi] are a usage error.
  CommandLine& Add(std::string flag, std::string* value);
  CommandLine& Add(std::string flag, int* value, double lo = -kUnbounded, double hi = kUnbounded);
  CommandLine& Add(std::string flag, int64_t* value, double lo = -kUnbounded,
                   double hi = kUnbounded);
  CommandLine& Add(std::string flag, uint64_t* value, double lo = 0, double hi = kUnbounded);
  CommandLine& Add(std::string flag, double* value, double lo = -kUnbounded,
                   double hi = kUnbounded);
  // "1,2,3": at least one integer, each in [lo, hi]. Replaces the default.
  CommandLine& Add(std::string flag, std::vector<int>* value, double lo = -kUnbounded,
                   double hi = kUnbounded);
  // A flag without a value: sets *value to true.
  CommandLine& Switch(std::string flag, bool* value);

  // Sets the targets from argv[1..argc), or exits as the top says.
  void Parse(int argc, char** argv) const;

  // "usage: PROGRAM [--flag VALUE]... [--switch]...", then the synopsis.
  std::string Usage() const;
  // "PROGRAM: MESSAGE" and the usage on stderr, exit status 2.
  [[noreturn]] void UsageError(const std::string& message) const;
  // "PROGRAM: MESSAGE" on stderr, exit status 1 (a failure after a good
  // command line).
  [[noreturn]] void Die(const std::string& message) const;

 private:
  struct Flag {
    std::string name;
    std::variant<std::string*, int*, int64_t*, uint64_t*, double*, std::vector<int>*, bool*> value;
    double lo, hi;
  };
  CommandLine& Push(Flag flag);
  const Flag* Find(const std::string& name) const;
  void Set(const Flag& f, const std::string& value) const;

  std::string program_;
  std::string synopsis_;
  std::vector<Flag> flags_;
};

}  // namespace sluice::bench

#endif  // SLUICE_BENCH_COMMON_ARGS_H_
