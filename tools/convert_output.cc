#include "convert_output.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "sluice/core/file.h"
#include "sluice/core/filesystem.h"
#include "sluice/records/record_index.h"

namespace sluice::tools {
namespace {

std::string DirOf(const std::string& prefix) {
  const std::string parent = ParentPath(prefix);
  return parent.empty() ? "." : parent;
}

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// True for "<base>-DDDDD-of-DDDDD.tfrecord" with ".gz" or ".zz", and ".idx",
// optional: a shard (or its index) of PREFIX, of any plan.
bool IsShardFileOf(const std::string& base, std::string_view name) {
  if (!name.starts_with(base + "-")) return false;
  name.remove_prefix(base.size() + 1);
  if (name.ends_with(".idx")) name.remove_suffix(4);
  if (name.ends_with(".gz") || name.ends_with(".zz")) name.remove_suffix(3);
  if (!name.ends_with(".tfrecord")) return false;
  name.remove_suffix(9);
  return name.size() == 14 && AllDigits(name.substr(0, 5)) && name.substr(5, 4) == "-of-" &&
         AllDigits(name.substr(9));
}

// Why shard file `path` is not the complete shard `entry` records, or "".
std::string Damage(const std::string& path, const ConvertManifest::Shard& entry, bool index) {
  const Result<std::optional<FileInfo>> st = StatPath(path);
  if (!st.ok()) return std::string(st.status().message());
  if (!st->has_value()) return "its file is missing";
  if ((*st)->size != entry.bytes) {
    return fmt::format("its file has {} bytes, the manifest recorded {}", (*st)->size, entry.bytes);
  }
  if (!index) return "";
  Result<RecordIndex> idx = RecordIndex::LoadFor(path);
  if (!idx.ok()) return std::string(idx.status().message());
  if (idx->data() != RecordIndexData{entry.bytes, entry.crc32c} || idx->size() != entry.records) {
    return "its .idx does not describe the file the manifest recorded";
  }
  return "";
}

}  // namespace

Result<std::unique_ptr<ConvertOutput>> PrepareConversion(const ConvertCommonOptions& o,
                                                         const ConvertTask& task,
                                                         ConvertManifest wanted) {
  wanted.complete.clear();
  const std::string manifest_path = ManifestPath(o.out);
  SLUICE_ASSIGN_OR_RETURN(ConvertLock lock, ConvertLock::Open(o.out));
  SLUICE_RETURN_IF_ERROR(lock.LockManifest());
  std::unique_ptr<ConvertOutput> out(
      new ConvertOutput(std::move(lock), manifest_path, wanted, o.sync));
  ConvertLock& l = out->lock_;
  const ConvertLock::ManifestUnlocker unlock{l};  // on every path out

  // A killed run's temporary manifest (never a live one: core/file.h).
  (void)RemoveAbandonedTemporaries(manifest_path);
  Result<std::optional<ConvertManifest>> found = ReadManifest(manifest_path);
  if (!found.ok() && o.resume) {
    return found.status().WithContext("cannot resume");
  }
  std::optional<ConvertManifest> old = found.ok() ? std::move(*found) : std::nullopt;
  const bool same = old && old->SameConversion(wanted);
  if (o.resume && old && !same) {
    return Status::FailedPrecondition(fmt::format(
        "cannot resume: {} records another conversion: {}. Run it with the options of the run "
        "it continues, or without --resume to start over",
        manifest_path, old->Differences(wanted)));
  }
  ConvertManifest manifest = wanted;
  if (same) {
    SLUICE_RETURN_IF_ERROR(l.JoinConversion());
    manifest.complete = old->complete;
  } else {
    // A new conversion: no other run may be writing into PREFIX.
    SLUICE_RETURN_IF_ERROR(l.TakeConversion());
    if (o.resume) {
      out->notes_.push_back(
          fmt::format("note: no {} records what the interrupted run finished: writing every shard",
                      manifest_path));
    }
  }
  const size_t n = wanted.shards;
  std::vector<size_t> owned;
  std::set<std::string> planned;
  const Compression compression = ParseCompression(o.compression).value_or(Compression::kNone);
  for (size_t s = 0; s < n; ++s) {
    const std::string path = ShardPath(o.out, s, n, compression);
    planned.insert(BaseName(path));
    planned.insert(BaseName(RecordIndex::PathFor(path)));
    if (task.share.Owns(s)) owned.push_back(s);
  }
  SLUICE_RETURN_IF_ERROR(l.LockShards(owned));
  if (!same) SLUICE_RETURN_IF_ERROR(l.JoinConversion());  // shared again: tasks join

  // Shard files of PREFIX that this plan does not write.
  std::vector<std::string> strays;
  const std::string base = BaseName(o.out), dir = DirOf(o.out);
  SLUICE_ASSIGN_OR_RETURN(std::vector<FileInfo> listed, ListFolder(dir));
  for (const FileInfo& entry : listed) {
    const std::string name = BaseName(entry.path);
    if (IsShardFileOf(base, name) && !planned.contains(name)) strays.push_back(name);
  }
  std::sort(strays.begin(), strays.end());
  if (!strays.empty() && !o.overwrite) {
    std::string listed;
    for (size_t i = 0; i < strays.size() && i < 3; ++i) listed += (i ? ", " : "") + strays[i];
    if (strays.size() > 3) listed += fmt::format(" and {} more", strays.size() - 3);
    return Status::FailedPrecondition(fmt::format(
        "{} holds {} shard file{} of {} that this conversion does not write ({}), left by a run "
        "with another shard count or compression; a glob such as {}-* would read them with the "
        "new shards. Remove them, or give --overwrite to delete them",
        dir, strays.size(), strays.size() == 1 ? "" : "s", base, listed, o.out));
  }
  for (const std::string& name : strays) {
    const std::string path = JoinPath(dir, name);
    if (Status d = DeletePath(path); !d.ok()) {
      return Status::FailedPrecondition(
          fmt::format("--overwrite: cannot delete {}: {}", path, d.message()));
    }
  }
  if (!strays.empty()) {
    out->notes_.push_back(fmt::format(
        "--overwrite: deleted {} shard file{} of an earlier run "
        "({}{})",
        strays.size(), strays.size() == 1 ? "" : "s", strays[0], strays.size() > 1 ? ", ..." : ""));
  }

  // What is complete already.
  out->keep_.assign(n, false);
  size_t unrecorded = 0;
  for (size_t s : owned) {
    const std::string path = ShardPath(o.out, s, n, compression);
    auto it = manifest.complete.find(s);
    if (!o.resume || it == manifest.complete.end()) {
      if (it != manifest.complete.end()) manifest.complete.erase(it);
      if (o.resume) {
        const Result<bool> exists = PathExists(path);
        if (exists.ok() && *exists) ++unrecorded;
      }
      continue;
    }
    const std::string why = it->second.file == BaseName(path) ? Damage(path, it->second, o.index)
                                                              : "the manifest names another file";
    if (why.empty()) {
      out->keep_[s] = true;
    } else {
      out->notes_.push_back(
          fmt::format("shard {} ({}): {}; writing it again", s, BaseName(path), why));
      manifest.complete.erase(it);
    }
  }
  if (unrecorded > 0) {
    out->notes_.push_back(fmt::format(
        "{} shard file{} on disk {} not recorded as complete (the run stopped before it recorded "
        "{}): writing {} again",
        unrecorded, unrecorded == 1 ? "" : "s", unrecorded == 1 ? "was" : "were",
        unrecorded == 1 ? "it" : "them", unrecorded == 1 ? "it" : "them"));
  }
  SLUICE_RETURN_IF_ERROR(WriteManifest(manifest_path, manifest, o.sync));
  return out;
}

Status ConvertOutput::RecordShard(size_t shard, const ShardWritten& w) {
  std::lock_guard<std::mutex> guard(mu_);
  pending_[shard] = {BaseName(w.path), w.records, w.file_bytes, w.file_crc32c};
  if (std::chrono::steady_clock::now() - last_flush_ < kManifestFlushInterval) {
    return Status::OK();
  }
  return FlushLocked();
}

Status ConvertOutput::Flush() {
  std::lock_guard<std::mutex> guard(mu_);
  return FlushLocked();
}

Status ConvertOutput::FlushLocked() {
  if (pending_.empty()) return Status::OK();
  SLUICE_RETURN_IF_ERROR(lock_.LockManifest());
  const ConvertLock::ManifestUnlocker unlock{lock_};
  // Other tasks add their shards to the same file: read it again.
  Result<std::optional<ConvertManifest>> found = ReadManifest(path_);
  ConvertManifest m = found.ok() && *found && (*found)->SameConversion(wanted_) ? **found : wanted_;
  for (auto& [shard, entry] : pending_) m.complete[shard] = std::move(entry);
  pending_.clear();
  last_flush_ = std::chrono::steady_clock::now();
  return WriteManifest(path_, m, sync_);
}

}  // namespace sluice::tools
