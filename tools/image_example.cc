#include "image_example.h"

namespace sluice::tools {
namespace {

// Field 1 / field 2, length-delimited; Feature.int64_list is field 3.
constexpr char kTag1 = 0x0a;
constexpr char kTag2 = 0x12;
constexpr char kInt64ListTag = 0x1a;

size_t VarintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

void AppendVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

size_t FieldSize(size_t n) { return 1 + VarintSize(n) + n; }

void AppendFieldHeader(std::string* out, char tag, size_t n) {
  out->push_back(tag);
  AppendVarint(out, n);
}

// A Features map entry: key, then the Feature (one list) of `feature_size`
// bytes, whose bytes the caller appends.
void AppendEntryHeader(std::string* out, std::string_view key, size_t feature_size) {
  AppendFieldHeader(out, kTag1, FieldSize(key.size()) + FieldSize(feature_size));
  AppendFieldHeader(out, kTag1, key.size());
  out->append(key);
  AppendFieldHeader(out, kTag2, feature_size);
}

// Feature { int64_list { value: [v] } } (packed).
size_t Int64FeatureSize(int64_t v) {
  return FieldSize(FieldSize(VarintSize(static_cast<uint64_t>(v))));
}
void AppendInt64Entry(std::string* out, std::string_view key, int64_t v) {
  const uint64_t u = static_cast<uint64_t>(v);
  AppendEntryHeader(out, key, Int64FeatureSize(v));
  AppendFieldHeader(out, kInt64ListTag, FieldSize(VarintSize(u)));
  AppendFieldHeader(out, kTag1, VarintSize(u));
  AppendVarint(out, u);
}

// Feature { bytes_list { value: [b] } }, without b's bytes.
size_t BytesFeatureSize(size_t n) { return FieldSize(FieldSize(n)); }
void AppendBytesEntryHeader(std::string* out, std::string_view key, size_t n) {
  AppendEntryHeader(out, key, BytesFeatureSize(n));
  AppendFieldHeader(out, kTag1, FieldSize(n));
  AppendFieldHeader(out, kTag1, n);
}
void AppendBytesEntry(std::string* out, std::string_view key, std::string_view b) {
  AppendBytesEntryHeader(out, key, b.size());
  out->append(b);
}

}  // namespace

ImageExampleFrame FrameImageExample(const ImageExampleFields& f, size_t image_size) {
  // Features in key order: channels, class/label, class/text, encoded |
  // filename, format, height, width.
  std::string before;
  AppendInt64Entry(&before, "image/channels", f.channels);
  AppendInt64Entry(&before, "image/class/label", f.label);
  AppendBytesEntry(&before, "image/class/text", f.class_text);
  AppendBytesEntryHeader(&before, "image/encoded", image_size);
  ImageExampleFrame frame;
  AppendBytesEntry(&frame.tail, "image/filename", f.filename);
  AppendBytesEntry(&frame.tail, "image/format", f.format);
  AppendInt64Entry(&frame.tail, "image/height", f.height);
  AppendInt64Entry(&frame.tail, "image/width", f.width);
  const size_t body = before.size() + image_size + frame.tail.size();
  frame.head.reserve(1 + VarintSize(body) + before.size());
  AppendFieldHeader(&frame.head, kTag1, body);  // Example.features
  frame.head += before;
  return frame;
}

size_t MaxImageExampleHead(std::string_view class_text) {
  // Example tag and length, three small entries, the encoded entry's header.
  return 11 + 3 * 64 + 2 * class_text.size() + 64;
}

size_t MaxImageExampleTail(std::string_view filename, std::string_view format) {
  return 4 * 64 + 2 * (filename.size() + format.size());
}

std::string SerializeImageExample(const ImageExampleFields& fields, std::string_view image) {
  ImageExampleFrame frame = FrameImageExample(fields, image.size());
  std::string out;
  out.reserve(frame.head.size() + image.size() + frame.tail.size());
  out += frame.head;
  out += image;
  out += frame.tail;
  return out;
}

}  // namespace sluice::tools
