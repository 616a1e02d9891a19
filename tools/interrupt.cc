#include "interrupt.h"

#include <signal.h>

#include <atomic>

namespace sluice::tools {
namespace {

std::atomic<int> g_signal{0};

extern "C" void OnInterrupt(int sig) {
  if (g_signal.exchange(sig) != 0) {
    // The second one: give it its default meaning.
    ::signal(sig, SIG_DFL);
    ::raise(sig);
  }
}

}  // namespace

void InstallInterruptHandler() {
  struct sigaction sa = {};
  sa.sa_handler = OnInterrupt;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocked read returns EINTR
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

int InterruptSignal() { return g_signal.load(); }

int InterruptExitCode() { return 128 + InterruptSignal(); }

}  // namespace sluice::tools
