#include "image_convert.h"

#include <cerrno>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "image_example.h"
#include "image_memory.h"
#include "sluice/core/file.h"
#include "sluice/ops/decode_image.h"
#include "sluice/ops/jpeg.h"
#include "sluice/ops/jpeg_restart.h"
#include "sluice/ops/read_file.h"

namespace sluice::tools {
namespace {

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

ops::ResizeOptions ResizeOptionsOf(const ImageConvertOptions& o) {
  ops::ResizeOptions r;
  r.method = ops::ResizeMethod::kBilinear;
  r.antialias = true;
  r.preserve_aspect_ratio = o.keep_aspect;
  return r;
}

// Each step's input is dropped as soon as the next exists.
Result<RecordBytes> Reencode(std::string_view bytes, const ImageExampleFields& fields_in,
                             const ops::DecodeImageOptions& decode, const ImageConvertOptions& o) {
  Tensor pixels;
  {
    Tensor resized;
    {
      SLUICE_ASSIGN_OR_RETURN(Tensor image, ops::DecodeImage(bytes, decode));
      SLUICE_ASSIGN_OR_RETURN(resized, ops::Resize(image, *o.resize, ResizeOptionsOf(o)));
    }
    SLUICE_ASSIGN_OR_RETURN(pixels, RoundToUint8(resized));
  }
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
  ReadWholeFileOptions read;
  read.max_bytes = ops::kMaxReadFileBytes;
  read.room_before = before;
  read.room_after = after;
  SLUICE_ASSIGN_OR_RETURN(WholeFile in, ReadWholeFile(path, read));
  const std::string_view bytes = in.bytes();
  const ops::ImageFormat format = ops::DetectImageFormat(bytes);
  SLUICE_RETURN_IF_ERROR(CheckFormat(format, bytes));
  ops::DecodeImageOptions decode;
  decode.name = file.relative;
  // --check full refuses what the decoder would make up (and, before
  // decoding, a header that claims more than the bytes can hold).
  decode.strict = decode.allow_harmless_warnings = o.full_check;
  SLUICE_ASSIGN_OR_RETURN(Shape shape, ops::ImageOutputShape(bytes, decode));
  ImageExampleFields f;
  f.format = format == ops::ImageFormat::kJpeg ? "jpeg" : "png";
  f.height = shape.dim(0);
  f.width = shape.dim(1);
  f.channels = shape.dim(2);
  f.label = file.label;
  f.class_text = class_name;
  f.filename = file.relative;
  const bool transcode = in_place && o.restart_interval > 0 && format == ops::ImageFormat::kJpeg;
  ImageWork work;
  if (!in_place) {
    decode.channels = f.channels <= 2 ? 1 : 3;
    work.decoded = Shape{f.height, f.width, decode.channels};
    // An output over max_pixels fails here, before anything is decoded.
    SLUICE_ASSIGN_OR_RETURN(work.resized,
                            ops::ResizeOutputShape(*work.decoded, *o.resize, ResizeOptionsOf(o)));
  } else if (o.full_check) {
    work.decoded = shape;
  }
  work.transcode = transcode;
  // Held until the record is built: the decode, resize and encode buffers
  // of all workers together stay within the gate's budget.
  MemoryGate::Hold hold;
  if (o.gate != nullptr) {
    SLUICE_ASSIGN_OR_RETURN(uint64_t work_bytes, ImageWorkBytes(bytes, format, work));
    hold = o.gate->Acquire(work_bytes);
  }
  if (!in_place) return Reencode(bytes, f, decode, o);
  if (o.full_check) SLUICE_RETURN_IF_ERROR(ops::DecodeImage(bytes, decode).status());
  if (transcode) {
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
  // The frame goes around the bytes, into the room ReadWholeFile left.
  char* base = reinterpret_cast<char*>(in.buffer.data());
  const size_t begin = in.offset - frame.head.size(), end = in.offset + in.size;
  std::memcpy(base + begin, frame.head.data(), frame.head.size());
  std::memcpy(base + end, frame.tail.data(), frame.tail.size());
  return RecordBytes(std::move(in.buffer), begin, end + frame.tail.size());
}

}  // namespace sluice::tools
