// The subcommands of the `sluice` command line. Each Add*Command registers a
// subcommand on `app`; when it is selected, its callback runs it and stores
// the process exit status (0 success, 1 failure) in *exit_code. Errors go to
// stderr naming the file, offset and record.
#ifndef SLUICE_TOOLS_COMMANDS_H_
#define SLUICE_TOOLS_COMMANDS_H_

#include <CLI/CLI.hpp>

#include <string>

#include "sluice/core/result.h"
#include "sluice/core/status.h"
#include "sluice/records/tfrecord_reader.h"

namespace sluice::tools {

void AddCatCommand(CLI::App& app, int* exit_code);
void AddWriteCommand(CLI::App& app, int* exit_code);
void AddCountCommand(CLI::App& app, int* exit_code);
void AddVerifyCommand(CLI::App& app, int* exit_code);
void AddIndexCommand(CLI::App& app, int* exit_code);
void AddConvertCommand(CLI::App& app, int* exit_code);  // cmd_convert.cc
void AddBenchCommand(CLI::App& app, int* exit_code);    // cmd_bench.cc

// Shared by the commands.
inline const std::vector<std::string> kCompressionChoices = {"auto", "none", "zlib", "gzip"};
// Reader options for a --compression value (validated by CLI11 already).
TFRecordReaderOptions ReaderOptions(const std::string& compression);
// Prints "sluice <command>: <message>" to stderr (after flushing stdout, so
// that logs keep the order) and returns 1.
int Fail(std::string_view command, const Status& status);
// A CLI11 check for input files: an existing file, or "-" for standard input.
CLI::Validator ExistingFileOrStdin();
// The objects an object-store pattern matches ("s3://b/{train,val}-*"):
// braces expanded, then each listed from its wildcard-free prefix
// (MatchFiles), sorted and unique; an empty list if none match.
Result<std::vector<std::string>> MatchRemotePattern(const std::string& pattern);
// Appends the files an input argument names: braces expanded, then globbed
// (glob(3) for paths, MatchRemotePattern for object-store URIs). With
// keep_unmatched a pattern matching nothing is appended as given, so that
// opening it gives the error naming it.
Status AppendMatches(const std::string& arg, bool keep_unmatched, std::vector<std::string>* files);
// Replaces each object-store glob among `files` ("s3://b/train-*") by the
// objects it matches, sorted; a plain path is left for the shell to have
// expanded. On failure prints the error for `command`, sets *exit_code and
// returns false.
bool ExpandRemotePatterns(std::string_view command, std::vector<std::string>* files,
                          int* exit_code);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_COMMANDS_H_
