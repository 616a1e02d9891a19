// Helpers for the tests of `sluice convert`: running the built binary, and
// making small image folders and IDX files.
#ifndef SLUICE_TESTS_TOOLS_CONVERT_CLI_UTIL_H_
#define SLUICE_TESTS_TOOLS_CONVERT_CLI_UTIL_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/core/tensor.h"
#include "test_util.h"

namespace sluice::testing {

struct CliRun {
  int exit_code;  // -1 if it did not exit normally
  std::string out;
  std::string err;
};

// Runs `SLUICE_BINARY args` (the path of the built `sluice`, a compile
// definition of every test that uses this file) with stdin from /dev/null,
// stdout and stderr captured through files in `dir`. `env`, if given, goes
// before the binary: "env -i" or "env A=1 B=2".
CliRun Sluice(const ScratchDir& dir, const std::string& args, const std::string& env = "");

inline bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// A deterministic noisy image [h, w, c], and it encoded.
Tensor Pixels(int64_t h, int64_t w, int64_t c, uint64_t seed);
std::string Jpeg(int64_t h, int64_t w, int64_t c, uint64_t seed);
std::string Png(int64_t h, int64_t w, int64_t c, uint64_t seed);

// Writes `bytes` to `path`, creating its folder.
void Put(const std::string& path, std::string_view bytes);

// An IDX file: the magic, the big-endian dimensions, then `data`.
std::string Idx(uint32_t magic, const std::vector<uint32_t>& dims, const std::string& data);
// `data` gzip-compressed.
std::string Gzip(const std::string& data);

// Every entry of `dir` (hidden ones too), by name, with its bytes.
std::map<std::string, std::string> Snapshot(const std::string& dir);

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TOOLS_CONVERT_CLI_UTIL_H_
