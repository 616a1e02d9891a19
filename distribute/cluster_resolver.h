// ClusterResolver: which process of a job this one is (its rank, the number
// of processes, and its place among those on its host), read from what the
// launcher set. tf.distribute's cluster resolvers, for C++ binaries.
//
// Sources, first match wins:
//   1. SLUICE_CLUSTER_CONFIG: a JSON object (or "@path" to a file holding
//      one) {"rank": 1, "world_size": 4, "local_rank": 1, "local_size": 2};
//      the local fields are optional (default: rank / world_size, i.e. one
//      host). For anything no launcher describes.
//   2. TF_CONFIG, as tf.distribute.MultiWorkerMirroredStrategy reads it:
//      {"cluster": {"chief": ["h0:p"], "worker": ["h1:p", ...]},
//       "task": {"type": "worker", "index": 0}}. The chief is rank 0 and
//      workers follow; local rank and size count the tasks on the same host.
//   3. Open MPI's mpirun: OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,LOCAL_SIZE}.
//   4. PMI (MPICH's hydra, Intel MPI, srun --mpi=pmi2): PMI_RANK, PMI_SIZE,
//      with MPI_LOCALRANKID / MPI_LOCALNRANKS or Slurm's local variables.
//   5. Slurm's srun (inside a job step: SLURM_STEP_ID set): SLURM_PROCID,
//      SLURM_NTASKS, SLURM_LOCALID, and the node's entry of
//      SLURM_STEP_TASKS_PER_NODE (or SLURM_TASKS_PER_NODE) for SLURM_NODEID.
//   6. torchrun: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE.
//   7. Nothing set: a lone process, rank 0 of 1.
// A partial set (RANK without WORLD_SIZE), a value that is not a number, a
// rank outside [0, world size), or two launchers (3, 4, 6) that disagree on
// the rank or the world size are InvalidArgument naming the variables.
// Slurm's variables are not cross-checked: mpirun inside an allocation
// legitimately differs from them.
//
// Plain functions of the environment; thread-safe.
#ifndef SLUICE_DISTRIBUTE_CLUSTER_RESOLVER_H_
#define SLUICE_DISTRIBUTE_CLUSTER_RESOLVER_H_

#include <map>
#include <string>
#include <string_view>

#include "sluice/core/result.h"

namespace sluice {

struct ClusterSpec {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;  // among the processes on this host
  int local_size = 1;
  // Where the values came from: "SLUICE_CLUSTER_CONFIG", "TF_CONFIG",
  // "Open MPI", "PMI", "Slurm", "torchrun", or "none".
  std::string source = "none";

  bool is_chief() const { return rank == 0; }
  // "rank 1 of 4 (local 1 of 2; from Open MPI)".
  std::string ToString() const;
};

class ClusterResolver {
 public:
  using Environment = std::map<std::string, std::string>;

  // From this process's environment variables.
  static Result<ClusterSpec> FromEnvironment();
  // From the given variables (as getenv would return them).
  static Result<ClusterSpec> FromEnvironment(const Environment& env);
  // From SLUICE_CLUSTER_CONFIG's JSON form. InvalidArgument naming the field
  // that is missing, of the wrong type or out of range.
  static Result<ClusterSpec> FromJson(std::string_view json);
  // From TF_CONFIG's JSON form.
  static Result<ClusterSpec> FromTfConfig(std::string_view json);
};

}  // namespace sluice

#endif  // SLUICE_DISTRIBUTE_CLUSTER_RESOLVER_H_
