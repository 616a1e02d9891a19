// IdxFolder: the images of IDX files (idx_file.h) written out as an image
// folder (sluice/pipeline/image_folder.h), as `sluice convert idx --to-folder DIR` does:
//
//   DIR/<class folder>/<name prefix>-<index in the IDX file, 5 digits>.png
//
// each an 8-bit grayscale PNG of the image's exact pixels.
//
// Class folder names (ClassFolderNames): every byte of a class name outside
// [A-Za-z0-9._+-] becomes '_', as does a leading '.' (hidden folders are
// not classes), and an empty name is "_". If the names so made are distinct
// and sort (bytewise) in label order, they are used as they are; otherwise
// every one gets the label, zero-padded to the width of the largest label,
// and '_' in front ("T-shirt/top" -> "0_T-shirt_top"). Either way
// `sluice convert images DIR`, which numbers classes in sorted folder order,
// gives every image its original label. Every class gets its folder, with
// images or not, so that the numbering holds.
//
// Each file is written under a hidden temporary name in its class folder
// and renamed when complete, so an interrupted run leaves no partial image
// that a folder scan would list; with `resume`, files that exist are kept.
//
// WriteIdxFolder blocks; it encodes and writes with `workers` threads and
// draws the progress (progress.h) from the calling thread. The other
// functions are pure.
#ifndef SLUICE_TOOLS_IDX_FOLDER_H_
#define SLUICE_TOOLS_IDX_FOLDER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "idx_file.h"
#include "sluice/core/status.h"

namespace sluice::tools {

// One class name made safe as a folder name (the first rule above).
std::string SafeFolderName(std::string_view name);

// The class folder names, by label, following the rule above.
std::vector<std::string> ClassFolderNames(const std::vector<std::string>& names);

// "train-00042.png".
std::string IdxImageFileName(std::string_view name_prefix, size_t index);

struct IdxFolderJob {
  std::string dir;
  // REQUIRES: images->dims has 3 entries, labels->count() ==
  // images->count(), and every label < folders.size().
  const IdxArray* images = nullptr;
  const IdxArray* labels = nullptr;
  std::vector<std::string> folders;  // by label, from ClassFolderNames()
  std::string name_prefix;
  int workers = 1;
  // Without it DIR must not exist or be empty; with it, DIR may hold the
  // files of an earlier run, which are kept.
  bool resume = false;
  // fsync each image before its rename and its folder after (--sync).
  bool sync = false;
  bool progress = true;
};

struct IdxFolderReport {
  Status status;           // the first error (the run stops at it); OK otherwise
  uint64_t written = 0;    // files written by this run
  uint64_t kept = 0;       // existing files kept (resume)
  uint64_t bytes_out = 0;  // PNG bytes written
  double seconds = 0;
  // Non-hidden entries of DIR that are not class folders (resume only):
  // `convert images` would take such folders for classes.
  std::vector<std::string> foreign;
};

IdxFolderReport WriteIdxFolder(const IdxFolderJob& job);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_IDX_FOLDER_H_
