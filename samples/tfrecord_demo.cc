// The `make demo` program: the TFRecord chapter of the TensorFlow tutorials,
// in C++. Writes a few thousand tf.train.Examples to a GZIP TFRecord file,
// verifies it, indexes it, seeks with the index, and reads everything back
// through the batch parser, printing what it did and how fast.
//
//   tfrecord_demo [OUTPUT_DIR] [NUM_EXAMPLES]    (default: demo 5000)
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "command_line.h"
#include "sluice/core/rng.h"
#include "sluice/records/example_builder.h"
#include "sluice/records/example_parser.h"
#include "sluice/records/record_index.h"
#include "sluice/records/tfrecord_reader.h"
#include "sluice/records/tfrecord_writer.h"

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

[[noreturn]] void Die(const sluice::Status& s) {
  std::fprintf(stderr, "tfrecord_demo: %s\n", s.ToString().c_str());
  std::exit(1);
}

template <typename T>
T Check(sluice::Result<T> r) {
  if (!r.ok()) Die(r.status());
  return std::move(r).value();
}

void Check(const sluice::Status& s) {
  if (!s.ok()) Die(s);
}

// A stand-in for an encoded image: 3 KB of deterministic, incompressible
// bytes, as JPEG data is.
std::string FakeImage(sluice::Rng& rng) {
  std::string bytes(3072, '\0');
  for (size_t i = 0; i < bytes.size(); i += 4) {
    const uint32_t v = rng.NextU32();
    std::memcpy(&bytes[i], &v, 4);
  }
  return bytes;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "The TFRecord tutorial in C++: writes NUM_EXAMPLES tf.train.Examples to "
      "OUTPUT_DIR/train.tfrecord.gz (about 3 KB each), verifies, indexes, seeks and reads "
      "them back."};
  std::string dir = "demo";
  int n = 5000;
  app.add_option("OUTPUT_DIR", dir, "Folder to write into (made if missing)")
      ->capture_default_str();
  app.add_option("NUM_EXAMPLES", n, "Examples to write")
      ->check(CLI::Range(1, 10'000'000))
      ->capture_default_str();
  if (std::optional<int> status = samples::ParseCommandLine(app, argc, argv)) return *status;
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/train.tfrecord.gz";
  std::printf("sluice TFRecord demo: %d examples -> %s\n\n", n, path.c_str());

  // 1. Write, as tf.io.TFRecordWriter(path, options="GZIP") would.
  auto t = Clock::now();
  sluice::TFRecordWriterOptions wopts;
  wopts.compression = sluice::Compression::kGzip;
  wopts.write_index = true;
  sluice::TFRecordWriter writer = Check(sluice::TFRecordWriter::Open(path, wopts));
  sluice::ExampleBuilder builder;
  std::string serialized;
  int64_t label_sum = 0;
  for (int i = 0; i < n; ++i) {
    sluice::Rng rng(/*seed=*/42, /*stream=*/i);
    const int64_t label = static_cast<int64_t>(rng.UniformInt(10));
    label_sum += label;
    builder.Clear();
    builder.AddBytes("image", FakeImage(rng))
        .AddInt64("label", label)
        .AddInt64List("shape", {32, 32, 3})
        .AddFloat("weight", rng.UniformFloat());
    builder.SerializeTo(&serialized);
    Check(writer.Write(serialized));
  }
  Check(writer.Close());
  const double write_s = Seconds(t);
  const auto file_bytes = std::filesystem::file_size(path);
  std::printf(
      "wrote    %d examples, %.1f MB of records, %.1f MB on disk (gzip) in %.3f s: "
      "%.0f examples/s, %.0f MB/s\n",
      n, writer.bytes_written() / 1e6, file_bytes / 1e6, write_s, n / write_s,
      writer.bytes_written() / 1e6 / write_s);

  // 2. Verify every CRC.
  t = Clock::now();
  sluice::TFRecordReader verifier = Check(sluice::TFRecordReader::Open(path));
  uint64_t verified = 0;
  while (Check(verifier.Next())) ++verified;
  const double verify_s = Seconds(t);
  std::printf(
      "verified %llu records (compression detected: %s), every CRC holds, in %.3f s: "
      "%.0f MB/s\n",
      static_cast<unsigned long long>(verified),
      std::string(sluice::CompressionName(verifier.compression())).c_str(), verify_s,
      writer.bytes_written() / 1e6 / verify_s);

  // 3. Index (the writer wrote one too; they must agree) and seek with it.
  t = Clock::now();
  sluice::RecordIndex index = Check(sluice::RecordIndex::Build(path));
  const double index_s = Seconds(t);
  sluice::RecordIndex written = Check(sluice::RecordIndex::LoadFor(path));
  if (written.entries() != index.entries()) Die(sluice::Status::Internal("indexes differ"));
  Check(index.Save(sluice::RecordIndex::PathFor(path)));
  std::printf("indexed  %zu records in %.3f s -> %s\n", index.size(), index_s,
              sluice::RecordIndex::PathFor(path).c_str());

  sluice::ParseSpec spec = {
      {"image", sluice::FixedLenFeature(sluice::DType::kString, {})},
      {"label", sluice::FixedLenFeature(sluice::DType::kInt64, {})},
      {"shape", sluice::FixedLenFeature(sluice::DType::kInt64, {3})},
      {"weight",
       sluice::FixedLenFeature(sluice::DType::kFloat32, {}, sluice::Tensor::Scalar(1.0f))},
  };
  sluice::ExampleParser parser = Check(sluice::ExampleParser::Create(spec));
  const uint64_t target = static_cast<uint64_t>(n) * 7 / 10;
  sluice::TFRecordReader seeker = Check(sluice::TFRecordReader::Open(path));
  Check(seeker.Seek(index, target));
  std::optional<sluice::Record> rec = Check(seeker.Next());
  sluice::Element one = Check(parser.ParseSingle(rec->data, rec->owner));
  std::printf(
      "seeked   to record %llu (stream offset %llu): label %lld, shape %s, "
      "image %zu bytes\n",
      static_cast<unsigned long long>(rec->number), static_cast<unsigned long long>(rec->offset),
      static_cast<long long>(one.find("label")->scalar<int64_t>()),
      one.find("shape")->DebugString().c_str(),
      one.find("image")->scalar<std::string_view>().size());

  // 4. Read back and parse in batches of 128, as tf.io.parse_example would.
  t = Clock::now();
  sluice::TFRecordReader reader = Check(sluice::TFRecordReader::Open(path));
  std::vector<sluice::Record> batch;
  int64_t parsed = 0, parsed_label_sum = 0;
  auto flush = [&] {
    std::vector<std::string_view> views;
    std::vector<sluice::Buffer> owners;
    for (const auto& r : batch) {
      views.push_back(r.data);
      owners.push_back(r.owner);
    }
    sluice::Element b = Check(parser.ParseBatch(views, owners));
    for (int64_t label : b.find("label")->flat<int64_t>()) parsed_label_sum += label;
    parsed += static_cast<int64_t>(batch.size());
    batch.clear();
  };
  while (std::optional<sluice::Record> r = Check(reader.Next())) {
    batch.push_back(std::move(*r));
    if (batch.size() == 128) flush();
  }
  if (!batch.empty()) flush();
  const double read_s = Seconds(t);
  std::printf(
      "read     %lld examples back in batches of 128 in %.3f s: %.0f examples/s "
      "(gunzip + CRC + parse)\n",
      static_cast<long long>(parsed), read_s, parsed / read_s);
  if (parsed != n || parsed_label_sum != label_sum) {
    Die(sluice::Status::DataLoss("read back different data than was written"));
  }
#ifndef SLUICE_CLI
#define SLUICE_CLI "sluice"
#endif
  std::printf(
      "\nOK: every example came back intact (label sum %lld). Try:\n"
      "  %s cat --json -n 1 %s\n  %s verify %s\n",
      static_cast<long long>(label_sum), SLUICE_CLI, path.c_str(), SLUICE_CLI, path.c_str());
  return 0;
}
