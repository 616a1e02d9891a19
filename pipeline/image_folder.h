// ImageFolder: the images of a class-per-subfolder tree, as Keras'
// image_dataset_from_directory and TensorFlow's ImageNet converter read it.
//
//   DIR/<class>/.../<file>.<ext>
//
// Every subfolder of DIR that is not hidden is a class; classes get ids
// 0..K-1 in sorted (bytewise) order of their names. A class's files are the
// files anywhere below its folder, sorted by their path relative to DIR.
// What is listed, what is ignored:
//   - files whose extension (any case) is an image format's: .jpg .jpeg
//     .jpe .jfif .png, and also .gif .bmp .webp .tif .tiff, so that images
//     sluice cannot convert are reported rather than silently left out;
//   - anything else (.txt, .xml, ...), hidden files and folders (names
//     starting with '.'), and files directly in DIR are ignored: counted,
//     not listed.
// The content, not the extension, decides the format later.
//
// `sluice convert images`, `sluice bench --images` and the samples list
// folders with it, so that they all see the same images with the same
// labels (docs/convert.md, "the input folder"). A value; ScanImageFolder
// touches only the file system it lists and is thread-safe.
#ifndef SLUICE_PIPELINE_IMAGE_FOLDER_H_
#define SLUICE_PIPELINE_IMAGE_FOLDER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/core/result.h"

namespace sluice {

struct ImageFile {
  std::string relative;  // path relative to DIR, '/'-separated
  uint64_t size = 0;     // bytes when listed
  int64_t label = 0;     // class id
};

struct ImageFolder {
  std::string root;
  std::vector<std::string> classes;    // by id
  std::vector<uint64_t> class_counts;  // files listed per class
  std::vector<ImageFile> files;        // sorted by (label, relative)
  std::vector<std::string> ignored;    // relative paths of ignored files, sorted
};

// True for the image extensions above (case-insensitive, without the dot).
bool HasImageExtension(std::string_view filename);

// Lists `dir`. NotFound / FailedPrecondition naming the folder if it or a
// class folder cannot be read.
Result<ImageFolder> ScanImageFolder(const std::string& dir);

}  // namespace sluice

#endif  // SLUICE_PIPELINE_IMAGE_FOLDER_H_
