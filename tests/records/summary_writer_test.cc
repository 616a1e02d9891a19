#include "sluice/records/summary_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "sluice/ops/png.h"
#include "sluice/records/proto/event.pb.h"
#include "sluice/records/tfrecord_reader.h"
#include "test_util.h"

namespace sluice {
namespace {

using testing::ScratchDir;
using testing::TestDataPath;

// Every event of an events file, parsed.
std::vector<proto::Event> ReadEvents(const std::string& path) {
  std::vector<proto::Event> events;
  Result<TFRecordReader> reader = TFRecordReader::Open(path);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return events;
  while (true) {
    Result<std::optional<Record>> rec = reader->Next();
    EXPECT_TRUE(rec.ok()) << rec.status();
    if (!rec.ok() || !*rec) break;
    proto::Event e;
    EXPECT_TRUE(e.ParseFromArray((*rec)->data.data(), static_cast<int>((*rec)->data.size())));
    events.push_back(std::move(e));
  }
  return events;
}

// The inputs tests/data/tensorboard/make_events_golden.py uses.
Tensor GoldenHistogramValues() {
  std::vector<double> v;
  for (int i = 0; i <= 100; ++i) v.push_back(((i * 37) % 101) / 7.0 - 3.0);
  return *Tensor::FromVector(v);
}

std::string Float32Bytes(float f) {
  std::string s(4, '\0');
  std::memcpy(s.data(), &f, 4);
  return s;
}

TEST(SummaryWriterTest, NameAndFirstEventAsTensorFlow) {
  ScratchDir dir;
  const std::string logdir = dir.file("a/b");  // made recursively
  SLUICE_ASSERT_OK_AND_ASSIGN(SummaryWriter w, SummaryWriter::Create(logdir));
  char host[1024] = {};
  ASSERT_EQ(::gethostname(host, sizeof(host) - 1), 0);
  const std::string base = std::filesystem::path(w.path()).filename().string();
  std::smatch m;
  const std::regex re(R"(events\.out\.tfevents\.(\d{10})\.(.+)\.(\d+)\.(\d+)\.v2)");
  ASSERT_TRUE(std::regex_match(base, m, re)) << base;
  EXPECT_EQ(m[2].str(), host);
  EXPECT_EQ(m[3].str(), std::to_string(::getpid()));
  EXPECT_EQ(std::filesystem::path(w.path()).parent_path(), std::filesystem::path(logdir));

  // The first event is on disk as soon as Create() returns.
  std::vector<proto::Event> events = ReadEvents(w.path());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  EXPECT_EQ(events[0].step(), 0);
  EXPECT_EQ(events[0].wall_time(), std::stod(m[1].str()));
}

TEST(SummaryWriterTest, SuffixAndCounterAsTensorFlow) {
  ScratchDir dir;
  SummaryWriterOptions o;
  o.filename_suffix = "abc";
  SLUICE_ASSERT_OK_AND_ASSIGN(SummaryWriter a, SummaryWriter::Create(dir.path(), o));
  o.filename_suffix = "";
  SLUICE_ASSERT_OK_AND_ASSIGN(SummaryWriter b, SummaryWriter::Create(dir.path(), o));
  o.filename_suffix = ".x";
  SLUICE_ASSERT_OK_AND_ASSIGN(SummaryWriter c, SummaryWriter::Create(dir.path(), o));
  const std::regex re(R"(.*\.(\d+)\.(\d+)(\..*))");
  std::smatch ma, mb, mc;
  const std::string pa = a.path(), pb = b.path(), pc = c.path();
  ASSERT_TRUE(std::regex_match(pa, ma, re)) << pa;
  ASSERT_TRUE(std::regex_match(pb, mb, re)) << pb;
  ASSERT_TRUE(std::regex_match(pc, mc, re)) << pc;
  EXPECT_EQ(ma[3].str(), ".abc");
  EXPECT_EQ(mb[3].str(), ".");  // TensorFlow also ends the name with "."
  EXPECT_EQ(mc[3].str(), ".x");
  EXPECT_EQ(std::stoll(mb[2].str()), std::stoll(ma[2].str()) + 1);
  EXPECT_EQ(std::stoll(mc[2].str()), std::stoll(ma[2].str()) + 2);
}

TEST(SummaryWriterTest, ScalarFields) {
  ScratchDir dir;
  std::string path;
  {
    SLUICE_ASSERT_OK_AND_ASSIGN(SummaryWriter w, SummaryWriter::Create(dir.path()));
    path = w.path();
    SLUICE_ASSERT_OK(w.Scalar("loss", 0.5f, 7));
  }  // the destructor flushes
  std::vector<proto::Event> events = ReadEvents(path);
  ASSERT_EQ(events.size(), 2u);
  const proto::Event& e = events[1];
  EXPECT_EQ(e.step(), 7);
  EXPECT_GT(e.wall_time(), 1e9);
  ASSERT_EQ(e.summary().value_size(), 1);
  const proto::Summary::Value& v = e.summary().value(0);
  EXPECT_EQ(v.tag(), "loss");
  EXPECT_EQ(v.metadata().plugin_data().plugin_name(), "scalars");
  EXPECT_TRUE(v.metadata().plugin_data().content().empty());
  ASSERT_TRUE(v.has_tensor());
  EXPECT_EQ(v.tensor().dtype(), proto::DT_FLOAT);
  EXPECT_TRUE(v.tensor().has_tensor_shape());
  EXPECT_EQ(v.tensor().tensor_shape().dim_size(), 0);
  EXPECT_EQ(v.tensor().tensor_content(), Float32Bytes(0.5f));
}

// Image() encodes uint8 and [0, 1] float tensors itself: the PNGs decode
// (with ops' libspng decoder) to the pixels given, height and width are
// stored as TensorBoard wants (width first), max_outputs is applied.
TEST(SummaryWriterTest, ImageTensorsBecomePngsThatDecodeToThePixels) {
  ScratchDir dir;
  std::string path;
  for (int64_t c : {1, 2, 3, 4}) {
    SCOPED_TRACE(c);
    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor batch, Tensor::Allocate(DType::kUInt8, Shape{4, 5, 7, c}));
    auto px = batch.flat<uint8_t>();
    for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<uint8_t>((i * 37 + i / 7) % 256);
    {
      SLUICE_ASSERT_OK_AND_ASSIGN(SummaryWriter w, SummaryWriter::Create(dir.path()));
      path = w.path();
      SLUICE_ASSERT_OK(w.Image("img", batch, 9));  // max_outputs 3
    }
    std::vector<proto::Event> events = ReadEvents(path);
    ASSERT_EQ(events.size(), 2u);
    const proto::Summary::Value& v = events[1].summary().value(0);
    EXPECT_EQ(v.metadata().plugin_data().plugin_name(), "images");
    ASSERT_EQ(v.tensor().string_val_size(), 2 + 3);
    EXPECT_EQ(v.tensor().string_val(0), "7");  // width
    EXPECT_EQ(v.tensor().string_val(1), "5");  // height
    for (int i = 0; i < 3; ++i) {
      SLUICE_ASSERT_OK_AND_ASSIGN(Tensor got, ops::DecodePng(v.tensor().string_val(2 + i)));
      ASSERT_EQ(got.shape(), (Shape{5, 7, c}));
      const size_t n = static_cast<size_t>(5 * 7 * c);
      EXPECT_EQ(std::memcmp(got.raw_data(), px.data() + i * n, n), 0) << i;
    }
    std::filesystem::remove(path);
  }
  // Floats in [0, 1] as tf.image.convert_image_dtype(saturate=True).
  SLUICE_ASSERT_OK_AND_ASSIGN(
      Tensor f, Tensor::FromVector(std::vector<float>{0.0f, 0.5f, 1.0f, 2.0f, -1.0f, 0.25f}));
  SLUICE_ASSERT_OK_AND_ASSIGN(f, f.Reshape(Shape{2, 3, 1}));
  {
    SLUICE_ASSERT_OK_AND_ASSIGN(SummaryWriter w, SummaryWriter::Create(dir.path()));
    path = w.path();
    SLUICE_ASSERT_OK(w.Image("one", f, 1));
  }
  const std::vector<proto::Event> events = ReadEvents(path);
  ASSERT_EQ(events.size(), 2u);
  const proto::Summary::Value& v = events[1].summary().value(0);
  ASSERT_EQ(v.tensor().string_val_size(), 3);
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor got, ops::DecodePng(v.tensor().string_val(2)));
  auto g = got.flat<uint8_t>();
  EXPECT_EQ(std::vector<uint8_t>(g.begin(), g.end()),
            (std::vector<uint8_t>{0, 127, 255, 255, 0, 63}));

  SLUICE_ASSERT_OK_AND_ASSIGN(SummaryWriter w, SummaryWriter::Create(dir.path()));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor bad, Tensor::Allocate(DType::kInt32, Shape{2, 2, 3}));
  SLUICE_EXPECT_ERROR(w.Image("bad", bad, 1), StatusCode::kInvalidArgument, "image bad");
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor five, Tensor::Allocate(DType::kUInt8, Shape{2, 2, 5}));
  SLUICE_EXPECT_ERROR(w.Image("five", five, 1), StatusCode::kInvalidArgument, "1..4");
  SLUICE_EXPECT_ERROR(w.ImagePng("neg", {}, -1, 3, 1), StatusCode::kInvalidArgument, "negative");
}

// Writes what make_events_golden.py wrote with tf.summary and compares every
// event with TensorFlow's, field by field through the serialized bytes
// (wall_time cleared; the first event's source_metadata names the writer).
TEST(SummaryWriterTest, MatchesTensorFlowGolden) {
  std::vector<proto::Event> golden = ReadEvents(TestDataPath("tensorboard/events.golden"));
  ASSERT_EQ(golden.size(), 10u);
  // The PNGs come from TensorFlow's file: encoding is not this class's job.
  auto pngs_of = [&](int i) {
    const proto::TensorProto& t = golden[i].summary().value(0).tensor();
    return std::vector<std::string>(t.string_val().begin() + 2, t.string_val().end());
  };
  ScratchDir dir;
  std::string path;
  {
    SLUICE_ASSERT_OK_AND_ASSIGN(SummaryWriter w, SummaryWriter::Create(dir.path()));
    path = w.path();
    SLUICE_ASSERT_OK(w.Scalar("loss", 0.5f, 1));
    SLUICE_ASSERT_OK(w.Scalar("loss", -1.25e-3f, 2));
    SLUICE_ASSERT_OK(w.Histogram("weights", GoldenHistogramValues(), 3));
    SLUICE_ASSERT_OK(w.Histogram("weights5", GoldenHistogramValues(), 3, 5));
    SLUICE_ASSERT_OK(
        w.Histogram("single", *Tensor::FromVector(std::vector<double>{2.5, 2.5, 2.5}), 4));
    SLUICE_ASSERT_OK(w.Histogram("empty", *Tensor::FromVector(std::vector<float>{}), 5));
    SLUICE_ASSERT_OK(w.ImagePng("images", pngs_of(7), 3, 4, 6));
    SLUICE_ASSERT_OK(w.ImagePng("images2", pngs_of(8), 3, 4, 6));
    SLUICE_ASSERT_OK(w.Text("note", "hello, tensorboard", 7));
    SLUICE_ASSERT_OK(w.Close());
  }
  std::vector<proto::Event> ours = ReadEvents(path);
  ASSERT_EQ(ours.size(), golden.size());
  EXPECT_EQ(ours[0].file_version(), golden[0].file_version());
  EXPECT_EQ(ours[0].step(), golden[0].step());
  for (size_t i = 1; i < golden.size(); ++i) {
    proto::Event a = ours[i], b = golden[i];
    EXPECT_GT(a.wall_time(), 1e9);
    a.clear_wall_time();
    b.clear_wall_time();
    EXPECT_EQ(a.SerializeAsString(), b.SerializeAsString())
        << "event " << i << "\nours:\n"
        << a.DebugString() << "\nTensorFlow's:\n"
        << b.DebugString();
  }
  // The two images of images2 are max_outputs-limited (3 > 2): both written.
  EXPECT_EQ(golden[8].summary().value(0).tensor().string_val_size(), 4);
}

TEST(SummaryWriterTest, HistogramBucketsByHand) {
  // 0, 1, ..., 9 in 3 buckets of width 3: [0,3) [3,6) [6,9] -> 3, 3, 4.
  std::vector<int32_t> v{0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor h, HistogramBuckets(*Tensor::FromVector(v), 3));
  ASSERT_EQ(h.shape().ToString(), Shape({3, 3}).ToString());
  std::vector<double> want{0, 3, 3, 3, 6, 3, 6, 9, 4};
  std::vector<double> got(h.flat<double>().begin(), h.flat<double>().end());
  EXPECT_EQ(got, want);

  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor none, HistogramBuckets(*Tensor::FromVector(v), 0));
  EXPECT_EQ(none.shape().ToString(), Shape({0, 3}).ToString());
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor neg, HistogramBuckets(*Tensor::FromVector(v), -4));
  EXPECT_EQ(neg.shape().ToString(), Shape({0, 3}).ToString());

  std::vector<float> bad{1.0f, std::numeric_limits<float>::quiet_NaN()};
  SLUICE_EXPECT_ERROR(HistogramBuckets(*Tensor::FromVector(bad)), StatusCode::kInvalidArgument,
                      "value 1");
  SLUICE_EXPECT_ERROR(HistogramBuckets(Tensor::StringScalar("x")), StatusCode::kInvalidArgument,
                      "string");
}

// float64 values more than DBL_MAX apart: the range is infinite, the last
// value's bucket index was floor(inf / inf) = NaN, cast to int64 (undefined;
// INT64_MIN on x86) and used to write outside the rows. Found while writing
// event_file_fuzz (reasoning about its float64 histograms, not by a run).
TEST(SummaryWriterTest, HistogramWhoseRangeOverflowsIsRefused) {
  const double big = std::numeric_limits<double>::max();
  std::vector<double> v{-big, 0.0, big};
  SLUICE_EXPECT_ERROR(HistogramBuckets(*Tensor::FromVector(v)), StatusCode::kInvalidArgument,
                      "the range overflows a double");
  // Half the range is fine, to the last bucket.
  std::vector<double> half{-big / 2, big / 2};
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor h, HistogramBuckets(*Tensor::FromVector(half), 4));
  EXPECT_EQ(h.flat<double>()[3 * 0 + 2], 1);
  EXPECT_EQ(h.flat<double>()[3 * 3 + 2], 1);
}

// Found by event_file_fuzz once UBSan halted: a subnormal range makes
// width = range / k underflow to 0, and (v - lo) / 0 is +inf (NaN for v ==
// lo), which was converted to int64 (undefined). The counts still add up.
TEST(SummaryWriterTest, HistogramOfASubnormalRangeBucketsEveryValue) {
  const double tiny = std::numeric_limits<double>::denorm_min();
  std::vector<double> v{0.0, tiny, 0.0};
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor h, HistogramBuckets(*Tensor::FromVector(v), 30));
  double total = 0;
  for (int b = 0; b < 30; ++b) total += h.flat<double>()[3 * b + 2];
  EXPECT_EQ(total, 3);
  EXPECT_EQ(h.flat<double>()[3 * 29 + 2], 1);  // the largest value: the last bucket
}

TEST(SummaryWriterTest, HistogramErrorNamesTag) {
  ScratchDir dir;
  SLUICE_ASSERT_OK_AND_ASSIGN(SummaryWriter w, SummaryWriter::Create(dir.path()));
  std::vector<double> bad{std::numeric_limits<double>::infinity()};
  SLUICE_EXPECT_ERROR(w.Histogram("grads", *Tensor::FromVector(bad), 1),
                      StatusCode::kInvalidArgument, "histogram grads");
  // A rejected summary does not break the writer.
  SLUICE_EXPECT_OK(w.Scalar("ok", 1, 1));
}

// Found by event_file_fuzz: a tag that is not UTF-8 was written, and the
// event then failed to parse in every reader (Summary.Value.tag is a proto3
// string). Now each summary refuses it, naming the tag, and the file stays
// readable; a UTF-8 tag beyond ASCII is fine.
TEST(SummaryWriterTest, TagThatIsNotUtf8IsRefused) {
  ScratchDir dir;
  SLUICE_ASSERT_OK_AND_ASSIGN(SummaryWriter w, SummaryWriter::Create(dir.path()));
  const std::string bad = "loss\xff";
  const std::vector<std::string> pngs;
  SLUICE_EXPECT_ERROR(w.Scalar(bad, 1, 1), StatusCode::kInvalidArgument, "scalar tag 'loss\\xff'");
  SLUICE_EXPECT_ERROR(w.Histogram(bad, *Tensor::FromVector(std::vector<double>{1}), 1),
                      StatusCode::kInvalidArgument, "histogram tag 'loss\\xff'");
  SLUICE_EXPECT_ERROR(w.ImagePng(bad, pngs, 1, 1, 1), StatusCode::kInvalidArgument,
                      "image tag 'loss\\xff'");
  SLUICE_EXPECT_ERROR(w.Image(bad, *Tensor::Allocate(DType::kUInt8, Shape{1, 1, 1}), 1),
                      StatusCode::kInvalidArgument, "image tag 'loss\\xff'");
  SLUICE_EXPECT_ERROR(w.Text(bad, "t", 1), StatusCode::kInvalidArgument, "text tag 'loss\\xff'");
  SLUICE_EXPECT_OK(w.Scalar("Verlust/\xc3\xbc", 2, 2));
  SLUICE_ASSERT_OK(w.Close());
  const std::vector<proto::Event> events = ReadEvents(w.path());
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].summary().value(0).tag(), "Verlust/\xc3\xbc");
}

TEST(SummaryWriterTest, FlushMakesEventsVisible) {
  ScratchDir dir;
  SummaryWriterOptions o;
  o.max_queue = 1000;
  SLUICE_ASSERT_OK_AND_ASSIGN(SummaryWriter w, SummaryWriter::Create(dir.path(), o));
  SLUICE_ASSERT_OK(w.Scalar("a", 1, 1));
  SLUICE_ASSERT_OK(w.Scalar("a", 2, 2));
  EXPECT_EQ(ReadEvents(w.path()).size(), 1u);  // still buffered
  SLUICE_ASSERT_OK(w.Flush());
  EXPECT_EQ(ReadEvents(w.path()).size(), 3u);
}

TEST(SummaryWriterTest, MaxQueueFlushes) {
  ScratchDir dir;
  SummaryWriterOptions o;
  o.max_queue = 2;
  SLUICE_ASSERT_OK_AND_ASSIGN(SummaryWriter w, SummaryWriter::Create(dir.path(), o));
  SLUICE_ASSERT_OK(w.Scalar("a", 1, 1));
  SLUICE_ASSERT_OK(w.Scalar("a", 2, 2));
  EXPECT_EQ(ReadEvents(w.path()).size(), 1u);
  SLUICE_ASSERT_OK(w.Scalar("a", 3, 3));  // more than max_queue pending
  EXPECT_EQ(ReadEvents(w.path()).size(), 4u);
}

TEST(SummaryWriterTest, ClosedWriterRefusesWrites) {
  ScratchDir dir;
  SLUICE_ASSERT_OK_AND_ASSIGN(SummaryWriter w, SummaryWriter::Create(dir.path()));
  SLUICE_ASSERT_OK(w.Close());
  SLUICE_EXPECT_OK(w.Close());
  SLUICE_EXPECT_ERROR(w.Scalar("a", 1, 1), StatusCode::kFailedPrecondition, w.path());
  SLUICE_EXPECT_ERROR(w.Flush(), StatusCode::kFailedPrecondition, w.path());
}

TEST(SummaryWriterTest, BadLogdirNamesIt) {
  ScratchDir dir;
  testing::WriteFileOrDie(dir.file("plain"), "x");
  Result<SummaryWriter> w = SummaryWriter::Create(dir.file("plain/logs"));
  ASSERT_FALSE(w.ok());
  EXPECT_NE(std::string(w.status().message()).find(dir.file("plain/logs")), std::string::npos)
      << w.status();
  SummaryWriterOptions o;
  o.max_queue = -1;
  SLUICE_EXPECT_ERROR(SummaryWriter::Create(dir.path(), o), StatusCode::kInvalidArgument,
                      "max_queue");
}

TEST(SummaryWriterTest, ConcurrentWritersKeepEventsWhole) {
  ScratchDir dir;
  std::string path;
  constexpr int kThreads = 4, kPerThread = 200;
  {
    SLUICE_ASSERT_OK_AND_ASSIGN(SummaryWriter w, SummaryWriter::Create(dir.path()));
    path = w.path();
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&w, t] {
        for (int i = 0; i < kPerThread; ++i) {
          EXPECT_TRUE(w.Scalar("t" + std::to_string(t), static_cast<float>(i), i).ok());
        }
      });
    }
    for (auto& th : threads) th.join();
  }
  std::vector<proto::Event> events = ReadEvents(path);
  ASSERT_EQ(events.size(), 1u + kThreads * kPerThread);
  std::vector<int64_t> next(kThreads, 0);
  for (size_t i = 1; i < events.size(); ++i) {
    const proto::Summary::Value& v = events[i].summary().value(0);
    const int t = v.tag()[1] - '0';
    EXPECT_EQ(events[i].step(), next[t]++);  // each thread's events in its order
    EXPECT_EQ(v.tensor().tensor_content(), Float32Bytes(static_cast<float>(events[i].step())));
  }
}

}  // namespace
}  // namespace sluice
