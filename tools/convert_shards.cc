#include "convert_shards.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>

#include "sluice/core/file.h"
#include "sluice/core/filesystem.h"

namespace sluice::tools {
namespace {

using u128 = unsigned __int128;

std::pair<std::string, std::string> SplitDir(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {".", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

}  // namespace

std::string ShardPath(const std::string& prefix, size_t shard, size_t num_shards,
                      Compression compression) {
  const char* suffix = compression == Compression::kGzip   ? ".gz"
                       : compression == Compression::kZlib ? ".zz"
                                                           : "";
  return fmt::format("{}-{:05d}-of-{:05d}.tfrecord{}", prefix, shard, num_shards, suffix);
}

std::string LabelsPath(const std::string& prefix) { return prefix + "-labels.txt"; }

std::vector<ShardRange> PlanShardsByCount(size_t num_items, size_t num_shards) {
  std::vector<ShardRange> plan(num_shards);
  for (size_t i = 0; i < num_shards; ++i) {
    plan[i].begin = static_cast<size_t>(u128{num_items} * i / num_shards);
    plan[i].end = static_cast<size_t>(u128{num_items} * (i + 1) / num_shards);
  }
  return plan;
}

std::vector<ShardRange> PlanShardsBySize(std::span<const uint64_t> item_bytes,
                                         uint64_t target_bytes) {
  const size_t n = item_bytes.size();
  if (n == 0) return {ShardRange{0, 0}};
  u128 total = 0;
  for (uint64_t b : item_bytes) total += b;
  const u128 wanted = (total + target_bytes - 1) / target_bytes;
  const size_t num_shards =
      static_cast<size_t>(std::clamp<u128>(wanted, 1, std::min<size_t>(n, kMaxShards)));
  std::vector<ShardRange> plan;
  plan.reserve(num_shards);
  u128 remaining = total;
  size_t pos = 0;
  for (size_t s = 0; s < num_shards; ++s) {
    const size_t shards_left = num_shards - s;
    ShardRange r{pos, n};
    if (shards_left > 1) {
      // Take at least one item, then more while that brings the shard closer
      // to an even share of what remains (cum + size/2 < remaining / left),
      // leaving one item for each later shard.
      u128 cum = item_bytes[pos++];
      while (n - pos > shards_left - 1 &&
             (2 * cum + item_bytes[pos]) * shards_left < 2 * remaining) {
        cum += item_bytes[pos++];
      }
      r.end = pos;
      remaining -= cum;
    }
    plan.push_back(r);
  }
  return plan;
}

std::string DescribeTaskShards(const TaskShare& task, size_t num_shards) {
  const size_t n = task.ShardsOf(num_shards);
  if (n == 0) return "no shards";
  if (n == 1) return fmt::format("shard {}", task.index);
  const auto nth = [&](size_t k) { return task.index + k * task.count; };
  std::string out = "shards ";
  const size_t listed = n <= 5 ? n : 3;
  for (size_t k = 0; k < listed; ++k) out += fmt::format("{}{}", k ? ", " : "", nth(k));
  if (listed == n) return out;
  out += fmt::format(", ..., {}", nth(n - 1));
  if (task.count == 1) return out;
  const size_t c = task.count;
  const char* suffix = (c % 100 >= 11 && c % 100 <= 13) ? "th"
                       : c % 10 == 1                    ? "st"
                       : c % 10 == 2                    ? "nd"
                       : c % 10 == 3                    ? "rd"
                                                        : "th";
  return out + fmt::format(" (every {}{})", c, suffix);
}

size_t RemoveStaleTemporaries(std::span<const std::string> shard_paths) {
  // Directory -> the file names whose temporaries to look for.
  std::map<std::string, std::set<std::string>> wanted;
  for (const std::string& path : shard_paths) {
    auto [dir, base] = SplitDir(path);
    wanted[dir].insert(base);
    wanted[dir].insert(base + ".idx");
  }
  size_t removed = 0;
  for (const auto& [dir, names] : wanted) {
    if (IsRemotePath(dir)) continue;  // an upload leaves no temporary object
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      // ".<name>.tmp-<suffix>"
      const std::string file = entry.path().filename().string();
      const size_t tmp = file.rfind(".tmp-");
      if (file.size() < 2 || file[0] != '.' || tmp == std::string::npos || tmp < 2) continue;
      if (!names.contains(file.substr(1, tmp - 1))) continue;
      // Never one a live writer holds (another task, or a run this one's
      // lock would have refused to start beside).
      if (RemoveIfAbandoned(entry.path().string())) ++removed;
    }
  }
  return removed;
}

}  // namespace sluice::tools
