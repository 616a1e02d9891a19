// Interrupts (Ctrl-C, SIGTERM) as a flag the long commands poll, so that
// they stop cleanly: unfinished outputs are abandoned (their temporary files
// removed), what is complete stays, and the command says how to go on.
//
// InstallInterruptHandler() sets SIGINT and SIGTERM handlers (without
// SA_RESTART, so a blocking read returns EINTR) that only record the signal;
// a second signal of the same kind restores the default action first, so a
// second Ctrl-C always ends the process. Process-wide; the functions are
// thread-safe and the handler is async-signal-safe.
#ifndef SLUICE_TOOLS_INTERRUPT_H_
#define SLUICE_TOOLS_INTERRUPT_H_

namespace sluice::tools {

void InstallInterruptHandler();
// The signal received (SIGINT, SIGTERM), or 0.
int InterruptSignal();
inline bool Interrupted() { return InterruptSignal() != 0; }
// The shell's exit status for it: 128 + the signal number.
int InterruptExitCode();

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_INTERRUPT_H_
