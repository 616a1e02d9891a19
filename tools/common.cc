#include <cstdio>

#include <fmt/format.h>

#include "commands.h"

namespace sluice::tools {

TFRecordReaderOptions ReaderOptions(const std::string& compression) {
  TFRecordReaderOptions opts;
  opts.compression = ParseCompression(compression).value_or(Compression::kAuto);
  return opts;
}

int Fail(std::string_view command, const Status& status) {
  std::fflush(stdout);
  fmt::print(stderr, "sluice {}: {}\n", command, status.ToString());
  return 1;
}

CLI::Validator ExistingFileOrStdin() {
  return CLI::Validator(
      [](std::string& path) {
        if (path == "-") return std::string();
        return CLI::ExistingFile(path);
      },
      "FILE or -");
}

}  // namespace sluice::tools
