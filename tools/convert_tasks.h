// Which task of a split `sluice convert` run this process is.
//
// Several processes (tasks) can share one conversion: each is started with
// the same input and options plus its place, and writes only its shards
// (TaskShare, convert_shards.h); task 0 also writes PREFIX-labels.txt. The
// place comes from `--num-tasks N --task-index I` (any launcher: Slurm
// arrays, Kubernetes indexed jobs, xargs), or with `--mpi` from the
// variables the launcher set, read by sluice::ClusterResolver (mpirun, srun,
// torchrun, SLUICE_CLUSTER_CONFIG, TF_CONFIG): N is the world size, I the
// rank. docs/convert.md, "Converting across tasks and ranks".
//
// Plain functions (ResolveConvertTask without an environment reads the
// process's); thread-safe.
#ifndef SLUICE_TOOLS_CONVERT_TASKS_H_
#define SLUICE_TOOLS_CONVERT_TASKS_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "convert_shards.h"
#include "sluice/core/result.h"
#include "sluice/distribute/cluster_resolver.h"

namespace sluice::tools {

// The options as given (signed, so that a negative value is reported as
// such rather than wrapped around).
struct ConvertTaskOptions {
  bool num_tasks_given = false;
  int64_t num_tasks = 0;
  bool task_index_given = false;
  int64_t task_index = 0;
  bool mpi = false;
};

struct ConvertTask {
  TaskShare share;
  // Where the place came from: "" (no options), "--task-index", or with
  // --mpi ClusterSpec::source ("Open MPI", ..., "none" without a launcher).
  std::string source;
  bool split() const { return share.count > 1; }
  // Placed by a launcher (--mpi, and one was found).
  bool from_launcher() const {
    return !source.empty() && source != "--task-index" && source != "none";
  }
  bool writes_labels() const { return share.index == 0; }
};

// InvalidArgument naming the options when they do not go together: only one
// of --num-tasks / --task-index, --num-tasks below 1, --task-index outside
// [0, --num-tasks), or --mpi with either. What CLI11's own checks do not catch; the commands
// report it as a usage error before anything is written.
Status CheckConvertTaskOptions(const ConvertTaskOptions& o);

// The task, from the options, or with --mpi from `env` (as getenv would
// return it). Errors: CheckConvertTaskOptions's, and with --mpi
// ClusterResolver's (InvalidArgument naming the variables).
Result<ConvertTask> ResolveConvertTask(const ConvertTaskOptions& o,
                                       const ClusterResolver::Environment& env);
// The same, from this process's environment.
Result<ConvertTask> ResolveConvertTask(const ConvertTaskOptions& o);

// "task 1 of 3", or "task 1 of 3 (Open MPI rank)" from a launcher.
std::string TaskName(const ConvertTask& task);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_CONVERT_TASKS_H_
