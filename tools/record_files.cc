#include "record_files.h"

#include "commands.h"

#include <glob.h>

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "sluice/core/filesystem.h"
#include "sluice/records/tfrecord_reader.h"

namespace sluice::tools {
namespace {

// Why `path` is a sidecar of a shard rather than a TFRecord file; empty if
// it is not one.
std::string SidecarKind(const std::string& path) {
  const std::string name = BaseName(path);
  if (name.ends_with(".idx")) return "record index";
  if (name.ends_with("-labels.txt")) return "labels file";
  if (name.ends_with("-manifest.json")) return "convert manifest";
  return "";
}

// The reader's message without its leading "PATH: ".
std::string Reason(const std::string& path, const Status& st) {
  std::string message(st.message());
  if (message.starts_with(path + ": ")) message.erase(0, path.size() + 2);
  return message;
}

// OK if `path` starts with a readable record (or is empty).
Status CheckFirstRecord(const std::string& path) {
  if (IsRemotePath(path)) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<FileInfo> info, StatPath(path));
    if (!info || info->is_dir) return Status::InvalidArgument("not an object");
  } else {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
      return Status::InvalidArgument("not a regular file");
    }
  }
  // Small reads: only the first record matters.
  Result<TFRecordReader> reader = TFRecordReader::Open(path, {.buffer_size = 64 << 10});
  if (!reader.ok()) return reader.status();
  Result<std::optional<Record>> first = reader->Next();
  return first.ok() ? Status::OK() : first.status();
}

}  // namespace

std::string RecordFileMatch::SkippedNote(size_t max_listed) const {
  if (skipped.empty()) return "";
  std::string note =
      fmt::format("skipped {} file{} that {} not TFRecords: ", skipped.size(),
                  skipped.size() == 1 ? "" : "s", skipped.size() == 1 ? "is" : "are");
  for (size_t i = 0; i < skipped.size() && i < max_listed; ++i) {
    note += fmt::format("{}{} ({})", i ? ", " : "", skipped[i].path, skipped[i].why);
  }
  if (skipped.size() > max_listed)
    note += fmt::format(", and {} more", skipped.size() - max_listed);
  return note;
}

Result<RecordFileMatch> MatchRecordFiles(const std::string& pattern) {
  std::vector<std::string> paths;
  if (IsRemotePath(pattern)) {
    SLUICE_ASSIGN_OR_RETURN(paths, MatchRemotePattern(pattern));
  } else {
    glob_t g{};
    const int rc = glob(pattern.c_str(), GLOB_ERR, nullptr, &g);
    if (rc == 0) paths.assign(g.gl_pathv, g.gl_pathv + g.gl_pathc);
    globfree(&g);
  }
  if (paths.empty()) return Status::NotFound("no files match " + pattern);
  std::sort(paths.begin(), paths.end());
  RecordFileMatch match;
  for (const std::string& path : paths) {
    std::string why = SidecarKind(path);
    if (why.empty()) {
      const Status st = CheckFirstRecord(path);
      if (st.ok()) {
        match.files.push_back(path);
        continue;
      }
      const std::string name = BaseName(path);
      if (name.find(".tfrecord") != std::string::npos) {
        return Status::DataLoss(
            fmt::format("{} (matched by {}) is not a readable TFRecord file: {}", path, pattern,
                        Reason(path, st)));
      }
      why = "not a TFRecord file: " + Reason(path, st);
    }
    match.skipped.push_back({path, std::move(why)});
  }
  if (match.files.empty()) {
    return Status::InvalidArgument(
        fmt::format("no TFRecord files among the {} file{} {} matches; {}", paths.size(),
                    paths.size() == 1 ? "" : "s", pattern, match.SkippedNote()));
  }
  return match;
}

}  // namespace sluice::tools
