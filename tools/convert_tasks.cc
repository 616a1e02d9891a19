#include "convert_tasks.h"

#include <fmt/format.h>

namespace sluice::tools {
namespace {

ConvertTask FromOptions(const ConvertTaskOptions& o) {
  ConvertTask task;
  if (o.num_tasks_given) {
    task.share = {static_cast<size_t>(o.num_tasks), static_cast<size_t>(o.task_index)};
    task.source = "--task-index";
  }
  return task;
}

Result<ConvertTask> FromCluster(const Result<ClusterSpec>& spec) {
  if (!spec.ok()) return spec.status().WithContext("--mpi");
  ConvertTask task;
  task.share = {static_cast<size_t>(spec->world_size), static_cast<size_t>(spec->rank)};
  task.source = spec->source;
  return task;
}

}  // namespace

Status CheckConvertTaskOptions(const ConvertTaskOptions& o) {
  if (o.mpi && (o.num_tasks_given || o.task_index_given)) {
    return Status::InvalidArgument(
        fmt::format("--mpi takes the task count and index from the launcher; give it without {}",
                    o.num_tasks_given ? "--num-tasks" : "--task-index"));
  }
  if (o.num_tasks_given != o.task_index_given) {
    return Status::InvalidArgument(o.num_tasks_given
                                       ? "--num-tasks needs --task-index: which task is this one "
                                         "(0 to N-1)?"
                                       : "--task-index needs --num-tasks: how many tasks share the "
                                         "run?");
  }
  if (!o.num_tasks_given) return Status::OK();
  if (o.num_tasks < 1) {
    return Status::InvalidArgument(
        fmt::format("--num-tasks {}: give the number of tasks, 1 or more", o.num_tasks));
  }
  if (o.task_index < 0 || o.task_index >= o.num_tasks) {
    return Status::InvalidArgument(
        fmt::format("--task-index {} is outside [0, {}): with --num-tasks {} the tasks are 0 to {}",
                    o.task_index, o.num_tasks, o.num_tasks, o.num_tasks - 1));
  }
  return Status::OK();
}

Result<ConvertTask> ResolveConvertTask(const ConvertTaskOptions& o,
                                       const ClusterResolver::Environment& env) {
  SLUICE_RETURN_IF_ERROR(CheckConvertTaskOptions(o));
  return o.mpi ? FromCluster(ClusterResolver::FromEnvironment(env)) : FromOptions(o);
}

Result<ConvertTask> ResolveConvertTask(const ConvertTaskOptions& o) {
  SLUICE_RETURN_IF_ERROR(CheckConvertTaskOptions(o));
  return o.mpi ? FromCluster(ClusterResolver::FromEnvironment()) : FromOptions(o);
}

std::string TaskName(const ConvertTask& task) {
  std::string name = fmt::format("task {} of {}", task.share.index, task.share.count);
  if (task.from_launcher()) name += fmt::format(" ({} rank)", task.source);
  return name;
}

}  // namespace sluice::tools
