// ListImageFolder: the images of a folder with one subfolder per class, by
// the rules `sluice convert images` lists its input folder with
// (docs/convert.md, "the input folder"), so that a sample reads the same
// images, with the same labels, as the records convert makes of it:
//
//   - classes are the subfolders of DIR (a link to a folder counts) whose
//     names do not start with '.', numbered 0..K-1 in sorted (bytewise)
//     order of their names;
//   - a class's images are the files at any depth below its folder whose
//     extension, in any case, is .jpg .jpeg .jpe .jfif .png (and .gif .bmp
//     .webp .tif .tiff: listed so that their decode error names them, as
//     convert reports them), sorted by their path relative to DIR; links
//     to files are followed, links to folders below a class are not;
//   - ignored: hidden files and folders (a name starting with '.'), not
//     even counted; files with any other extension (.txt, .xml, ...) and
//     files directly in DIR, counted in `ignored`.
//
// The same rules as tools/image_folder.h (ScanImageFolder), written again
// here because a sample uses only the public library (docs/architecture.md,
// "Known debts": the listing belongs public in pipeline/).
// Header-only; touches only the folder it lists.
#ifndef SLUICE_SAMPLES_IMAGE_FOLDER_H_
#define SLUICE_SAMPLES_IMAGE_FOLDER_H_

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "sluice/core/result.h"

namespace samples {

struct ImageFolderListing {
  std::vector<std::string> classes;  // by label
  std::vector<std::string> files;    // DIR/<class>/..., by (label, path)
  std::vector<int32_t> labels;       // one per file
  std::vector<std::string> ignored;  // paths relative to DIR, sorted (hidden ones left out)
};

inline bool HasImageExtension(std::string_view name) {
  const size_t dot = name.rfind('.');
  if (dot == std::string_view::npos || dot == 0) return false;
  std::string ext(name.substr(dot + 1));
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* image :
       {"jpg", "jpeg", "jpe", "jfif", "png", "gif", "bmp", "webp", "tif", "tiff"}) {
    if (ext == image) return true;
  }
  return false;
}

// NotFound or FailedPrecondition naming the folder that cannot be listed.
inline sluice::Result<ImageFolderListing> ListImageFolder(const std::string& dir) {
  namespace fs = std::filesystem;
  auto hidden = [](const fs::path& p) { return p.filename().string().starts_with('.'); };
  auto list_error = [](const fs::path& p, const std::error_code& ec) {
    const std::string msg = "cannot list " + p.string() + ": " + ec.message();
    return ec == std::errc::no_such_file_or_directory ? sluice::Status::NotFound(msg)
                                                      : sluice::Status::FailedPrecondition(msg);
  };
  const fs::path root(dir);
  std::error_code ec;
  ImageFolderListing out;
  std::vector<fs::path> class_dirs;
  fs::directory_iterator top(root, ec), end;
  if (ec) return list_error(root, ec);
  for (; top != end; top.increment(ec)) {
    if (ec) return list_error(root, ec);
    if (hidden(top->path())) continue;
    if (top->is_directory(ec)) {
      class_dirs.push_back(top->path());
    } else {
      out.ignored.push_back(top->path().filename().string());
    }
  }
  if (ec) return list_error(root, ec);
  std::sort(class_dirs.begin(), class_dirs.end(), [](const fs::path& a, const fs::path& b) {
    return a.filename().string() < b.filename().string();
  });
  for (size_t label = 0; label < class_dirs.size(); ++label) {
    out.classes.push_back(class_dirs[label].filename().string());
    std::vector<std::string> images;  // relative to DIR
    fs::recursive_directory_iterator it(class_dirs[label], ec), rend;
    if (ec) return list_error(class_dirs[label], ec);
    for (; it != rend; it.increment(ec)) {
      if (ec) return list_error(class_dirs[label], ec);
      if (hidden(it->path())) {
        if (it->is_directory(ec)) it.disable_recursion_pending();
        continue;
      }
      if (it->is_directory(ec)) continue;
      std::string relative = it->path().lexically_relative(root).generic_string();
      (HasImageExtension(it->path().filename().string()) ? images : out.ignored)
          .push_back(std::move(relative));
    }
    if (ec) return list_error(class_dirs[label], ec);
    std::sort(images.begin(), images.end());
    for (const std::string& image : images) {
      out.files.push_back((root / image).string());
      out.labels.push_back(static_cast<int32_t>(label));
    }
  }
  std::sort(out.ignored.begin(), out.ignored.end());
  return out;
}

}  // namespace samples

#endif  // SLUICE_SAMPLES_IMAGE_FOLDER_H_
