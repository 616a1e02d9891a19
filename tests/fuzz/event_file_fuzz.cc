// libFuzzer target for the TensorBoard event-file path: SummaryWriter
// (records/summary_writer.h), HistogramBuckets, and reading an events file
// back as TensorBoard does (TFRecordReader, then an Event per record).
//
// Input: 1 mode byte, then the rest.
//  - mode even: the rest drives a writer. Each step picks a call (scalar,
//    histogram of any dtype with any bytes and bucket count, image, text,
//    a raw serialized event, flush) and its arguments from the input. Every
//    call returns OK or InvalidArgument naming the summary; after Close()
//    the file must read back whole: every record's checksum good, the first
//    event stamped "brain.Event:2", then one parseable Event per accepted
//    call, in order, with its tag, step and (for scalars) value bit for bit.
//  - mode odd: the rest is an events file read the way TensorBoard reads
//    one: every outcome is events or an error Status, never a crash, hang or
//    an allocation the file's size does not justify.
//
// Build with -DSLUICE_FUZZ=ON under clang; run for example
//   ./event_file_fuzz tests/fuzz/corpus/event_file -max_total_time=60
// The writer's files go to $TMPDIR (default /tmp), one directory per process,
// emptied after every input.
#include <fuzzer/FuzzedDataProvider.h>
#include <google/protobuf/stubs/logging.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/core/file.h"
#include "sluice/core/tensor.h"
#include "sluice/records/proto/event.pb.h"
#include "sluice/records/summary_writer.h"
#include "sluice/records/tfrecord_reader.h"

namespace {

using sluice::Result;
using sluice::Status;

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "event_file_fuzz: %s\n%s\n", what, detail.c_str());
  std::abort();
}

// What a typed call wrote, to compare with what reads back.
struct Expected {
  std::string tag;
  int64_t step = 0;
  std::optional<uint32_t> scalar_bits;  // for scalars
  bool raw = false;                     // WriteEvent: bytes as given, maybe no Event
  std::string raw_bytes;
};

const std::string& LogDir() {
  static const std::string dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    return std::string(tmp && *tmp ? tmp : "/tmp") + "/event_file_fuzz." +
           std::to_string(::getpid());
  }();
  return dir;
}

void CheckError(const Status& s, std::string_view tag) {
  if (s.code() != sluice::StatusCode::kInvalidArgument) Fail("unexpected error", s.ToString());
  // A tag that is not UTF-8 is shown escaped.
  if (s.message().find(tag) == std::string_view::npos &&
      s.message().find("not valid UTF-8") == std::string_view::npos) {
    Fail("error without the tag", s.ToString());
  }
}

// A tensor of a fuzzed dtype and shape, its bytes from the input.
Result<sluice::Tensor> FuzzedTensor(FuzzedDataProvider& in) {
  static constexpr sluice::DType kTypes[] = {
      sluice::DType::kBool,    sluice::DType::kUInt8,   sluice::DType::kInt32,
      sluice::DType::kInt64,   sluice::DType::kFloat16, sluice::DType::kBFloat16,
      sluice::DType::kFloat32, sluice::DType::kFloat64, sluice::DType::kString};
  const sluice::DType dtype = in.PickValueInArray(kTypes);
  const int64_t n = in.ConsumeIntegralInRange<int64_t>(0, 64);
  if (dtype == sluice::DType::kString) {
    std::vector<std::string> v;
    for (int64_t i = 0; i < n; ++i) v.push_back(in.ConsumeRandomLengthString(16));
    return sluice::Tensor::FromStrings(v);
  }
  SLUICE_ASSIGN_OR_RETURN(sluice::Tensor t, sluice::Tensor::Zeros(dtype, sluice::Shape{n}));
  std::vector<uint8_t> bytes = in.ConsumeBytes<uint8_t>(t.byte_size());
  if (dtype == sluice::DType::kBool) {
    for (uint8_t& b : bytes) b &= 1;  // a bool holds 0 or 1
  }
  if (!bytes.empty()) std::memcpy(t.raw_data(), bytes.data(), bytes.size());
  return t;
}

void FuzzWriter(FuzzedDataProvider& in) {
  std::error_code ec;
  std::filesystem::remove_all(LogDir(), ec);
  sluice::SummaryWriterOptions o;
  o.max_queue = in.ConsumeIntegralInRange<int>(0, 4);
  Result<sluice::SummaryWriter> w = sluice::SummaryWriter::Create(LogDir(), o);
  if (!w.ok()) Fail("cannot create the writer", w.status().ToString());
  std::vector<Expected> want;
  for (int call = 0; call < 16 && in.remaining_bytes() > 0; ++call) {
    Expected e;
    e.tag = in.ConsumeRandomLengthString(24);
    e.step = in.ConsumeIntegral<int64_t>();
    Status s;
    switch (in.ConsumeIntegralInRange<int>(0, 5)) {
      case 0: {
        const float v = in.ConsumeFloatingPoint<float>();
        uint32_t bits;
        std::memcpy(&bits, &v, 4);
        e.scalar_bits = bits;
        s = w->Scalar(e.tag, v, e.step);
        break;
      }
      case 1: {
        const int buckets = in.ConsumeIntegralInRange<int>(-2, 300);
        Result<sluice::Tensor> t = FuzzedTensor(in);
        if (!t.ok()) Fail("cannot make a tensor", t.status().ToString());
        s = w->Histogram(e.tag, *t, e.step, buckets);
        break;
      }
      case 2: {
        const int64_t width = in.ConsumeIntegralInRange<int64_t>(-2, 1 << 20);
        const int64_t height = in.ConsumeIntegralInRange<int64_t>(-2, 1 << 20);
        std::vector<std::string> pngs(in.ConsumeIntegralInRange<size_t>(0, 3));
        for (std::string& p : pngs) p = in.ConsumeRandomLengthString(64);
        s = w->ImagePng(e.tag, pngs, height, width, e.step);
        break;
      }
      case 3: s = w->Text(e.tag, in.ConsumeRandomLengthString(64), e.step); break;
      case 4:
        e.raw = true;
        e.raw_bytes = in.ConsumeRandomLengthString(64);
        s = w->WriteEvent(e.raw_bytes);
        break;
      default:
        s = w->Flush();
        if (!s.ok()) Fail("flush failed", s.ToString());
        continue;
    }
    if (s.ok()) {
      want.push_back(std::move(e));
    } else {
      CheckError(s, e.tag);
    }
  }
  const std::string path = w->path();
  const Status closed = w->Close();
  if (!closed.ok()) Fail("close failed", closed.ToString());

  Result<sluice::TFRecordReader> reader = sluice::TFRecordReader::Open(path);
  if (!reader.ok()) Fail("cannot reopen the events file", reader.status().ToString());
  size_t n = 0;
  for (;; ++n) {
    Result<std::optional<sluice::Record>> rec = reader->Next();
    if (!rec.ok()) Fail("a record does not read back", rec.status().ToString());
    if (!*rec) break;
    const std::string_view data = (*rec)->data;
    sluice::proto::Event ev;
    const bool parsed = ev.ParseFromArray(data.data(), static_cast<int>(data.size()));
    if (n == 0) {
      if (!parsed || ev.file_version() != "brain.Event:2") Fail("bad first event", "");
      continue;
    }
    if (n > want.size()) Fail("more events than calls", std::to_string(n));
    const Expected& e = want[n - 1];
    if (e.raw) {
      if (data != e.raw_bytes) Fail("a raw event changed", "");
      continue;
    }
    if (!parsed) Fail("an event does not parse", "tag " + e.tag);
    if (ev.step() != e.step || ev.summary().value_size() != 1 ||
        ev.summary().value(0).tag() != e.tag) {
      Fail("an event does not read back as written", "tag " + e.tag);
    }
    if (e.scalar_bits) {
      const std::string& c = ev.summary().value(0).tensor().tensor_content();
      uint32_t bits = 0;
      if (c.size() != 4) Fail("a scalar's content is not 4 bytes", "");
      std::memcpy(&bits, c.data(), 4);
      if (bits != *e.scalar_bits) Fail("a scalar's value changed", "");
    }
  }
  if (n != want.size() + 1) Fail("fewer events than calls", std::to_string(n));
  std::error_code ec2;
  std::filesystem::remove_all(LogDir(), ec2);
}

void FuzzReader(const uint8_t* data, size_t size) {
  auto file = sluice::NewMemoryFile("fuzz.tfevents",
                                    std::string(reinterpret_cast<const char*>(data), size));
  Result<sluice::TFRecordReader> reader = sluice::TFRecordReader::Open(std::move(file));
  if (!reader.ok()) return;
  for (int i = 0; i < 10000; ++i) {
    Result<std::optional<sluice::Record>> rec = reader->Next();
    if (!rec.ok() || !*rec) return;
    sluice::proto::Event ev;
    if (!ev.ParseFromArray((*rec)->data.data(), static_cast<int>((*rec)->data.size()))) continue;
    for (const auto& v : ev.summary().value()) {
      (void)v.tag();
      (void)v.tensor().tensor_content().size();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Parsing Events with a tag that is not UTF-8 is expected here; protobuf
  // would log each one.
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  if (data[0] & 1) {
    FuzzReader(data + 1, size - 1);
    return 0;
  }
  FuzzedDataProvider in(data + 1, size - 1);
  FuzzWriter(in);
  return 0;
}
