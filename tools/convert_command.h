// Pieces shared by `sluice convert images` and `sluice convert idx`: their
// common options, the labels file, the summary and the exit status.
// docs/convert.md documents the commands.
#ifndef SLUICE_TOOLS_CONVERT_COMMAND_H_
#define SLUICE_TOOLS_CONVERT_COMMAND_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "convert_runner.h"
#include "convert_tasks.h"
#include "sluice/core/status.h"

// CLI11's App, declared only: what includes this header (the conversion's
// pieces) need not compile CLI11; the commands' files include it.
namespace CLI {
class App;
}  // namespace CLI

namespace sluice::tools {

// Exit status when the run finished but some inputs were skipped.
inline constexpr int kExitSkipped = 3;

struct ConvertCommonOptions {
  std::string out;           // PREFIX
  size_t shards = 0;         // 0: not given
  double shard_size_mb = 0;  // 0: not given
  int workers = 0;           // 0: the CPUs available
  bool shuffle = false;
  uint64_t seed = 0;
  std::string compression = "none";
  bool index = false;
  bool resume = false;
  bool overwrite = false;    // --overwrite: delete PREFIX's shards of another plan
  bool sync = false;         // --sync: fsync each output and its folder
  ConvertTaskOptions tasks;  // --num-tasks, --task-index, --mpi
};

// Registers --out, --shards, [--shard-size,] --workers, --shuffle, --seed,
// --compression, --index, --resume, --overwrite, --sync, --num-tasks,
// --task-index and --mpi on `cmd`.
void AddConvertCommonOptions(CLI::App* cmd, ConvertCommonOptions* o, bool shard_size_option);

// Throws CLI::ValidationError (a usage error, exit status 2) when
// --num-tasks, --task-index and --mpi do not go together
// (CheckConvertTaskOptions). For the commands' callbacks, before anything
// is written.
void CheckTaskOptionsOrThrow(const ConvertCommonOptions& o);

// This process's task (ResolveConvertTask), after printing a note when --mpi
// finds no launcher. Errors (the launcher's variables disagree) name them.
Result<ConvertTask> ResolveTask(const ConvertCommonOptions& o);

// Checks PREFIX (not a folder, not ending in '/') and creates its folder.
Status PrepareOutputPrefix(const std::string& prefix);

// Writes PREFIX-labels.txt atomically: a header comment line, then
// "id<TAB>name<TAB>count" per class. With `sync`, the file is fsynced before
// the rename and its folder after.
Status WriteLabelsFile(const std::string& prefix, const std::vector<std::string>& names,
                       const std::vector<uint64_t>& counts, bool sync = false);

// The job's fields that come from the common options and the task (prefix,
// compression, index, sync, workers, the task's share of the shards), and
// Ctrl-C (interrupt.h) as job.interrupted.
ConvertJob MakeConvertJob(const ConvertCommonOptions& o, const ConvertTask& task);

// The manifest's options that every shard-writing convert shares: the plan
// (--shards or --shard-size as given), --shuffle/--seed, --compression,
// --index (convert_manifest.h; the command adds its own).
std::map<std::string, std::string> CommonManifestOptions(const ConvertCommonOptions& o);

// Prints the summary (stdout: with several tasks, which shards this one
// wrote) and the skipped items (stderr, named by `item_name`), and returns
// the exit status: 0, kExitSkipped, 1 after a fatal error, or 128 + the
// signal after an interrupt (with how to resume). A rank placed by a
// launcher (--mpi) returns 0 rather than kExitSkipped: mpirun stops all
// ranks when one exits non-zero.
int ReportConversion(std::string_view command, const ConvertCommonOptions& o, const ConvertJob& job,
                     const ConvertTask& task, const ConvertReport& report, std::string_view unit,
                     const std::function<std::string(size_t)>& item_name);

// `sluice convert images` and `sluice convert idx`.
void AddConvertImagesCommand(CLI::App& convert, int* exit_code);
void AddConvertIdxCommand(CLI::App& convert, int* exit_code);
// `sluice convert webdataset` and `sluice convert tfrecord --to webdataset`.
void AddConvertWebDatasetCommands(CLI::App& convert, int* exit_code);
// `sluice convert parquet` (rows to Examples).
void AddConvertParquetCommand(CLI::App& convert, int* exit_code);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_CONVERT_COMMAND_H_
