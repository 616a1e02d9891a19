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
#include "convert_manifest.h"
#include "interrupt.h"
#include "plural.h"

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
                "Continue an interrupted run with the same options: keep the shards its "
                "PREFIX-manifest.json records as complete and whole; write the rest");
  cmd->add_flag("--overwrite", o->overwrite,
                "Delete shard files of PREFIX that this run does not write (an earlier run's "
                "with another --shards or --compression) instead of refusing to start");
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
  job.sync = o.sync;
  job.workers = o.workers > 0 ? o.workers : AvailableCpus();
  job.interrupted = [] { return Interrupted(); };
  return job;
}

std::map<std::string, std::string> CommonManifestOptions(const ConvertCommonOptions& o) {
  std::map<std::string, std::string> m;
  m["--shards"] = o.shards > 0 ? std::to_string(o.shards) : "";
  m["--shuffle"] = o.shuffle ? "yes" : "";
  m["--seed"] = o.shuffle ? std::to_string(o.seed) : "";
  m["--compression"] = o.compression;
  m["--index"] = o.index ? "yes" : "";
  return m;
}

namespace {

// "12.3 KB", "4.56 MB", "1.23 GB" (10^3 steps, as the rates).
std::string Bytes(uint64_t n) {
  if (n < 1000) return fmt::format("{} bytes", n);
  if (n < 1000 * 1000) return fmt::format("{:.1f} KB", n / 1e3);
  if (n < uint64_t{1000} * 1000 * 1000) return fmt::format("{:.1f} MB", n / 1e6);
  return fmt::format("{:.2f} GB", n / 1e9);
}

// A file name on one line: control bytes as \n, \t, \xNN.
std::string OneLine(std::string_view name) {
  std::string out;
  for (unsigned char c : name) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else if (c == '\\') {
      out += "\\\\";
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace

int ReportConversion(std::string_view command, const ConvertCommonOptions& o, const ConvertJob& job,
                     const ConvertTask& task, const ConvertReport& r, std::string_view unit,
                     const std::function<std::string(size_t)>& item_name) {
  const std::string who = task.split() ? TaskName(task) + ": " : "";
  if (r.stale_temporaries > 0) {
    fmt::print("{}removed {} left by an interrupted run\n", who,
               Plural(r.stale_temporaries, "temporary file", "temporary files"));
  }
  const size_t complete = r.shards_resumed + r.shards_written;
  if (r.interrupted) {
    std::fflush(stdout);
    fmt::print(stderr,
               "sluice {}: {}interrupted: {} of {}{} complete; run the same command with "
               "--resume to finish\n",
               command, who, complete, Plural(r.shards_owned, "shard is", "shards are"),
               task.split() ? " of this task" : "");
    return InterruptExitCode();
  }
  if (!r.status.ok()) {
    std::fflush(stdout);
    fmt::print(stderr,
               "sluice {}: {}{}\n{} of {}{} complete; run {} again with --resume to finish\n",
               command, who, r.status.ToString(), complete,
               Plural(r.shards_owned, "shard is", "shards are"),
               task.split() ? " of this task" : "", task.split() ? "this task" : "it");
    return 1;
  }
  const double secs = r.seconds > 0 ? r.seconds : 1e-9;
  const std::string one(unit.substr(0, unit.size() - 1));  // "images" -> "image"
  fmt::print("{}converted {} into {} in {:.2f} s: {:.0f} {}/s, {:.1f} MB/s in, {} written\n", who,
             Plural(r.items_converted, one, unit), Plural(r.shards_written, "shard", "shards"),
             r.seconds, r.items_processed / secs, unit, r.bytes_in / 1e6 / secs,
             Bytes(r.bytes_out));
  if (r.shards_resumed > 0) {
    fmt::print("{}resumed: {} of {} were complete already and were kept\n", who, r.shards_resumed,
               Plural(r.shards_owned, "shard", "shards"));
  }
  size_t empty = 0;
  for (size_t s = 0; s < job.shards.size(); ++s) {
    if (job.task.Owns(s) && job.shards[s].size() == 0) ++empty;
  }
  if (empty > 0) {
    fmt::print("note: {} of {} {} empty: there are more shards than {}\n", empty,
               Plural(r.shards_owned, "shard", "shards"), empty == 1 ? "is" : "are", unit);
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
  fmt::print("manifest: {}\n", ManifestPath(o.out));
  if (r.skipped.empty()) return 0;
  std::fflush(stdout);
  fmt::print(stderr, "sluice {}: {}skipped {} that could not be converted:\n", command, who,
             Plural(r.skipped.size(), one, unit));
  for (const auto& [item, status] : r.skipped) {
    const std::string name = item_name(item);
    std::string why(status.message());
    // Codec messages name the file too ("decode_image: cat/x.jpg: ..."): once
    // is enough. Only where the name stands alone, not inside a longer path
    // ("cannot open DIR/cat/x.jpg: ...").
    for (size_t at = why.find(name + ": "); at != std::string::npos;
         at = why.find(name + ": ", at + 1)) {
      if (at == 0 || why[at - 1] == ' ') {
        why.erase(at, name.size() + 2);
        break;
      }
    }
    fmt::print(stderr, "  {}: {}\n", OneLine(name), OneLine(why));
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
  AddConvertWebDatasetCommands(*convert, exit_code);
  AddConvertParquetCommand(*convert, exit_code);
}

}  // namespace sluice::tools
