// DecodeJpeg, DecodeAndCropJpeg and their *Into() and shape forms.
//
// One path for all of them, on libjpeg's scanline API (the same calls as
// TensorFlow's decoder, hence the same pixels): read the header, configure
// color space, DCT scale and method, check limits, start, optionally crop
// (jpeg_crop_scanline for columns, jpeg_skip_scanlines for rows), then read
// rows straight into the output, or through one scratch row when columns
// must be trimmed or CMYK converted.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "sluice/ops/internal/jpeg_lib.h"
#include "sluice/ops/internal/jpeg_region.h"
#include "sluice/ops/internal/jpeg_rows.h"
#include "sluice/ops/internal/jpeg_splice.h"
#include "sluice/ops/jpeg.h"

namespace sluice::ops {
namespace {

using ops_internal::JpegCall;
using ops_internal::JpegDecompressor;
using ops_internal::JpegError;
using ops_internal::RowPlan;

// The decompressor of this thread, configured for one image, released at
// scope exit (jpeg_abort_decompress never fails).
struct Session {
  JpegDecompressor* d = nullptr;
  std::string where;
  int channels = 0;  // of the output
  ~Session() {
    if (d != nullptr) ops_internal::EndJpegDecode(d);
  }
};

// Where decoded rows go: into *tensor (allocated here if `allocate`, else
// checked), or, with `region`, into a buffer of whole decoded rows that the
// region views (jpeg_region.h), or, with `rows`, band by band to a function.
struct Sink {
  Tensor* tensor = nullptr;
  bool allocate = false;
  ops_internal::JpegRegion* region = nullptr;
  const ops_internal::JpegRowsFn* rows = nullptr;  // whole images only
};

struct HeaderArgs {
  j_decompress_ptr cinfo;
  int result;
};

void ReadHeader(void* p) {
  auto* a = static_cast<HeaderArgs*>(p);
  a->result = jpeg_read_header(a->cinfo, TRUE);
}

void CalcOutputDimensions(void* p) {
  jpeg_calc_output_dimensions(static_cast<j_decompress_ptr>(p));
}

Status CheckOptions(const DecodeJpegOptions& o, const std::string& where) {
  if (o.channels != 0 && o.channels != 1 && o.channels != 3) {
    return Status::InvalidArgument(where + ": channels must be 0, 1 or 3, got " +
                                   std::to_string(o.channels));
  }
  if (o.ratio != 1 && o.ratio != 2 && o.ratio != 4 && o.ratio != 8) {
    return Status::InvalidArgument(where + ": ratio must be 1, 2, 4 or 8, got " +
                                   std::to_string(o.ratio));
  }
  if (o.min_width < 0 || o.min_height < 0) {
    return Status::InvalidArgument(where + ": min_width and min_height must be >= 0");
  }
  if ((o.min_width > 0 || o.min_height > 0) && o.ratio != 1) {
    return Status::InvalidArgument(where + ": set either ratio or min_width/min_height, not both");
  }
  if (!(o.acceptable_fraction >= 0.0f && o.acceptable_fraction <= 1.0f)) {
    return Status::InvalidArgument(where + ": acceptable_fraction must be in [0, 1]");
  }
  if (o.max_pixels <= 0) return Status::InvalidArgument(where + ": max_pixels must be > 0");
  return Status::OK();
}

ops_internal::JpegWarnings WarningsOf(const DecodeJpegOptions& o) {
  using ops_internal::JpegWarnings;
  if (!o.strict) return JpegWarnings::kIgnore;
  return o.allow_harmless_warnings ? JpegWarnings::kFailUnlessHarmless : JpegWarnings::kFail;
}

// Reads the header and configures the output; afterwards cinfo.output_width,
// output_height describe the (scaled) image and s->channels the tensor.
Status Open(std::string_view bytes, const DecodeJpegOptions& o, std::string_view op, Session* s) {
  s->where = ops_internal::JpegWhere(op, o.name, bytes.size());
  SLUICE_RETURN_IF_ERROR(CheckOptions(o, s->where));
  if (bytes.empty()) return Status::InvalidArgument(s->where + ": empty input");
  SLUICE_ASSIGN_OR_RETURN(s->d, ops_internal::ThreadJpegDecompressor());
  // libjpeg's own buffers (the whole-image coefficients of a progressive
  // file: up to 8 bytes per pixel) stay within what max_pixels implies.
  const int64_t max_memory = o.max_pixels > (int64_t{1} << 58) / 8
                                 ? int64_t{1} << 58
                                 : 8 * o.max_pixels + (int64_t{64} << 20);
  ops_internal::BeginJpegDecode(s->d, bytes, o.try_recover_truncated, WarningsOf(o), max_memory);
  j_decompress_ptr cinfo = &s->d->cinfo;
  HeaderArgs args{cinfo, 0};
  if (!JpegCall(&s->d->err, ReadHeader, &args)) return JpegError(s->d->err, s->where);
  if (args.result != JPEG_HEADER_OK) {
    return Status::InvalidArgument(s->where + ": the data ends before the first scan (truncated)");
  }
  const int64_t width = cinfo->image_width;
  const int64_t height = cinfo->image_height;
  if (width * height > o.max_pixels) {
    return Status::ResourceExhausted(s->where + ": the image is " + std::to_string(width) + "x" +
                                     std::to_string(height) + ", more than max_pixels (" +
                                     std::to_string(o.max_pixels) + ")");
  }
  if (o.strict) {
    SLUICE_RETURN_IF_ERROR(ops_internal::CheckJpegBlocksFit(*cinfo, bytes.size(), s->where));
  }
  const bool cmyk = cinfo->jpeg_color_space == JCS_CMYK || cinfo->jpeg_color_space == JCS_YCCK;
  s->channels = o.channels;
  if (s->channels == 0) {
    if (cinfo->num_components != 1 && cinfo->num_components < 3) {
      return Status::InvalidArgument(s->where + ": unsupported JPEG with " +
                                     std::to_string(cinfo->num_components) + " components");
    }
    s->channels = cinfo->num_components == 1 ? 1 : 3;
  }
  cinfo->out_color_space = cmyk ? JCS_CMYK : s->channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  cinfo->scale_num = 1;
  cinfo->scale_denom = o.min_width > 0 || o.min_height > 0
                           ? JpegScaleDenominator(width, height, o.min_width, o.min_height)
                           : o.ratio;
  cinfo->dct_method = o.dct_method == JpegDctMethod::kIntegerFast ? JDCT_IFAST : JDCT_ISLOW;
  cinfo->do_fancy_upsampling = o.fancy_upscaling ? TRUE : FALSE;
  if (!JpegCall(&s->d->err, CalcOutputDimensions, cinfo)) return JpegError(s->d->err, s->where);
  return Status::OK();
}

Status CheckOut(const Tensor& out, const Shape& shape, const std::string& where) {
  if (out.dtype() != DType::kUInt8 || out.shape() != shape) {
    return Status::InvalidArgument(where + ": the output tensor is " +
                                   std::string(DTypeName(out.dtype())) + out.shape().ToString() +
                                   ", the image needs uint8" + shape.ToString());
  }
  return Status::OK();
}

struct StartArgs {
  j_decompress_ptr cinfo;
  boolean started;
};

void Start(void* p) {
  auto* a = static_cast<StartArgs*>(p);
  a->started = jpeg_start_decompress(a->cinfo);
}

struct CropArgs {
  j_decompress_ptr cinfo;
  JDIMENSION x, width, skip_rows;
};

void Crop(void* p) {
  auto* a = static_cast<CropArgs*>(p);
  // Whole-width crops must not go through jpeg_crop_scanline (it wants a
  // strictly narrower window on some libjpeg-turbo versions).
  if (a->x != 0 || a->width != a->cinfo->output_width) {
    jpeg_crop_scanline(a->cinfo, &a->x, &a->width);
  }
  if (a->skip_rows > 0) a->skip_rows = jpeg_skip_scanlines(a->cinfo, a->skip_rows);
}

struct FinishArgs {
  j_decompress_ptr cinfo;
  boolean finished;
};

void Finish(void* p) {
  auto* a = static_cast<FinishArgs*>(p);
  a->finished = jpeg_finish_decompress(a->cinfo);
}

// True if libjpeg may apply block smoothing to this progressive image: its
// scans left some of the low-frequency coefficients unknown or approximate
// (the test mirrors libjpeg's smoothing_ok, conservatively).
bool IncompleteProgressive(j_decompress_ptr cinfo) {
  if (!cinfo->progressive_mode || !cinfo->do_block_smoothing || cinfo->coef_bits == nullptr) {
    return false;
  }
  for (int c = 0; c < cinfo->num_components; ++c) {
    for (int k = 0; k < 10; ++k) {
      if (cinfo->coef_bits[c][k] != 0) return true;
    }
  }
  return false;
}

// The data ended (libjpeg suspended) after `done` of `rows` rows: TF's
// acceptable_fraction rule. OK means: keep what was decoded, zeros below.
Status CheckTruncated(const Session& s, const DecodeJpegOptions& o, uint32_t done, uint32_t rows) {
  const double fraction = static_cast<double>(done) / rows;
  if (o.strict || fraction < o.acceptable_fraction) {
    return Status::InvalidArgument(s.where + ": premature end of JPEG data after row " +
                                   std::to_string(done) + " of " + std::to_string(rows) +
                                   " (truncated)");
  }
  return Status::OK();
}

// After a whole image's rows: reads up to EOI; in strict mode warnings there
// are errors too. If the data ends right after the last scan (no EOI, yet
// every row decoded), finishing suspends: accepted, as TF ignores it,
// unless strict.
Status FinishWhole(Session* s, const DecodeJpegOptions& o) {
  FinishArgs finish{&s->d->cinfo, FALSE};
  if (!JpegCall(&s->d->err, Finish, &finish)) return JpegError(s->d->err, s->where);
  if (!finish.finished && o.strict) {
    return Status::InvalidArgument(s->where + ": the data ends before the EOI marker");
  }
  return Status::OK();
}

// Starts decompressing the image opened in `s` and plans rows of `width`
// output pixels (direct, no skip: the caller adjusts).
Status StartRows(Session* s, JDIMENSION width, RowPlan* plan) {
  j_decompress_ptr cinfo = &s->d->cinfo;
  StartArgs start{cinfo, FALSE};
  if (!JpegCall(&s->d->err, Start, &start)) return JpegError(s->d->err, s->where);
  if (!start.started) {
    return Status::InvalidArgument(s->where +
                                   ": the data ends inside a progressive scan (truncated)");
  }
  plan->cmyk = cinfo->out_color_space == JCS_CMYK;
  plan->adobe_inverted = cinfo->saw_Adobe_marker != 0;
  plan->in_channels = cinfo->output_components;
  plan->out_channels = s->channels;
  plan->width = width;
  return Status::OK();
}

// Decodes `window` (or the whole image) of the image opened in `s` into out.
Status Run(Session* s, const DecodeJpegOptions& o, const JpegCropWindow* window, const Sink& sink) {
  JpegDecompressor* d = s->d;
  j_decompress_ptr cinfo = &d->cinfo;
  ops_internal::JpegRegion* region = sink.region;
  const JDIMENSION out_w =
      static_cast<JDIMENSION>(region ? window->width : sink.tensor->shape().dim(1));
  const JDIMENSION out_h =
      static_cast<JDIMENSION>(region ? window->height : sink.tensor->shape().dim(0));
  RowPlan plan;
  SLUICE_RETURN_IF_ERROR(StartRows(s, out_w, &plan));
  JDIMENSION discard = 0;  // rows to read and drop before the window
  if (window != nullptr && IncompleteProgressive(cinfo)) {
    // libjpeg smooths the blocks of a progressive image whose scans stop
    // early using neighboring blocks, which a cropped or skipped decode does
    // not see: decode whole rows and keep the window's part (found by
    // jpeg_decode_fuzz). Complete files crop as below.
    plan.skip = static_cast<size_t>(window->x);
    discard = static_cast<JDIMENSION>(window->y);
  } else if (window != nullptr) {
    // Widen the decoded columns by a margin so that libjpeg's upsampler sees
    // real neighbors at the window's borders, not replicated edges.
    const int64_t margin = ops_internal::kJpegCropMargin;
    const int64_t x0 = std::max<int64_t>(0, window->x - margin);
    const int64_t x1 = std::min<int64_t>(cinfo->output_width, window->x + window->width + margin);
    CropArgs crop{cinfo, static_cast<JDIMENSION>(x0), static_cast<JDIMENSION>(x1 - x0),
                  static_cast<JDIMENSION>(window->y)};
    if (!JpegCall(&d->err, Crop, &crop)) return JpegError(d->err, s->where);
    plan.skip = static_cast<size_t>(window->x) - crop.x;
    // jpeg_skip_scanlines skips fewer rows only if the image ends first.
    discard = static_cast<JDIMENSION>(window->y) - crop.skip_rows;
  }
  plan.direct = !plan.cmyk && plan.skip == 0 && cinfo->output_width == out_w && discard == 0;
  uint8_t* out_rows = nullptr;
  size_t out_stride = static_cast<size_t>(out_w) * s->channels;
  if (region != nullptr) {
    // Whole decoded rows straight into the region's buffer when nothing
    // needs converting; each starts 8 bytes past a 32-byte boundary (see
    // the scratch row below).
    const bool wide = !plan.cmyk && discard == 0;
    const size_t row = static_cast<size_t>(wide ? cinfo->output_width : out_w) * s->channels;
    const size_t stride = wide ? (row + 31) / 32 * 32 : row;
    SLUICE_ASSIGN_OR_RETURN(
        region->storage,
        Tensor::Allocate(DType::kUInt8, Shape{static_cast<int64_t>(out_h * stride + 40)}));
    auto* base = static_cast<uint8_t*>(region->storage.raw_data());
    out_rows = base + (40 - reinterpret_cast<uintptr_t>(base) % 32);
    out_stride = stride;
    region->data = out_rows + (wide ? plan.skip * s->channels : 0);
    region->row_stride = static_cast<int64_t>(stride);
    region->height = out_h;
    region->width = out_w;
    region->channels = s->channels;
    if (wide) plan.direct = true;
  } else {
    out_rows = static_cast<uint8_t*>(sink.tensor->raw_data());
  }
  // The scratch row starts 8 bytes past a 32-byte boundary: libjpeg-turbo's
  // SIMD color converters write 16- or 32-byte-aligned rows with
  // non-temporal stores, which bypass the cache, so the copy out of an
  // aligned scratch row would read every row back from memory (measured on
  // 470x360 crops: 60 us of a 460 us crop decode).
  std::vector<uint8_t> scratch_bytes;
  uint8_t* scratch = nullptr;
  if (!plan.direct) {
    scratch_bytes.resize(static_cast<size_t>(cinfo->output_width) * plan.in_channels + 40);
    scratch = scratch_bytes.data() + (40 - reinterpret_cast<uintptr_t>(scratch_bytes.data()) % 32);
  }
  ops_internal::ReadRowsArgs read{cinfo, &plan, out_rows, out_stride, scratch, discard, out_h, 0};
  if (!JpegCall(&d->err, ops_internal::ReadRows, &read)) return JpegError(d->err, s->where);
  if (read.done < out_h) {
    SLUICE_RETURN_IF_ERROR(CheckTruncated(*s, o, read.done, out_h));
    std::memset(read.out + read.done * read.stride, 0, (out_h - read.done) * read.stride);
    return Status::OK();
  }
  return window == nullptr ? FinishWhole(s, o) : Status::OK();
}

// Run for a row sink: the whole image, band by band through a few rows.
Status Stream(Session* s, const DecodeJpegOptions& o, const ops_internal::JpegRowsFn& fn) {
  JpegDecompressor* d = s->d;
  j_decompress_ptr cinfo = &d->cinfo;
  RowPlan plan;
  SLUICE_RETURN_IF_ERROR(StartRows(s, cinfo->output_width, &plan));
  plan.direct = !plan.cmyk;
  const uint32_t height = cinfo->output_height;
  // Rows 32-byte multiples from 8 bytes past a 32-byte boundary, so that
  // libjpeg's SIMD color converters never use non-temporal stores (see the
  // scratch row in Run): the band stays in L1 for the consumer.
  const size_t stride = (static_cast<size_t>(plan.width) * s->channels + 31) / 32 * 32;
  const size_t scratch_bytes = plan.direct ? 0 : (plan.width * plan.in_channels + 31) / 32 * 32;
  std::vector<uint8_t> buffer(ops_internal::kJpegBandRows * stride + scratch_bytes + 40);
  uint8_t* band = buffer.data() + (40 - reinterpret_cast<uintptr_t>(buffer.data()) % 32);
  uint8_t* scratch = plan.direct ? nullptr : band + ops_internal::kJpegBandRows * stride;
  uint32_t done = 0;
  while (done < height) {
    ops_internal::ReadRowsArgs read{cinfo,
                                    &plan,
                                    band,
                                    stride,
                                    scratch,
                                    0,
                                    std::min(ops_internal::kJpegBandRows, height - done),
                                    0};
    if (!JpegCall(&d->err, ops_internal::ReadRows, &read)) return JpegError(d->err, s->where);
    if (read.done > 0) fn(done, read.done, band, static_cast<int64_t>(stride));
    done += read.done;
    if (read.done < read.rows) break;  // suspended: the data ended
  }
  if (done < height) {
    SLUICE_RETURN_IF_ERROR(CheckTruncated(*s, o, done, height));
    std::memset(band, 0, ops_internal::kJpegBandRows * stride);
    for (; done < height; done += std::min(ops_internal::kJpegBandRows, height - done)) {
      fn(done, std::min(ops_internal::kJpegBandRows, height - done), band,
         static_cast<int64_t>(stride));
    }
    return Status::OK();
  }
  return FinishWhole(s, o);
}

Result<Shape> OutputShape(const Session& s) {
  return Shape{static_cast<int64_t>(s.d->cinfo.output_height),
               static_cast<int64_t>(s.d->cinfo.output_width), s.channels};
}

Status CheckWindow(const Session& s, const JpegCropWindow& w) {
  const int64_t W = s.d->cinfo.output_width;
  const int64_t H = s.d->cinfo.output_height;
  if (w.width <= 0 || w.height <= 0 || w.x < 0 || w.y < 0 || w.x > W - w.width ||
      w.y > H - w.height) {
    return Status::InvalidArgument(
        s.where + ": crop window (y=" + std::to_string(w.y) + ", x=" + std::to_string(w.x) +
        ", height=" + std::to_string(w.height) + ", width=" + std::to_string(w.width) +
        ") is empty or not inside the " + std::to_string(W) + "x" + std::to_string(H) +
        " (scaled) image");
  }
  return Status::OK();
}

Status DecodeWhole(std::string_view bytes, const DecodeJpegOptions& o, const JpegCropWindow* window,
                   const Sink& sink);

// Decodes `window` from only the restart segments it covers, when the file
// has restart markers that tile it (jpeg_splice.h); nullopt, having done
// nothing, when it has none or anything is off (the whole-file path then
// decodes or reports the error). The pixels are the same either way; rows
// above the window are then never read, so corruption there goes unnoticed.
std::optional<Status> DecodeSpliced(std::string_view bytes, const DecodeJpegOptions& o,
                                    const JpegCropWindow& window, const Sink& sink) {
  if (!CheckOptions(o, {}).ok()) return std::nullopt;
  std::optional<ops_internal::JpegSegments> segments = ops_internal::ParseJpegSegments(bytes);
  // One segment: nothing to skip.
  if (!segments || segments->starts.size() < 2 ||
      segments->width * segments->height > o.max_pixels) {
    return std::nullopt;
  }
  const int d =
      o.min_width > 0 || o.min_height > 0
          ? JpegScaleDenominator(segments->width, segments->height, o.min_width, o.min_height)
          : o.ratio;
  const int64_t w = JpegScaledSize(segments->width, d), h = JpegScaledSize(segments->height, d);
  if (window.width <= 0 || window.height <= 0 || window.x < 0 || window.y < 0 ||
      window.x > w - window.width || window.y > h - window.height) {
    return std::nullopt;
  }
  thread_local std::string spliced;
  const ops_internal::ScaledWindow in_spliced = ops_internal::SpliceJpegWindow(
      bytes, *segments, {window.y, window.x, window.height, window.width}, d,
      ops_internal::kJpegSpliceMargin, &spliced);
  DecodeJpegOptions so = o;
  so.ratio = d;
  so.min_width = so.min_height = 0;
  // Messages name the original input, not the spliced one.
  const std::string unnamed = ops_internal::JpegWhere("", "", bytes.size()).substr(2);
  if (so.name.empty()) so.name = unnamed;
  const JpegCropWindow sw{in_spliced.y, in_spliced.x, in_spliced.height, in_spliced.width};
  Status status = DecodeWhole(spliced, so, &sw, sink);
  if (spliced.capacity() > (size_t{4} << 20)) std::string().swap(spliced);
  return status;
}

Status DecodeWindow(std::string_view bytes, const DecodeJpegOptions& o,
                    const JpegCropWindow* window, const Sink& sink) {
  if (window != nullptr) {
    if (std::optional<Status> s = DecodeSpliced(bytes, o, *window, sink)) return *s;
  }
  return DecodeWhole(bytes, o, window, sink);
}

// DecodeWindow on the file as it is.
Status DecodeWhole(std::string_view bytes, const DecodeJpegOptions& o, const JpegCropWindow* window,
                   const Sink& sink) {
  Session s;
  SLUICE_RETURN_IF_ERROR(Open(bytes, o, window ? "decode_and_crop_jpeg" : "decode_jpeg", &s));
  Shape shape;
  if (window != nullptr) {
    SLUICE_RETURN_IF_ERROR(CheckWindow(s, *window));
    shape = Shape{window->height, window->width, s.channels};
  } else {
    SLUICE_ASSIGN_OR_RETURN(shape, OutputShape(s));
  }
  if (sink.rows != nullptr) return Stream(&s, o, *sink.rows);
  if (sink.region != nullptr) {
    // Run allocates the region's rows.
  } else if (sink.allocate) {
    SLUICE_ASSIGN_OR_RETURN(*sink.tensor, Tensor::Allocate(DType::kUInt8, shape));
  } else {
    SLUICE_RETURN_IF_ERROR(CheckOut(*sink.tensor, shape, s.where));
  }
  return Run(&s, o, window, sink);
}

}  // namespace

Result<Shape> JpegOutputShape(std::string_view bytes, const DecodeJpegOptions& options) {
  Session s;
  SLUICE_RETURN_IF_ERROR(Open(bytes, options, "jpeg_output_shape", &s));
  return OutputShape(s);
}

Result<Tensor> DecodeJpeg(std::string_view bytes, const DecodeJpegOptions& options) {
  Tensor out;
  SLUICE_RETURN_IF_ERROR(DecodeWindow(bytes, options, nullptr, {.tensor = &out, .allocate = true}));
  return out;
}

Status DecodeJpegInto(std::string_view bytes, const DecodeJpegOptions& options, Tensor* out) {
  return DecodeWindow(bytes, options, nullptr, {.tensor = out});
}

Result<Tensor> DecodeAndCropJpeg(std::string_view bytes, const JpegCropWindow& window,
                                 const DecodeJpegOptions& options) {
  Tensor out;
  SLUICE_RETURN_IF_ERROR(DecodeWindow(bytes, options, &window, {.tensor = &out, .allocate = true}));
  return out;
}

Status DecodeAndCropJpegInto(std::string_view bytes, const JpegCropWindow& window,
                             const DecodeJpegOptions& options, Tensor* out) {
  return DecodeWindow(bytes, options, &window, {.tensor = out});
}

}  // namespace sluice::ops

namespace sluice::ops_internal {

Status DecodeJpegRegion(std::string_view bytes, const ops::JpegCropWindow& window,
                        const ops::DecodeJpegOptions& options, JpegRegion* out) {
  return ops::DecodeWindow(bytes, options, &window, {.region = out});
}

Status DecodeJpegRows(std::string_view bytes, const ops::DecodeJpegOptions& options,
                      const JpegRowsFn& fn) {
  return ops::DecodeWhole(bytes, options, nullptr, {.rows = &fn});
}

}  // namespace sluice::ops_internal
