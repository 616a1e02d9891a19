#include "sluice/records/summary_writer.h"
#include "sluice/core/filesystem.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <system_error>
#include <vector>

#include "sluice/core/float16.h"
#include "sluice/records/internal/summary_png.h"
#include "sluice/records/internal/wire.h"
#include "sluice/records/proto/event.pb.h"
#include "sluice/records/tfrecord_writer.h"

namespace sluice {
namespace {

// What TensorBoard and TensorFlow expect in the first event of a file.
constexpr std::string_view kFileVersion = "brain.Event:2";
constexpr std::string_view kSourceWriter = "sluice";

// Numbers writers in this process, as TensorFlow's SummaryFileWriter does, so
// two writers made in the same second get different names.
std::atomic<int64_t> g_writer_counter{0};

double NowSeconds() {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::system_clock::now().time_since_epoch());
  return static_cast<double>(us.count()) / 1e6;
}

std::string HostName() {
  char buf[1024] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  return buf;
}

// Appends the little-endian bytes of `v` (tensor_content is little-endian).
template <typename T>
void AppendLittleEndian(T v, std::string* out) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));
  if constexpr (std::endian::native == std::endian::big) std::reverse(bytes, bytes + sizeof(T));
  out->append(bytes, sizeof(T));
}

// A Summary.Value for `tag` read by TensorBoard's `plugin`; the caller fills
// its tensor. Plugin content stays empty: the plugins' version-0 messages
// serialize to nothing, which is what tf.summary writes.
proto::TensorProto* AddValue(proto::Event* event, std::string_view tag, std::string_view plugin) {
  proto::Summary::Value* v = event->mutable_summary()->add_value();
  v->set_tag(std::string(tag));
  v->mutable_metadata()->mutable_plugin_data()->set_plugin_name(std::string(plugin));
  return v->mutable_tensor();
}

// Summary.Value.tag is a proto3 string: a tag that is not UTF-8 would be
// written, and then every reader (TensorBoard, ParseFromString) would
// reject the event. Found by event_file_fuzz.
Status CheckTag(std::string_view kind, std::string_view tag) {
  if (records_internal::IsValidUtf8(reinterpret_cast<const uint8_t*>(tag.data()), tag.size())) {
    return Status::OK();
  }
  std::string shown;
  for (unsigned char c : tag) {
    if (c >= 0x20 && c < 0x7f) {
      shown += static_cast<char>(c);
    } else {
      shown += fmt::format("\\x{:02x}", c);
    }
  }
  return Status::InvalidArgument(fmt::format(
      "{} tag '{}' is not valid UTF-8 (TensorBoard could not read the event)", kind, shown));
}

template <typename T>
Status ToDoubles(const Tensor& t, std::vector<double>* out) {
  for (const T& x : t.flat<T>()) out->push_back(static_cast<double>(x));
  return Status::OK();
}

Status ToDoubles(const Tensor& t, std::vector<double>* out) {
  out->reserve(static_cast<size_t>(t.num_elements()));
  switch (t.dtype()) {
    case DType::kBool: return ToDoubles<bool>(t, out);
    case DType::kUInt8: return ToDoubles<uint8_t>(t, out);
    case DType::kInt32: return ToDoubles<int32_t>(t, out);
    case DType::kInt64: return ToDoubles<int64_t>(t, out);
    case DType::kFloat16:
      for (float16 x : t.flat<float16>()) out->push_back(static_cast<float>(x));
      return Status::OK();
    case DType::kBFloat16:
      for (bfloat16 x : t.flat<bfloat16>()) out->push_back(static_cast<float>(x));
      return Status::OK();
    case DType::kFloat32: return ToDoubles<float>(t, out);
    case DType::kFloat64: return ToDoubles<double>(t, out);
    default:
      return Status::InvalidArgument(
          fmt::format("a histogram needs numbers, not {}", DTypeName(t.dtype())));
  }
}

}  // namespace

Result<Tensor> HistogramBuckets(const Tensor& values, int buckets) {
  std::vector<double> data;
  SLUICE_RETURN_IF_ERROR(ToDoubles(values, &data));
  const int64_t k = std::max(buckets, 0);
  SLUICE_ASSIGN_OR_RETURN(Tensor out, Tensor::Zeros(DType::kFloat64, Shape{k, 3}));
  if (data.empty() || k == 0) return out;
  double lo = data[0], hi = data[0];
  for (size_t i = 0; i < data.size(); ++i) {
    if (!std::isfinite(data[i])) {
      return Status::InvalidArgument(
          fmt::format("histogram value {} is {}: only finite values can be bucketed", i, data[i]));
    }
    lo = std::min(lo, data[i]);
    hi = std::max(hi, data[i]);
  }
  std::span<double> rows = out.flat<double>();
  const double range = hi - lo;
  if (!std::isfinite(range)) {
    // float64 values more than DBL_MAX apart: every width and offset would
    // be infinite or NaN, and a NaN bucket index wrote outside the rows.
    return Status::InvalidArgument(fmt::format(
        "histogram values span {} to {}: the range overflows a double, so they cannot be "
        "bucketed (TensorFlow writes meaningless buckets for those)",
        lo, hi));
  }
  if (range == 0) {
    for (int64_t b = 0; b < k; ++b) rows[3 * b] = rows[3 * b + 1] = hi;
    rows[3 * (k - 1) + 2] = static_cast<double>(data.size());
    return out;
  }
  // The arithmetic is tensorboard's, step by step, so the doubles are equal:
  // index floor((v - min) / width) clamped to k - 1; edge i is
  // min + width * i (tf.linspace), the last edge exactly max.
  const double width = range / static_cast<double>(k);
  for (double v : data) {
    // 0 <= v - lo <= range, but width underflows to 0 (or subnormal) when
    // range is a subnormal: the quotient is then +inf (or NaN for 0 / 0).
    // Clamp in double before converting, which is undefined out of range.
    const double at = std::floor((v - lo) / width);
    const int64_t b = !(at > 0)                          ? 0
                      : at >= static_cast<double>(k - 1) ? k - 1
                                                         : static_cast<int64_t>(at);
    rows[3 * b + 2] += 1;
  }
  for (int64_t b = 0; b < k; ++b) {
    rows[3 * b] = b == 0 ? lo : lo + width * static_cast<double>(b);
    rows[3 * b + 1] = b == k - 1 ? hi : lo + width * static_cast<double>(b + 1);
  }
  return out;
}

struct SummaryWriter::Impl {
  std::mutex mu;
  TFRecordWriter file;
  SummaryWriterOptions opts;
  int pending = 0;  // events written since the last flush
  double last_flush = 0;
  bool closed = false;

  explicit Impl(TFRecordWriter f) : file(std::move(f)) {}

  Status Append(std::string_view record) {
    if (closed)
      return Status::FailedPrecondition("writing " + file.path() + ": the writer is closed");
    SLUICE_RETURN_IF_ERROR(file.Write(record));
    ++pending;
    if (pending > opts.max_queue || NowSeconds() - last_flush > opts.flush_secs)
      return FlushLocked();
    return Status::OK();
  }

  Status FlushLocked() {
    if (closed)
      return Status::FailedPrecondition("flushing " + file.path() + ": the writer is closed");
    SLUICE_RETURN_IF_ERROR(file.Flush());
    pending = 0;
    last_flush = NowSeconds();
    return Status::OK();
  }
};

Result<SummaryWriter> SummaryWriter::Create(std::string logdir,
                                            const SummaryWriterOptions& options) {
  if (options.max_queue < 0 || options.flush_secs < 0) {
    return Status::InvalidArgument(
        fmt::format("SummaryWriter for {}: max_queue ({}) and flush_secs ({}) must be >= 0", logdir,
                    options.max_queue, options.flush_secs));
  }
  if (logdir.empty()) return Status::InvalidArgument("SummaryWriter: the log directory is empty");
  if (Status s = CreateDirs(logdir); !s.ok()) {
    return Status::Unavailable(
        fmt::format("cannot create log directory {}: {}", logdir, s.message()));
  }
  const double now = NowSeconds();
  const auto seconds = static_cast<long long>(now);
  const std::string& suffix = options.filename_suffix;
  const std::string sep = suffix.starts_with('.') ? "" : ".";
  const std::string path =
      fmt::format("{}/events.out.tfevents.{:010d}.{}.{}.{}{}{}", logdir, seconds, HostName(),
                  static_cast<long long>(::getpid()), g_writer_counter.fetch_add(1), sep, suffix);
  TFRecordWriterOptions wopts;
  wopts.atomic = false;  // append-only, followed by TensorBoard while it grows
  SLUICE_ASSIGN_OR_RETURN(TFRecordWriter file, TFRecordWriter::Open(path, wopts));
  auto impl = std::make_unique<Impl>(std::move(file));
  impl->opts = options;
  // TensorFlow stamps the first event with the whole second of the name.
  proto::Event first;
  first.set_wall_time(static_cast<double>(seconds));
  first.set_file_version(std::string(kFileVersion));
  first.mutable_source_metadata()->set_writer(std::string(kSourceWriter));
  SLUICE_RETURN_IF_ERROR(impl->file.Write(first.SerializeAsString()));
  SLUICE_RETURN_IF_ERROR(impl->FlushLocked());
  return SummaryWriter(std::move(impl));
}

SummaryWriter::SummaryWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SummaryWriter::SummaryWriter(SummaryWriter&&) noexcept = default;
SummaryWriter& SummaryWriter::operator=(SummaryWriter&& other) noexcept {
  if (this != &other) {
    if (impl_) (void)Close();
    impl_ = std::move(other.impl_);
  }
  return *this;
}
SummaryWriter::~SummaryWriter() {
  if (impl_) (void)Close();
}

Status SummaryWriter::Scalar(std::string_view tag, float value, int64_t step) {
  SLUICE_RETURN_IF_ERROR(CheckTag("scalar", tag));
  proto::Event event;
  event.set_step(step);
  proto::TensorProto* t = AddValue(&event, tag, "scalars");
  t->set_dtype(proto::DT_FLOAT);
  t->mutable_tensor_shape();  // present and empty: a scalar
  AppendLittleEndian(value, t->mutable_tensor_content());
  event.set_wall_time(NowSeconds());
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->Append(event.SerializeAsString());
}

Status SummaryWriter::Histogram(std::string_view tag, const Tensor& values, int64_t step,
                                int buckets) {
  SLUICE_RETURN_IF_ERROR(CheckTag("histogram", tag));
  Result<Tensor> rows = HistogramBuckets(values, buckets);
  if (!rows.ok()) {
    return Status(rows.status().code(),
                  fmt::format("histogram {}: {}", tag, rows.status().message()));
  }
  proto::Event event;
  event.set_step(step);
  proto::TensorProto* t = AddValue(&event, tag, "histograms");
  t->set_dtype(proto::DT_DOUBLE);
  t->mutable_tensor_shape()->add_dim()->set_size(rows->shape().dim(0));
  t->mutable_tensor_shape()->add_dim()->set_size(3);
  std::string* content = t->mutable_tensor_content();
  content->reserve(rows->byte_size());
  for (double x : rows->flat<double>()) AppendLittleEndian(x, content);
  event.set_wall_time(NowSeconds());
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->Append(event.SerializeAsString());
}

Status SummaryWriter::Image(std::string_view tag, const Tensor& images, int64_t step,
                            int max_outputs) {
  SLUICE_RETURN_IF_ERROR(CheckTag("image", tag));
  const Shape& shape = images.shape();
  const bool one = shape.rank() == 3;
  const DType dtype = images.dtype();
  if ((!one && shape.rank() != 4) || shape.dim(shape.rank() - 1) < 1 ||
      shape.dim(shape.rank() - 1) > 4 ||
      (dtype != DType::kUInt8 && dtype != DType::kFloat32 && dtype != DType::kFloat64)) {
    return Status::InvalidArgument(fmt::format(
        "image {}: want uint8, float32 or float64 [k, height, width, 1..4] or [height, width, "
        "1..4], got {}{}",
        tag, DTypeName(dtype), shape.ToString()));
  }
  if (max_outputs < 0) {
    return Status::InvalidArgument(fmt::format("image {}: negative max_outputs", tag));
  }
  const int64_t k = one ? 1 : shape.dim(0), off = one ? 0 : 1;
  const int64_t h = shape.dim(off), w = shape.dim(off + 1), c = shape.dim(off + 2);
  const int64_t n = std::min<int64_t>(k, max_outputs);
  const size_t pixels = static_cast<size_t>(h * w * c);
  std::vector<std::string> pngs;
  std::vector<uint8_t> bytes(dtype == DType::kUInt8 ? 0 : pixels);
  for (int64_t i = 0; i < n && pixels > 0; ++i) {
    const uint8_t* src = nullptr;
    if (dtype == DType::kUInt8) {
      src = images.flat<uint8_t>().data() + static_cast<size_t>(i) * pixels;
    } else {
      // tf.image.convert_image_dtype(x, tf.uint8, saturate=True).
      auto convert = [&](auto flat) {
        for (size_t j = 0; j < pixels; ++j) {
          const double v = static_cast<double>(flat[static_cast<size_t>(i) * pixels + j]) * 255.5;
          bytes[j] = static_cast<uint8_t>(v != v || v < 0 ? 0 : v > 255 ? 255 : v);
        }
      };
      if (dtype == DType::kFloat32) convert(images.flat<float>());
      if (dtype == DType::kFloat64) convert(images.flat<double>());
      src = bytes.data();
    }
    Result<std::string> png = records_internal::SummaryPng(src, h, w, c);
    if (!png.ok()) return png.status().WithContext(fmt::format("image {}", tag));
    pngs.push_back(std::move(*png));
  }
  return ImagePng(tag, pngs, h, w, step);
}

Status SummaryWriter::ImagePng(std::string_view tag, std::span<const std::string> pngs,
                               int64_t height, int64_t width, int64_t step) {
  SLUICE_RETURN_IF_ERROR(CheckTag("image", tag));
  if (width < 0 || height < 0) {
    return Status::InvalidArgument(
        fmt::format("image {}: negative size {}x{} (height x width)", tag, height, width));
  }
  proto::Event event;
  event.set_step(step);
  proto::TensorProto* t = AddValue(&event, tag, "images");
  t->set_dtype(proto::DT_STRING);
  t->mutable_tensor_shape()->add_dim()->set_size(static_cast<int64_t>(pngs.size()) + 2);
  t->add_string_val(std::to_string(width));
  t->add_string_val(std::to_string(height));
  for (const std::string& png : pngs) t->add_string_val(png);
  event.set_wall_time(NowSeconds());
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->Append(event.SerializeAsString());
}

Status SummaryWriter::Text(std::string_view tag, std::string_view text, int64_t step) {
  SLUICE_RETURN_IF_ERROR(CheckTag("text", tag));
  proto::Event event;
  event.set_step(step);
  proto::TensorProto* t = AddValue(&event, tag, "text");
  t->set_dtype(proto::DT_STRING);
  t->mutable_tensor_shape();
  t->add_string_val(std::string(text));
  event.set_wall_time(NowSeconds());
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->Append(event.SerializeAsString());
}

Status SummaryWriter::WriteEvent(std::string_view serialized_event) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->Append(serialized_event);
}

Status SummaryWriter::Flush() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->FlushLocked();
}

Status SummaryWriter::Close() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->closed) return Status::OK();
  impl_->closed = true;
  return impl_->file.Close();
}

const std::string& SummaryWriter::path() const { return impl_->file.path(); }

}  // namespace sluice
