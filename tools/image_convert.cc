#include "image_convert.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "image_example.h"
#include "sluice/ops/decode_image.h"
#include "sluice/ops/jpeg.h"
#include "sluice/ops/jpeg_restart.h"
#include "sluice/ops/read_file.h"

namespace sluice::tools {
namespace {

Status OsError(std::string_view what, const std::string& path, int err) {
  const std::string msg = fmt::format("{} {}: {}", what, path, std::strerror(err));
  if (err == ENOENT) return Status::NotFound(msg);
  if (err == EACCES || err == EPERM) return Status::FailedPrecondition(msg);
  return Status::Unavailable(msg);
}

// A file's bytes at [begin, end) of `data`, with spare room on both sides.
struct ReadBuffer {
  std::unique_ptr<char[]> data;
  size_t begin = 0, end = 0;
  std::string_view bytes() const { return {data.get() + begin, end - begin}; }
};

// Reads `path` into a new buffer, leaving `before` bytes free in front and
// `after` bytes behind. (ops::ReadFile reads into a buffer of its own; here
// the file goes straight to its place in the record.)
Result<ReadBuffer> ReadWithRoom(const std::string& path, size_t before, size_t after) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return OsError("cannot open", path, errno);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) return OsError("cannot stat", path, errno);
  if (!S_ISREG(st.st_mode)) return Status::InvalidArgument(path + " is not a regular file");
  if (st.st_size > ops::kMaxReadFileBytes) {
    return Status::ResourceExhausted(fmt::format("{} has {} bytes, more than the limit of {}", path,
                                                 st.st_size, ops::kMaxReadFileBytes));
  }
  const size_t size = static_cast<size_t>(st.st_size);
  ReadBuffer buf;
  // One byte more than the size, to notice a file that grows meanwhile.
  buf.data = std::make_unique_for_overwrite<char[]>(before + size + 1 + after);
  buf.begin = before;
  size_t n = 0;
  while (n < size + 1) {
    const ssize_t r = ::pread(fd, buf.data.get() + before + n, size + 1 - n, static_cast<off_t>(n));
    if (r < 0) {
      if (errno == EINTR) continue;
      return OsError("cannot read", path, errno);
    }
    if (r == 0) break;
    n += static_cast<size_t>(r);
  }
  if (n > size) return Status::Unavailable(path + " grew while it was read");
  buf.end = before + n;
  return buf;
}

Status CheckFormat(ops::ImageFormat format, std::string_view bytes) {
  if (format == ops::ImageFormat::kJpeg || format == ops::ImageFormat::kPng) return Status::OK();
  if (bytes.empty()) return Status::InvalidArgument("empty file");
  if (format != ops::ImageFormat::kUnknown) {
    return Status::InvalidArgument(
        fmt::format("unsupported image format {} (sluice converts JPEG "
                    "and PNG)",
                    ops::ImageFormatName(format)));
  }
  std::string head;
  for (size_t i = 0; i < std::min<size_t>(bytes.size(), 4); ++i) {
    head += fmt::format("{}{:02x}", i ? " " : "", static_cast<uint8_t>(bytes[i]));
  }
  return Status::InvalidArgument("not a JPEG or PNG file (it starts with " + head + ")");
}

// float32 pixels to uint8 as tf.cast(tf.clip_by_value(tf.round(x), 0, 255), tf.uint8):
// round half to even, then clamp.
Result<Tensor> RoundToUint8(const Tensor& pixels) {
  SLUICE_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(DType::kUInt8, pixels.shape()));
  std::span<const float> in = pixels.flat<float>();
  std::span<uint8_t> o = out.flat<uint8_t>();
  for (size_t i = 0; i < in.size(); ++i) {
    const float r = std::nearbyint(in[i]);
    o[i] = !(r > 0.0f) ? 0 : r >= 255.0f ? 255 : static_cast<uint8_t>(r);  // NaN -> 0
  }
  return out;
}

Result<RecordBytes> Reencode(std::string_view bytes, const ImageExampleFields& fields_in,
                             const ops::DecodeImageOptions& decode, const ImageConvertOptions& o) {
  SLUICE_ASSIGN_OR_RETURN(Tensor image, ops::DecodeImage(bytes, decode));
  ops::ResizeOptions r;
  r.method = ops::ResizeMethod::kBilinear;
  r.antialias = true;
  r.preserve_aspect_ratio = o.keep_aspect;
  SLUICE_ASSIGN_OR_RETURN(Tensor resized, ops::Resize(image, *o.resize, r));
  SLUICE_ASSIGN_OR_RETURN(Tensor pixels, RoundToUint8(resized));
  ops::EncodeJpegOptions e;
  e.quality = o.quality;
  e.restart_interval = o.restart_interval;
  SLUICE_ASSIGN_OR_RETURN(std::string jpeg, ops::EncodeJpeg(pixels, e));
  ImageExampleFields f = fields_in;
  f.format = "jpeg";
  f.height = pixels.shape().dim(0);
  f.width = pixels.shape().dim(1);
  f.channels = pixels.shape().dim(2);
  return RecordBytes(SerializeImageExample(f, jpeg));
}

}  // namespace

Result<RecordBytes> ConvertImageFile(const std::string& root, const ImageFile& file,
                                     std::string_view class_name, const ImageConvertOptions& o) {
  const std::string path = root + "/" + file.relative;
  const bool in_place = !o.resize.has_value();
  const size_t before = in_place ? MaxImageExampleHead(class_name) : 0;
  const size_t after = in_place ? MaxImageExampleTail(file.relative, "jpeg") : 0;
  SLUICE_ASSIGN_OR_RETURN(ReadBuffer in, ReadWithRoom(path, before, after));
  const std::string_view bytes = in.bytes();
  const ops::ImageFormat format = ops::DetectImageFormat(bytes);
  SLUICE_RETURN_IF_ERROR(CheckFormat(format, bytes));
  ops::DecodeImageOptions decode;
  decode.name = file.relative;
  SLUICE_ASSIGN_OR_RETURN(Shape shape, ops::ImageOutputShape(bytes, decode));
  ImageExampleFields f;
  f.format = format == ops::ImageFormat::kJpeg ? "jpeg" : "png";
  f.height = shape.dim(0);
  f.width = shape.dim(1);
  f.channels = shape.dim(2);
  f.label = file.label;
  f.class_text = class_name;
  f.filename = file.relative;
  if (!in_place) {
    decode.channels = f.channels <= 2 ? 1 : 3;
    return Reencode(bytes, f, decode, o);
  }
  if (o.full_check) SLUICE_RETURN_IF_ERROR(ops::DecodeImage(bytes, decode).status());
  if (o.restart_interval > 0 && format == ops::ImageFormat::kJpeg) {
    // Re-encoded, so not in place: height, width and channels stay (the
    // pixels are the same).
    ops::JpegRestartOptions r;
    r.interval = o.restart_interval;
    r.name = file.relative;
    SLUICE_ASSIGN_OR_RETURN(std::string jpeg, ops::AddJpegRestartMarkers(bytes, r));
    return RecordBytes(SerializeImageExample(f, jpeg));
  }
  const ImageExampleFrame frame = FrameImageExample(f, bytes.size());
  if (frame.head.size() > before || frame.tail.size() > after) {
    return Status::Internal("image Example framing exceeds its reserved room for " + path);
  }
  char* base = in.data.get();
  std::memcpy(base + in.begin - frame.head.size(), frame.head.data(), frame.head.size());
  std::memcpy(base + in.end, frame.tail.data(), frame.tail.size());
  return RecordBytes(std::move(in.data), in.begin - frame.head.size(), in.end + frame.tail.size());
}

}  // namespace sluice::tools
