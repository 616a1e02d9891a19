// list_files: the file names matching glob(3) patterns, as string scalars,
// after brace expansion ("shard-{000000..000127}.tar", core/file_pattern.h),
// sorted and without duplicates; with options.shuffle, followed by a
// global_shuffle (a new order each iteration, as tf.data, from options.seed
// or the pipeline's seed). The names are listed when the dataset is built
// (NotFound if no pattern matches anything) and held in memory, so the
// dataset allows random access. A folder the pattern needs that cannot be
// read (EACCES, EIO, ELOOP...) is an error naming the pattern, the folder
// and the cause, never a silently shorter list; one that does not exist
// (ENOENT, ENOTDIR: a file where a folder would be) simply matches nothing.
#include <glob.h>

#include <algorithm>
#include <cerrno>

#include "sluice/core/file_pattern.h"
#include "sluice/core/filesystem.h"
#include "sluice/core/os_error.h"
#include "sluice/pipeline/internal/indexed_iterator.h"
#include "sluice/pipeline/internal/stages.h"

namespace sluice::pipeline_internal {
namespace {

class ListFilesNode : public DatasetNode {
 public:
  ListFilesNode(std::vector<std::string> files, std::string describe)
      : DatasetNode("list_files", "", {}, ElementSpec({{"", DType::kString, Shape{}}}),
                    static_cast<int64_t>(files.size())),
        files_(std::move(files)),
        describe_(std::move(describe)) {}
  std::string Describe() const override { return describe_; }
  bool random_access() const override { return true; }
  Result<Element> Get(IteratorContext&, int64_t i) const override {
    if (i < 0 || i >= static_cast<int64_t>(files_.size())) {
      return Status::OutOfRange("list_files: element " + std::to_string(i) + " of " +
                                std::to_string(files_.size()));
    }
    return Element({Tensor::StringScalar(files_[static_cast<size_t>(i)])});
  }
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams&) const override {
    return std::unique_ptr<IteratorNode>(std::make_unique<IndexedIterator>(ctx, *this));
  }

 private:
  std::vector<std::string> files_;
  std::string describe_;
};

// glob(3)'s errfunc has no user data: the first folder it could not read,
// for this thread's glob() call.
struct GlobError {
  std::string folder;
  int err = 0;
};
thread_local GlobError* tls_glob_error = nullptr;

int OnGlobError(const char* folder, int err) {
  if (err == ENOENT || err == ENOTDIR) return 0;  // nothing there: no match
  if (tls_glob_error != nullptr && tls_glob_error->err == 0) {
    tls_glob_error->folder = folder;
    tls_glob_error->err = err;
  }
  return 1;  // stop: the list would be incomplete
}

}  // namespace

Dataset MakeListFiles(const std::vector<std::string>& patterns, ListFilesOptions options) {
  if (patterns.empty()) {
    return Dataset::FromError(Status::InvalidArgument("list_files: no patterns given"));
  }
  std::vector<std::string> files;
  std::vector<std::string> expanded;
  for (const std::string& braced : patterns) {
    Result<std::vector<std::string>> names = ExpandBraces(braced);
    if (!names.ok()) return Dataset::FromError(names.status().WithContext("list_files"));
    expanded.insert(expanded.end(), names->begin(), names->end());
  }
  for (const std::string& pattern : expanded) {
    if (IsRemotePath(pattern)) {
      // Object stores: listed under the pattern's longest wildcard-free
      // prefix and matched as glob(3) would (core/filesystem.h MatchFiles).
      Result<std::vector<std::string>> matched = MatchFiles(pattern);
      if (!matched.ok()) return Dataset::FromError(matched.status().WithContext("list_files"));
      files.insert(files.end(), matched->begin(), matched->end());
      continue;
    }
    glob_t g{};
    GlobError error;
    tls_glob_error = &error;
    const int rc = glob(pattern.c_str(), GLOB_NOSORT, OnGlobError, &g);
    tls_glob_error = nullptr;
    if (rc == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) files.emplace_back(g.gl_pathv[i]);
    }
    globfree(&g);
    if (rc == GLOB_NOSPACE) {
      return Dataset::FromError(
          Status::ResourceExhausted("list_files: out of memory expanding '" + pattern + "'"));
    }
    if (rc == GLOB_ABORTED) {
      return Dataset::FromError(
          error.err != 0 ? OsError("list_files: expanding '" + pattern +
                                       "': cannot read the folder '" + error.folder + "'",
                                   error.err)
                         : Status::Unavailable("list_files: expanding '" + pattern +
                                               "': a folder could not be read"));
    }
  }
  if (files.empty()) {
    std::string all;
    for (size_t i = 0; i < patterns.size(); ++i) all += (i ? "', '" : "") + patterns[i];
    return Dataset::FromError(Status::NotFound("list_files: no files match '" + all + "'"));
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  std::string describe = "list_files(" + std::to_string(files.size()) + " files)";
  Dataset listed(std::make_shared<ListFilesNode>(std::move(files), std::move(describe)));
  if (!options.shuffle) return listed;
  // As tf.data: a new order every iteration, from the seed (or the
  // pipeline's seed). An index permutation: no buffer, tiny saved state.
  return listed.global_shuffle({.seed = options.seed, .name = "list_files_shuffle"});
}

}  // namespace sluice::pipeline_internal
