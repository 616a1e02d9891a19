// Plural: "1 shard", "2 shards" for the commands' summaries. Pure function.
#ifndef SLUICE_TOOLS_PLURAL_H_
#define SLUICE_TOOLS_PLURAL_H_

#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace sluice::tools {

inline std::string Plural(uint64_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_PLURAL_H_
