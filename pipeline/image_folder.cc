#include "sluice/pipeline/image_folder.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace sluice {
namespace {

namespace fs = std::filesystem;

Status ListError(const fs::path& path, const std::error_code& ec) {
  const std::string msg = "cannot list " + path.string() + ": " + ec.message();
  if (ec == std::errc::no_such_file_or_directory) return Status::NotFound(msg);
  return Status::FailedPrecondition(msg);
}

bool Hidden(const fs::path& p) {
  const std::string name = p.filename().string();
  return !name.empty() && name[0] == '.';
}

// Appends the files below `class_dir` (any depth) to `folder`.
Status ScanClass(const fs::path& root, const fs::path& class_dir, int64_t label,
                 ImageFolder& folder) {
  std::error_code ec;
  fs::recursive_directory_iterator it(class_dir, ec), end;
  if (ec) return ListError(class_dir, ec);
  for (; it != end; it.increment(ec)) {
    if (ec) return ListError(class_dir, ec);
    const fs::directory_entry& e = *it;
    if (Hidden(e.path())) {
      if (e.is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    if (e.is_directory(ec)) continue;
    std::string relative = e.path().lexically_relative(root).generic_string();
    if (!HasImageExtension(e.path().filename().string())) {
      folder.ignored.push_back(std::move(relative));
      continue;
    }
    std::error_code size_ec;
    const uintmax_t size = e.file_size(size_ec);  // a broken link is read, and reported, later
    folder.files.push_back({std::move(relative), size_ec ? 0 : static_cast<uint64_t>(size), label});
    ++folder.class_counts[label];
  }
  if (ec) return ListError(class_dir, ec);
  return Status::OK();
}

}  // namespace

bool HasImageExtension(std::string_view filename) {
  const size_t dot = filename.rfind('.');
  if (dot == std::string_view::npos || dot == 0) return false;
  std::string ext(filename.substr(dot + 1));
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const char* const kExtensions[] = {"jpg", "jpeg", "jpe",  "jfif", "png",
                                            "gif", "bmp",  "webp", "tif",  "tiff"};
  return std::find(std::begin(kExtensions), std::end(kExtensions), ext) != std::end(kExtensions);
}

Result<ImageFolder> ScanImageFolder(const std::string& dir) {
  ImageFolder folder;
  folder.root = dir;
  const fs::path root(dir);
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    return fs::exists(root, ec) ? Status::FailedPrecondition(dir + " is not a folder")
                                : Status::NotFound(dir + " does not exist");
  }
  std::vector<fs::path> class_dirs;
  fs::directory_iterator it(root, ec), end;
  if (ec) return ListError(root, ec);
  for (; it != end; it.increment(ec)) {
    if (ec) return ListError(root, ec);
    if (Hidden(it->path())) continue;
    if (it->is_directory(ec)) {
      class_dirs.push_back(it->path());
    } else {
      folder.ignored.push_back(it->path().filename().string());
    }
  }
  if (ec) return ListError(root, ec);
  std::sort(class_dirs.begin(), class_dirs.end(), [](const fs::path& a, const fs::path& b) {
    return a.filename().string() < b.filename().string();
  });
  folder.class_counts.assign(class_dirs.size(), 0);
  for (size_t label = 0; label < class_dirs.size(); ++label) {
    folder.classes.push_back(class_dirs[label].filename().string());
    SLUICE_RETURN_IF_ERROR(ScanClass(root, class_dirs[label], static_cast<int64_t>(label), folder));
  }
  std::sort(folder.files.begin(), folder.files.end(), [](const ImageFile& a, const ImageFile& b) {
    return a.label != b.label ? a.label < b.label : a.relative < b.relative;
  });
  std::sort(folder.ignored.begin(), folder.ignored.end());
  return folder;
}

}  // namespace sluice
