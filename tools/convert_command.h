// Pieces shared by `sluice convert images` and `sluice convert idx`: their
// common options, the labels file, the summary and the exit status.
// docs/convert.md documents the commands.
#ifndef SLUICE_TOOLS_CONVERT_COMMAND_H_
#define SLUICE_TOOLS_CONVERT_COMMAND_H_

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "convert_runner.h"
#include "sluice/core/status.h"

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
};

// Registers --out, --shards, [--shard-size,] --workers, --shuffle, --seed,
// --compression, --index and --resume on `cmd`.
void AddConvertCommonOptions(CLI::App* cmd, ConvertCommonOptions* o, bool shard_size_option);

// Checks PREFIX (not a folder, not ending in '/') and creates its folder.
Status PrepareOutputPrefix(const std::string& prefix);

// Writes PREFIX-labels.txt atomically: a header comment line, then
// "id<TAB>name<TAB>count" per class.
Status WriteLabelsFile(const std::string& prefix, const std::vector<std::string>& names,
                       const std::vector<uint64_t>& counts);

// The job's fields that come from the common options (prefix, compression,
// index, resume, workers).
ConvertJob MakeConvertJob(const ConvertCommonOptions& o);

// Prints the summary (stdout) and the skipped items (stderr, named by
// `item_name`), and returns the exit status: 0, kExitSkipped, or 1 after a
// fatal error.
int ReportConversion(std::string_view command, const ConvertCommonOptions& o, const ConvertJob& job,
                     const ConvertReport& report, std::string_view unit,
                     const std::function<std::string(size_t)>& item_name);

// `sluice convert images` and `sluice convert idx`.
void AddConvertImagesCommand(CLI::App& convert, int* exit_code);
void AddConvertIdxCommand(CLI::App& convert, int* exit_code);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_CONVERT_COMMAND_H_
