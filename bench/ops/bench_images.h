// The JPEGs a benchmark of bench/ops/ runs on when $SLUICE_BENCH_IMAGES
// names a folder (e.g. the ImageNet-like set of scripts/make-imagenet-like.sh):
// every .jpg/.jpeg/.JPEG file under it, in path order, read into memory.
// Header-only; each benchmark makes its own images when this is empty.
#ifndef SLUICE_BENCH_OPS_BENCH_IMAGES_H_
#define SLUICE_BENCH_OPS_BENCH_IMAGES_H_

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "sluice/ops/read_file.h"

namespace sluice::ops {

// At most `max` images; empty if the variable is unset. A folder that
// cannot be listed, and files that cannot be read, are reported on stderr.
inline std::vector<std::string> BenchImagesFromEnv(size_t max) {
  std::vector<std::string> out;
  const char* dir = std::getenv("SLUICE_BENCH_IMAGES");
  if (dir == nullptr) return out;
  std::vector<std::string> paths;
  std::error_code ec;
  for (std::filesystem::recursive_directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string ext = it->path().extension().string();
    if (it->is_regular_file() && (ext == ".jpg" || ext == ".jpeg" || ext == ".JPEG")) {
      paths.push_back(it->path().string());
    }
  }
  if (ec) std::fprintf(stderr, "SLUICE_BENCH_IMAGES=%s: %s\n", dir, ec.message().c_str());
  std::sort(paths.begin(), paths.end());
  for (const std::string& p : paths) {
    if (out.size() == max) break;
    Result<Tensor> t = ReadFile(p);
    if (t.ok()) {
      out.emplace_back(t->scalar<std::string_view>());
    } else {
      std::fprintf(stderr, "%s\n", t.status().ToString().c_str());
    }
  }
  return out;
}

}  // namespace sluice::ops

#endif  // SLUICE_BENCH_OPS_BENCH_IMAGES_H_
