// MpiCommunicator for a sluice built without MPI: absent, and says so.
#include "sluice/distribute/mpi_communicator.h"

namespace sluice {

bool MpiCommunicator::Available() { return false; }

Result<std::unique_ptr<Communicator>> MpiCommunicator::Create(CommunicatorOptions) {
  return Status::FailedPrecondition(
      "MPI: this sluice was built without MPI (CMake did not find it; install libopenmpi-dev "
      "and openmpi-bin, then reconfigure)");
}

}  // namespace sluice
