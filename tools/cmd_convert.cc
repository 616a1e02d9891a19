// `sluice convert`: image folders and IDX files to sharded TFRecords. This
// file registers the command and holds what its two subcommands share.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "commands.h"
#include "convert_command.h"

#include "sluice/core/file.h"

namespace sluice::tools {

void AddConvertCommonOptions(CLI::App* cmd, ConvertCommonOptions* o, bool shard_size_option) {
  cmd->add_option("--out,-o", o->out,
                  "Output prefix: writes PREFIX-00000-of-000NN.tfrecord ... and PREFIX-labels.txt")
      ->required();
  CLI::Option* shards =
      cmd->add_option("--shards", o->shards, "Number of shards (contiguous, near-equal counts)")
          ->check(CLI::Range(size_t{1}, kMaxShards));
  if (shard_size_option) {
    cmd->add_option("--shard-size", o->shard_size_mb,
                    "Shards of about this many MB (10^6 bytes) of input images [default: 100]")
        ->check(CLI::PositiveNumber)
        ->excludes(shards);
  }
  cmd->add_option("--workers,-j", o->workers,
                  "Worker threads [default: the CPUs available]; the output does not depend on it")
      ->check(CLI::Range(1, 4096));
  CLI::Option* shuffle =
      cmd->add_flag("--shuffle", o->shuffle, "Shuffle the list (seeded) before cutting shards");
  cmd->add_option("--seed", o->seed, "Seed of --shuffle")->needs(shuffle)->capture_default_str();
  cmd->add_option("--compression,-c", o->compression,
                  "none, or gzip / zlib (shards then end in .gz / .zz)")
      ->check(CLI::IsMember({"none", "gzip", "zlib"}))
      ->capture_default_str();
  cmd->add_flag("--index", o->index, "Also write each shard's .idx (records/record_index.h)");
  cmd->add_flag("--resume", o->resume,
                "Keep shards that already exist (and their .idx with --index); write the rest");
  cmd->add_flag("--sync", o->sync,
                "fsync every shard, .idx and the labels file, and their folder, before they count "
                "as written: a run that completed survives a power loss (a killed run is safe "
                "without it)");
  // Several processes splitting the run (convert_tasks.h). Checked together
  // by CheckTaskOptionsOrThrow, so that every mistake gets one clear message.
  ConvertTaskOptions* t = &o->tasks;
  cmd->add_option_function<int64_t>(
         "--num-tasks",
         [t](const int64_t& n) {
           t->num_tasks = n;
           t->num_tasks_given = true;
         },
         "Split the run over N tasks: processes started by any launcher (a Slurm array, a "
         "Kubernetes indexed job, xargs -P), each with the same input and options and its own "
         "--task-index")
      ->type_name("N");
  cmd->add_option_function<int64_t>(
         "--task-index",
         [t](const int64_t& i) {
           t->task_index = i;
           t->task_index_given = true;
         },
         "With --num-tasks N: this task, 0 to N-1. It writes the shards s with s % N == I (and "
         "task 0 the labels file), the same bytes a single run writes; --resume finishes only "
         "its shards")
      ->type_name("I");
  cmd->add_flag("--mpi", t->mpi,
                "Take N and I from the launcher: the world size and rank that mpirun, srun or "
                "torchrun set (or SLUICE_CLUSTER_CONFIG, TF_CONFIG); without one, a normal run");
}

void CheckTaskOptionsOrThrow(const ConvertCommonOptions& o) {
  const Status st = CheckConvertTaskOptions(o.tasks);
  if (!st.ok()) throw CLI::ValidationError(std::string(st.message()));
}

Result<ConvertTask> ResolveTask(const ConvertCommonOptions& o) {
  SLUICE_ASSIGN_OR_RETURN(ConvertTask task, ResolveConvertTask(o.tasks));
  if (o.tasks.mpi && task.source == "none") {
    fmt::print(
        "note: --mpi found no launcher variables (OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID "
        "in a job step, RANK, ...): converting every shard in this process\n");
  }
  return task;
}

Status PrepareOutputPrefix(const std::string& prefix) {
  namespace fs = std::filesystem;
  if (prefix.empty() || prefix.back() == '/') {
    return Status::InvalidArgument("--out " + prefix +
                                   ": give a file name prefix such as out/train, not a folder");
  }
  std::error_code ec;
  if (fs::is_directory(prefix, ec)) {
    return Status::InvalidArgument(
        "--out " + prefix + " is a folder; give a file name prefix such as " + prefix + "/train");
  }
  const fs::path parent = fs::path(prefix).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec)) {
    fs::create_directories(parent, ec);
    // Several tasks may create it at once: what counts is that it exists.
    std::error_code dir_ec;
    if (ec && !fs::is_directory(parent, dir_ec)) {
      return Status::FailedPrecondition("cannot create the output folder " + parent.string() +
                                        ": " + ec.message());
    }
  }
  return Status::OK();
}

Status WriteLabelsFile(const std::string& prefix, const std::vector<std::string>& names,
                       const std::vector<uint64_t>& counts, bool sync) {
  std::string text = "# id\tclass\timages\n";
  for (size_t i = 0; i < names.size(); ++i) {
    text += fmt::format("{}\t{}\t{}\n", i, names[i], i < counts.size() ? counts[i] : 0);
  }
  const std::string path = LabelsPath(prefix);
  RemoveStaleTemporaries(std::vector<std::string>{path});
  OutputFileOptions options;
  options.sync = sync;
  return WriteFileAtomically(path, text, options);
}

ConvertJob MakeConvertJob(const ConvertCommonOptions& o, const ConvertTask& task) {
  ConvertJob job;
  job.task = task.share;
  job.prefix = o.out;
  job.compression = ParseCompression(o.compression).value_or(Compression::kNone);
  job.write_index = o.index;
  job.resume = o.resume;
  job.sync = o.sync;
  job.workers = o.workers > 0 ? o.workers : AvailableCpus();
  return job;
}

int ReportConversion(std::string_view command, const ConvertCommonOptions& o, const ConvertJob& job,
                     const ConvertTask& task, const ConvertReport& r, std::string_view unit,
                     const std::function<std::string(size_t)>& item_name) {
  const std::string who = task.split() ? TaskName(task) + ": " : "";
  if (r.stale_temporaries > 0) {
    fmt::print("{}removed {} temporary files left by an interrupted run\n", who,
               r.stale_temporaries);
  }
  if (!r.status.ok()) {
    fmt::print(stderr,
               "sluice {}: {}{}\n{} of {} shards{} are complete; run {} again with --resume to "
               "finish\n",
               command, who, r.status.ToString(), r.shards_resumed + r.shards_written,
               r.shards_owned, task.split() ? " of this task" : "",
               task.split() ? "this task" : "it");
    return 1;
  }
  const double secs = r.seconds > 0 ? r.seconds : 1e-9;
  fmt::print(
      "{}converted {} {} into {} shards in {:.2f} s: {:.0f} {}/s, {:.1f} MB/s in, {:.1f} MB "
      "written\n",
      who, r.items_converted, unit, r.shards_written, r.seconds, r.items_processed / secs, unit,
      r.bytes_in / 1e6 / secs, r.bytes_out / 1e6);
  if (r.shards_resumed > 0) {
    fmt::print("{}resumed: {} of {} shards were complete already and were kept\n", who,
               r.shards_resumed, r.shards_owned);
  }
  if (task.split() && r.shards_owned == 0) {
    fmt::print("{}: no shards to write (there are {})\n", TaskName(task), r.shards_total);
  } else if (task.split()) {
    fmt::print("{}: {} of {}{}\n", TaskName(task), DescribeTaskShards(job.task, r.shards_total),
               r.shards_total,
               r.shards_owned < r.shards_total ? "; the other tasks write the rest" : "");
  }
  // The first and the last shard this task owns (all of them with one task).
  const auto path = [&](size_t k) {
    return ShardPath(o.out, job.task.index + k * job.task.count, r.shards_total, job.compression);
  };
  if (r.shards_owned == 1) {
    fmt::print("shard: {}\n", path(0));
  } else if (r.shards_owned > 1) {
    fmt::print("shards: {} ... {}\n", path(0), path(r.shards_owned - 1));
  }
  fmt::print("labels: {}{}\n", LabelsPath(o.out),
             task.writes_labels() ? "" : " (task 0 writes it)");
  if (r.skipped.empty()) return 0;
  fmt::print(stderr, "sluice {}: {}skipped {} {} that could not be converted:\n", command, who,
             r.skipped.size(), unit);
  for (const auto& [item, status] : r.skipped) {
    const std::string name = item_name(item);
    std::string why(status.message());
    // Codec messages name the file too ("decode_image: cat/x.jpg: ..."): once is enough.
    const size_t dup = why.find(name + ": ");
    if (dup != std::string::npos) why.erase(dup, name.size() + 2);
    fmt::print(stderr, "  {}: {}\n", name, why);
  }
  // mpirun (and torchrun, and srun with KillOnBadExit) stop every rank when
  // one exits non-zero: a rank that only skipped files must not end the
  // others' work.
  if (task.split() && task.from_launcher()) {
    fmt::print(stderr,
               "sluice {}: {}exit status 0, not {}: the launcher would stop the other ranks\n",
               command, who, kExitSkipped);
    return 0;
  }
  return kExitSkipped;
}

void AddConvertCommand(CLI::App& app, int* exit_code) {
  CLI::App* convert = app.add_subcommand(
      "convert",
      "Convert an image folder (one subfolder per class) or MNIST-style IDX files into sharded "
      "TFRecord files of tf.train.Example, in parallel, resumably");
  convert->require_subcommand(1);
  convert->footer(
      "Examples:\n"
      "  sluice convert images photos/train --out data/train --shards 64 --shuffle --seed 7\n"
      "  sluice convert idx train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz --out "
      "data/mnist-train\n"
      "Docs: docs/convert.md");
  AddConvertImagesCommand(*convert, exit_code);
  AddConvertIdxCommand(*convert, exit_code);
}

}  // namespace sluice::tools
