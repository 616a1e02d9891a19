#include <fmt/format.h>

#include "commands.h"

namespace sluice::tools {

TFRecordReaderOptions ReaderOptions(const std::string& compression) {
  TFRecordReaderOptions opts;
  opts.compression = ParseCompression(compression).value_or(Compression::kAuto);
  return opts;
}

int Fail(std::string_view command, const Status& status) {
  fmt::print(stderr, "sluice {}: {}\n", command, status.ToString());
  return 1;
}

}  // namespace sluice::tools
