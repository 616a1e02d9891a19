// How every sample reads its command line: CLI11, with the conventions of
// the `sluice` command line.
//
//   --help, -h     the usage on stdout, exit status 0
//   a bad command line (an unknown flag, an extra argument, a missing or
//   malformed value): "PROGRAM: what is wrong", then the usage, on stderr,
//   exit status 2
//
//   CLI::App app{"What the sample does."};
//   app.add_option(...);
//   if (std::optional<int> status = samples::ParseCommandLine(app, argc, argv)) return *status;
//
// Nothing is read or written before the command line is known to be good.
// Header-only; used once at start-up, not thread-safe.
#ifndef SLUICE_SAMPLES_COMMAND_LINE_H_
#define SLUICE_SAMPLES_COMMAND_LINE_H_

#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace samples {

// The exit status main must return now, or nullopt when the sample goes on.
inline std::optional<int> ParseCommandLine(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {
      return app.exit(e);  // --help: the usage on stdout
    }
    const std::string program = std::filesystem::path(argc > 0 ? argv[0] : "sample").filename();
    // CLI11 checks required arguments before it reports unknown ones: name
    // the unknown ones first, whatever else is wrong.
    const std::vector<std::string> extras = app.remaining();
    const std::string unknown = extras.empty() ? "" : CLI::ExtrasError(extras).what();
    if (!unknown.empty() && unknown != e.what()) {
      std::fprintf(stderr, "%s: %s\n", program.c_str(), unknown.c_str());
    }
    std::fprintf(stderr, "%s: %s\n\n%s", program.c_str(), e.what(), app.help().c_str());
    return 2;
  }
  return std::nullopt;
}

}  // namespace samples

#endif  // SLUICE_SAMPLES_COMMAND_LINE_H_
