#include <glob.h>

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "commands.h"

#include "sluice/core/file_pattern.h"
#include "sluice/core/filesystem.h"

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
        // An object-store URI (or a glob of them) is checked when opened.
        if (path == "-" || IsRemotePath(path)) return std::string();
        return CLI::ExistingFile(path);
      },
      "FILE, URI or -");
}

Result<std::vector<std::string>> MatchRemotePattern(const std::string& pattern) {
  SLUICE_ASSIGN_OR_RETURN(std::vector<std::string> patterns, ExpandBraces(pattern));
  std::vector<std::string> out;
  for (const std::string& p : patterns) {
    SLUICE_ASSIGN_OR_RETURN(std::vector<std::string> matched, MatchFiles(p));
    out.insert(out.end(), matched.begin(), matched.end());
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Status AppendMatches(const std::string& arg, bool keep_unmatched, std::vector<std::string>* files) {
  if (IsRemotePath(arg)) {
    SLUICE_ASSIGN_OR_RETURN(std::vector<std::string> matched, MatchRemotePattern(arg));
    if (matched.empty() && keep_unmatched) matched.push_back(arg);
    files->insert(files->end(), matched.begin(), matched.end());
    return Status::OK();
  }
  SLUICE_ASSIGN_OR_RETURN(std::vector<std::string> patterns, ExpandBraces(arg));
  for (const std::string& pattern : patterns) {
    glob_t g{};
    if (glob(pattern.c_str(), keep_unmatched ? GLOB_NOCHECK : 0, nullptr, &g) == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) files->emplace_back(g.gl_pathv[i]);
    }
    globfree(&g);
  }
  return Status::OK();
}

bool ExpandRemotePatterns(std::string_view command, std::vector<std::string>* files,
                          int* exit_code) {
  std::vector<std::string> out;
  for (std::string& f : *files) {
    if (!IsRemotePath(f) || f.find_first_of("*?[{") == std::string::npos) {
      out.push_back(std::move(f));
      continue;
    }
    Result<std::vector<std::string>> matched = MatchRemotePattern(f);
    if (!matched.ok()) {
      *exit_code = Fail(command, matched.status());
      return false;
    }
    if (matched->empty()) {
      *exit_code = Fail(command, Status::NotFound("no objects match " + f));
      return false;
    }
    for (std::string& m : *matched) out.push_back(std::move(m));
  }
  *files = std::move(out);
  return true;
}

}  // namespace sluice::tools
