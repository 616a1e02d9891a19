// ConvertImageFile: one image file of a class folder to one serialized
// Example of the common image schema (image_example.h).
//
// The file is read straight into its place inside the record. Its format is
// decided by its first bytes (a .jpg holding a PNG is a PNG), and it is
// checked: by default its header is parsed (ReadJpegHeader / ReadPngHeader
// through ops::ImageOutputShape, which also gives height, width and
// channels); with `full_check` it is decoded too, strictly
// (DecodeImageOptions::strict with allow_harmless_warnings: data corrupted
// or cut short after the header, which a lenient decoder would make up, and
// a JPEG header claiming more than its bytes can hold, refused before
// decoding). With `resize` it is decoded (strictly with `full_check`),
// resized with ops::Resize (bilinear, antialias; an output over
// ops::kDefaultMaxImagePixels is refused before decoding), rounded to uint8
// and re-encoded with ops::EncodeJpeg at `quality`: every output is then a
// JPEG, with 1 channel for gray (and gray+alpha) inputs and 3 for the rest
// (alpha is dropped).
// With `restart_interval` > 0 every JPEG output gets a restart marker every
// that many MCUs (lowered to fit the MCU rows, see ops::JpegRestartInterval):
// a JPEG stored as it is is transcoded losslessly with
// ops::AddJpegRestartMarkers (same pixels; a file it refuses, for example
// one cut short, is skipped), a resized one is encoded with them. PNGs are
// stored unchanged.
//
// With a `gate`, the image's work (decode, resize, encode, transcode: see
// image_memory.h) waits for room in the gate's budget, once its header is
// read, and holds it until the record is built.
//
// Errors are the reason the file is skipped: unreadable (NotFound,
// FailedPrecondition, Unavailable from the OS), not JPEG or PNG, or a
// header or data the codecs reject (InvalidArgument, ResourceExhausted).
// Thread-safe.
#ifndef SLUICE_TOOLS_IMAGE_CONVERT_H_
#define SLUICE_TOOLS_IMAGE_CONVERT_H_

#include <optional>
#include <string>
#include <string_view>

#include "convert_runner.h"
#include "memory_gate.h"
#include "sluice/core/result.h"
#include "sluice/ops/resize.h"
#include "sluice/pipeline/image_folder.h"

namespace sluice::tools {

struct ImageConvertOptions {
  bool full_check = false;
  std::optional<ops::ImageSize> resize;
  bool keep_aspect = false;    // resize to fit inside, keeping the aspect ratio
  int quality = 95;            // JPEG quality after resizing
  int restart_interval = 0;    // > 0: restart markers every N MCUs in JPEG outputs
  MemoryGate* gate = nullptr;  // not owned; null: no budget
};

Result<RecordBytes> ConvertImageFile(const std::string& root, const ImageFile& file,
                                     std::string_view class_name,
                                     const ImageConvertOptions& options);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_IMAGE_CONVERT_H_
