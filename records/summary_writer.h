// SummaryWriter: writes TensorBoard event files, as tf.summary does in TF 2.x.
//
// An events file is an uncompressed TFRecord file of serialized Event
// protos (records/proto/event.proto); the first event carries
// file_version "brain.Event:2". Create() makes LOGDIR (and its parents) and
// a file named as tf.summary.create_file_writer names it:
//   LOGDIR/events.out.tfevents.<10-digit seconds>.<hostname>.<pid>.<n><suffix>
// where n counts the writers this process has made (from 0).
//
// Each summary is written exactly as TF 2.x's tf.summary.scalar / histogram /
// image / text write it: a Summary.Value holding a TensorProto and metadata
// naming the TensorBoard plugin ("scalars", "histograms", "images", "text"),
// so TensorBoard and tf.compat.v1.train.summary_iterator read it as theirs.
//
// Like TensorFlow, the writer writes the final file name directly (events
// files are append-only and followed by TensorBoard while they grow).
// Events are buffered and handed to the OS when more than `max_queue` are
// pending, when `flush_secs` have passed since the last flush (checked when
// an event is written; there is no background thread), on Flush(), Close()
// and destruction. After any write error, every later call returns that
// error, which names the file. A tag must be valid UTF-8 (Summary.Value.tag
// is a proto3 string, which readers refuse otherwise): InvalidArgument
// naming the tag if not.
//
// Images: Image() takes a uint8 (or [0, 1] float) image tensor and writes
// 8-bit PNGs of its own (records/ depends on core only, so not through
// ops::EncodePng); ImagePng() takes PNGs already encoded (16-bit ones, say).
//
// Thread-safe: every method takes an internal mutex, so threads may share
// one writer; events from concurrent calls are written whole, in the order
// the calls take the lock. A moved-from writer may only be destroyed or
// assigned to.
#ifndef SLUICE_RECORDS_SUMMARY_WRITER_H_
#define SLUICE_RECORDS_SUMMARY_WRITER_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "sluice/core/result.h"
#include "sluice/core/tensor.h"

namespace sluice {

struct SummaryWriterOptions {
  // Appended to the file name; ".v2" as in TF 2.x. A suffix that does not
  // start with "." gets one in front, as TensorFlow does (so an empty
  // suffix leaves the name ending in ".").
  std::string filename_suffix = ".v2";
  // Flush when this many seconds passed since the last flush (TF: 120).
  int flush_secs = 120;
  // Flush when more than this many events are pending (TF: 10).
  int max_queue = 10;
};

// TF 2.x's default number of histogram buckets.
inline constexpr int kDefaultHistogramBuckets = 30;

class SummaryWriter {
 public:
  // InvalidArgument for a negative max_queue or flush_secs; the file
  // system's error (naming the path) if LOGDIR or the file cannot be made.
  static Result<SummaryWriter> Create(std::string logdir, const SummaryWriterOptions& options = {});

  SummaryWriter(SummaryWriter&&) noexcept;
  SummaryWriter& operator=(SummaryWriter&&) noexcept;
  // Flushes and closes; errors are dropped, so Close() first to see them.
  ~SummaryWriter();

  // tf.summary.scalar: a float32 scalar tensor.
  Status Scalar(std::string_view tag, float value, int64_t step);
  // tf.summary.histogram: `values` (any numeric dtype, any shape) bucketed
  // by HistogramBuckets(). InvalidArgument for a string tensor or a
  // non-finite value.
  Status Histogram(std::string_view tag, const Tensor& values, int64_t step,
                   int buckets = kDefaultHistogramBuckets);
  // tf.summary.image: `images` is [k, height, width, channels] (or one
  // [height, width, channels] image), channels 1, 2, 3 or 4, uint8 or
  // float32/float64 in [0, 1] (converted as tf.image.convert_image_dtype
  // with saturate: x * 255.5, clipped). The first `max_outputs` images are
  // PNG-encoded and written. InvalidArgument for another dtype or shape.
  Status Image(std::string_view tag, const Tensor& images, int64_t step, int max_outputs = 3);
  // tf.summary.image with the images already PNG-encoded: `height` and
  // `width` are the batch's image size (written even when `pngs` is empty).
  // Apply max_outputs before calling: every PNG given is written.
  // InvalidArgument for a negative height or width.
  Status ImagePng(std::string_view tag, std::span<const std::string> pngs, int64_t height,
                  int64_t width, int64_t step);
  // tf.summary.text: a string scalar tensor.
  Status Text(std::string_view tag, std::string_view text, int64_t step);
  // Writes one serialized Event (records/proto/event.proto) as it is: for
  // summaries this class has no method for.
  Status WriteEvent(std::string_view serialized_event);

  // Hands every pending event to the OS.
  Status Flush();
  // Flushes and closes the file; later writes are FailedPrecondition.
  Status Close();

  // LOGDIR/events.out.tfevents...
  const std::string& path() const;

 private:
  struct Impl;
  explicit SummaryWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// TF 2.x's histogram buckets (tensorboard/plugins/histogram/summary_v2.py):
// a float64 [k, 3] tensor of rows (left edge, right edge, count). `buckets`
// equal-width buckets span [min, max]; a value falls in bucket
// floor((v - min) / width), the maximum in the last. All values equal: every
// row is (v, v, 0) but the last, (v, v, n). No values: `buckets` rows of
// zeros. buckets <= 0: shape [0, 3]. InvalidArgument for a string tensor, a
// NaN or infinite value, or float64 values whose range (max - min)
// overflows a double (TensorFlow writes meaningless buckets for those).
Result<Tensor> HistogramBuckets(const Tensor& values, int buckets = kDefaultHistogramBuckets);

}  // namespace sluice

#endif  // SLUICE_RECORDS_SUMMARY_WRITER_H_
