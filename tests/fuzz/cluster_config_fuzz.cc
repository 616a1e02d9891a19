// libFuzzer target for ClusterResolver (distribute/cluster_resolver.h): the
// JSON configs (SLUICE_CLUSTER_CONFIG, TF_CONFIG) and launcher variables
// arrive from job scripts and schedulers.
//
// The first byte picks the parser: 0 FromJson, 1 FromTfConfig, else the
// environment, as NAME=VALUE lines. Every outcome must be a spec with
// 0 <= rank < world_size and 0 <= local_rank < local_size <= world_size, or
// InvalidArgument / NotFound: never a crash, a hang or a huge allocation.
//
//   ./cluster_config_fuzz tests/fuzz/corpus/cluster_config -max_total_time=60
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "sluice/distribute/cluster_resolver.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  sluice::Result<sluice::ClusterSpec> spec = sluice::Status::Internal("unset");
  if (data[0] == 0) {
    spec = sluice::ClusterResolver::FromJson(text);
  } else if (data[0] == 1) {
    spec = sluice::ClusterResolver::FromTfConfig(text);
  } else {
    sluice::ClusterResolver::Environment env;
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string_view::npos) end = text.size();
      std::string_view line = text.substr(start, end - start);
      const size_t eq = line.find('=');
      if (eq != std::string_view::npos) {
        std::string value(line.substr(eq + 1));
        // A config file named by "@path" would make the fuzzer read files.
        if (!(line.substr(0, eq) == "SLUICE_CLUSTER_CONFIG" && !value.empty() && value[0] == '@')) {
          env[std::string(line.substr(0, eq))] = value;
        }
      }
      start = end + 1;
    }
    spec = sluice::ClusterResolver::FromEnvironment(env);
  }
  if (spec.ok()) {
    const sluice::ClusterSpec& s = *spec;
    if (s.rank < 0 || s.rank >= s.world_size || s.local_rank < 0 || s.local_rank >= s.local_size ||
        s.local_size > s.world_size) {
      std::fprintf(stderr, "cluster_config_fuzz: inconsistent spec %s\n", s.ToString().c_str());
      std::abort();
    }
  } else if (spec.status().code() != sluice::StatusCode::kInvalidArgument &&
             spec.status().code() != sluice::StatusCode::kNotFound) {
    std::fprintf(stderr, "cluster_config_fuzz: unexpected %s\n", spec.status().ToString().c_str());
    std::abort();
  }
  return 0;
}
