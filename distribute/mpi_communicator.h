// MpiCommunicator: the Communicator of a job whose ranks are processes
// started by mpirun or srun (Open MPI from Debian; any MPI-3 library), on
// one host or many.
//
// Create() initializes MPI if the program has not (asking for
// MPI_THREAD_MULTIPLE; MPI_THREAD_SERIALIZED is enough) and works on its own
// duplicate of MPI_COMM_WORLD, so it never mixes with the program's own MPI
// calls. If sluice initialized MPI, it finalizes it at exit: the ranks first
// meet in a barrier, and if one does not arrive within the collective
// timeout (it failed, or is stuck in a collective the others left) the job
// is aborted instead of hanging in MPI_Finalize.
//
// Collectives are MPI's blocking calls (its non-blocking ones run 2-5x
// slower for large buffers), each watched by a thread: one that does not
// complete within the timeout cannot be cancelled, so the watchdog prints
// an Unavailable error naming the ranks on this host whose processes have
// exited (remote ones cannot be checked from here) and ends the job with
// MPI_Abort: a hang becomes an error, though not a Status. Abort() prints
// its status and calls MPI_Abort: mpirun then ends every rank and names
// this one. A rank that stops on an error should call Abort() so the
// others do not wait for the timeout.
//
// Built only when CMake finds MPI; otherwise Available() is false and
// Create() fails with FailedPrecondition. Thread-safety as Communicator.
#ifndef SLUICE_DISTRIBUTE_MPI_COMMUNICATOR_H_
#define SLUICE_DISTRIBUTE_MPI_COMMUNICATOR_H_

#include <memory>

#include "sluice/distribute/communicator.h"

namespace sluice {

class MpiCommunicator {
 public:
  // True if this sluice was built with MPI.
  static bool Available();
  static Result<std::unique_ptr<Communicator>> Create(CommunicatorOptions options = {});
};

}  // namespace sluice

#endif  // SLUICE_DISTRIBUTE_MPI_COMMUNICATOR_H_
