// The common image schema of `sluice convert`: one tf.train.Example per
// image with the feature keys TensorFlow's image converters use.
//
//   image/encoded      bytes   the JPEG or PNG file
//   image/format       bytes   "jpeg" or "png"
//   image/height       int64
//   image/width        int64
//   image/channels     int64   what decode_jpeg / decode_png give with channels=0
//   image/class/label  int64   class id, 0..K-1
//   image/class/text   bytes   class name
//   image/filename     bytes   path relative to the input folder (or "train-00042")
//
// The serialized bytes are exactly ExampleBuilder's (features sorted by key,
// protobuf's deterministic encoding; a test checks). They are produced as a
// head and a tail around the image bytes, so a converter can read a file
// straight into its place in the record and copy nothing.
//
// Pure functions; thread-safe.
#ifndef SLUICE_TOOLS_IMAGE_EXAMPLE_H_
#define SLUICE_TOOLS_IMAGE_EXAMPLE_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace sluice::tools {

// Everything but the image bytes.
struct ImageExampleFields {
  std::string_view format;  // "jpeg" or "png"
  int64_t height = 0;
  int64_t width = 0;
  int64_t channels = 0;
  int64_t label = 0;
  std::string_view class_text;
  std::string_view filename;
};

// The serialized Example is head + image + tail.
struct ImageExampleFrame {
  std::string head;
  std::string tail;
};
ImageExampleFrame FrameImageExample(const ImageExampleFields& fields, size_t image_size);

// Upper bounds on the head and tail sizes, from the strings alone (the
// integers take at most 10 bytes each): for reserving room around the image
// before its header, and so its height and width, are known.
size_t MaxImageExampleHead(std::string_view class_text);
size_t MaxImageExampleTail(std::string_view filename, std::string_view format);

// head + image + tail in one string.
std::string SerializeImageExample(const ImageExampleFields& fields, std::string_view image);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_IMAGE_EXAMPLE_H_
