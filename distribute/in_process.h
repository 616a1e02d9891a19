// InProcessGroup: a group of communicators in one process, one per rank,
// exchanging data through shared memory. Each rank's communicator is used by
// its own thread (threads as ranks): unit tests of multi-rank behaviour
// without a launcher, and replicas on one machine.
//
// Collectives check that every rank made the same call (operation, size,
// dtype, root) and fail the group with an error naming both calls if not.
// A rank that does not arrive within the timeout fails the group with
// Unavailable naming it; Abort() fails it at once with the aborting rank's
// status. Reductions are computed once per element, adding in rank order:
// every rank gets the same bits.
//
// The communicators share the group's state, which lives until the last of
// them is destroyed. Thread-safety as Communicator.
#ifndef SLUICE_DISTRIBUTE_IN_PROCESS_H_
#define SLUICE_DISTRIBUTE_IN_PROCESS_H_

#include <memory>
#include <vector>

#include "sluice/distribute/communicator.h"

namespace sluice {

class InProcessGroup {
 public:
  // `size` (>= 1) communicators; element r is rank r.
  static std::vector<std::unique_ptr<Communicator>> Create(int size,
                                                           CommunicatorOptions options = {});
};

}  // namespace sluice

#endif  // SLUICE_DISTRIBUTE_IN_PROCESS_H_
