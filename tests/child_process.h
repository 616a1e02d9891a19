// ChildProcess: runs a program in a child process that a test may kill at a
// moment of its choosing (the crash-safety tests of `sluice convert` and of
// checkpoint saving). Not thread-safe; one object per child.
#ifndef SLUICE_TESTS_CHILD_PROCESS_H_
#define SLUICE_TESTS_CHILD_PROCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

namespace sluice::testing {

class ChildProcess {
 public:
  // Starts argv[0] (a path) with `argv`, stdin from /dev/null and stdout and
  // stderr appended to `output` (/dev/null by default). Fails the test (and
  // returns a child that is not running) if it cannot start.
  ChildProcess(const std::vector<std::string>& argv, const std::string& output = "/dev/null");
  // Kills (SIGKILL) and reaps the child if it still runs.
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  void Kill(int signal);
  // Waits for the child: its exit status, or 128 + the signal that ended it,
  // or -1 if it never started.
  int Wait();
  bool running() const { return pid_ > 0 && !reaped_; }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = -1;
};

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_CHILD_PROCESS_H_
