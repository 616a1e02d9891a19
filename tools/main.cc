// The `sluice` command line: inspect, verify, index and write TFRecord files.
// Run `sluice --help` or `sluice <command> --help`.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "commands.h"

#ifndef SLUICE_VERSION
#define SLUICE_VERSION "unknown"
#endif

int main(int argc, char** argv) {
  CLI::App app{
      "sluice: fast, exact input pipelines for C++ training binaries.\n"
      "Reads, writes, verifies and indexes TFRecord files byte-compatible with TensorFlow."};
  app.set_version_flag("--version", std::string("sluice ") + SLUICE_VERSION);
  app.require_subcommand(1);
  app.footer("Run `sluice <command> --help` for a command's options. Docs: docs/cli.md");
  int exit_code = 0;
  sluice::tools::AddCatCommand(app, &exit_code);
  sluice::tools::AddWriteCommand(app, &exit_code);
  sluice::tools::AddCountCommand(app, &exit_code);
  sluice::tools::AddVerifyCommand(app, &exit_code);
  sluice::tools::AddIndexCommand(app, &exit_code);
  sluice::tools::AddConvertCommand(app, &exit_code);
  sluice::tools::AddBenchCommand(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;  // 2: usage error, as most Unix tools
  }
  std::fflush(stdout);
  if (std::ferror(stdout)) {
    std::fprintf(stderr, "sluice: error writing to standard output\n");
    return 1;
  }
  return exit_code;
}
