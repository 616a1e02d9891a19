// Example parsing throughput (items_per_second = Examples/s) for a
// 10-feature Example: 4 int64 scalars, 1 float scalar, 2 float lists of 4,
// 1 int64 list of 8 and 2 bytes features (16 and ~100 bytes).
//
// Same-run reference: BM_ProtobufParseFromString parses the same bytes into
// a reused sluice::proto::Example (protobuf's C++ parser, no tensors), and
// each sluice benchmark reports `x_protobuf`, its Examples/s over that
// reference's. Target: >= 1M Examples/s on one core for ParseSingle and
// ParseBatch.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "sluice/records/example_builder.h"
#include "sluice/records/example_parser.h"
#include "sluice/records/example_proto.h"

namespace sluice {
namespace {

constexpr int kNumExamples = 1024;

// The examples, back to back in one Buffer, as a record reader holds them.
struct Corpus {
  Buffer buffer;
  std::vector<std::string_view> records;
  size_t bytes = 0;
};

const Corpus& GetCorpus() {
  static const Corpus corpus = [] {
    std::mt19937_64 rng(42);
    std::vector<std::string> serialized;
    ExampleBuilder b;
    for (int i = 0; i < kNumExamples; ++i) {
      b.Clear();
      b.AddInt64("label", static_cast<int64_t>(rng() % 1000));
      b.AddInt64("user_id", static_cast<int64_t>(rng() >> 20));
      b.AddInt64("timestamp", 1700000000 + static_cast<int64_t>(rng() % 100000000));
      b.AddInt64("clicks", static_cast<int64_t>(rng() % 50));
      b.AddFloat("weight", static_cast<float>(rng() % 1000) / 1000.0f);
      std::vector<float> f(4);
      for (float& x : f) x = static_cast<float>(rng() % 10000) / 7.0f;
      b.AddFloatList("bbox", f);
      for (float& x : f) x = static_cast<float>(rng() % 10000) / 3.0f;
      b.AddFloatList("embedding", f);
      std::vector<int64_t> tags(8);
      for (int64_t& t : tags) t = static_cast<int64_t>(rng() % 100000);
      b.AddInt64List("tags", tags);
      b.AddBytes("id", std::string(16, static_cast<char>('a' + i % 26)));
      b.AddBytes("text", std::string(96 + rng() % 8, 'x'));
      serialized.push_back(b.Serialize());
    }
    Corpus c;
    for (const std::string& s : serialized) c.bytes += s.size();
    c.buffer = Buffer::Allocate(c.bytes).value();
    size_t offset = 0;
    for (const std::string& s : serialized) {
      std::memcpy(c.buffer.data() + offset, s.data(), s.size());
      c.records.emplace_back(reinterpret_cast<const char*>(c.buffer.data()) + offset, s.size());
      offset += s.size();
    }
    return c;
  }();
  return corpus;
}

ParseSpec BenchSpec() {
  return {
      {"label", FixedLenFeature(DType::kInt64, {})},
      {"user_id", FixedLenFeature(DType::kInt64, {})},
      {"timestamp", FixedLenFeature(DType::kInt64, {})},
      {"clicks", FixedLenFeature(DType::kInt64, {}, Tensor::Scalar<int64_t>(0))},
      {"weight", FixedLenFeature(DType::kFloat32, {})},
      {"bbox", FixedLenFeature(DType::kFloat32, {4})},
      {"embedding", FixedLenFeature(DType::kFloat32, {4})},
      {"tags", VarLenFeature(DType::kInt64)},
      {"id", FixedLenFeature(DType::kString, {})},
      {"text", FixedLenFeature(DType::kString, {})},
  };
}

// protobuf's Examples/s on the corpus, measured once per run.
double ProtobufRate() {
  static const double rate = [] {
    const Corpus& c = GetCorpus();
    proto::Example ex;
    size_t n = 0;
    const auto start = std::chrono::steady_clock::now();
    auto elapsed = std::chrono::duration<double>(0);
    while (elapsed.count() < 0.5) {
      for (std::string_view r : c.records) {
        ex.ParseFromArray(r.data(), static_cast<int>(r.size()));
        benchmark::DoNotOptimize(ex);
      }
      n += c.records.size();
      elapsed = std::chrono::steady_clock::now() - start;
    }
    return static_cast<double>(n) / elapsed.count();
  }();
  return rate;
}

// Call at the start of a benchmark; Report() uses it for `x_protobuf`.
std::chrono::steady_clock::time_point Start() {
  ProtobufRate();  // measured before the timed loop
  return std::chrono::steady_clock::now();
}

void Report(benchmark::State& state, int64_t examples,
            std::chrono::steady_clock::time_point start) {
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  state.SetItemsProcessed(examples);
  state.SetBytesProcessed(examples * static_cast<int64_t>(GetCorpus().bytes / kNumExamples));
  state.counters["x_protobuf"] = static_cast<double>(examples) / seconds / ProtobufRate();
}

void BM_ProtobufParseFromString(benchmark::State& state) {
  const Corpus& c = GetCorpus();
  proto::Example ex;
  size_t i = 0;
  const auto start = Start();
  for (auto _ : state) {
    const std::string_view r = c.records[i++ % kNumExamples];
    if (!ex.ParseFromArray(r.data(), static_cast<int>(r.size()))) state.SkipWithError("parse");
    benchmark::DoNotOptimize(ex);
  }
  Report(state, static_cast<int64_t>(state.iterations()), start);
}

void BM_ParseSingle(benchmark::State& state) {
  const Corpus& c = GetCorpus();
  const ExampleParser parser = ExampleParser::Create(BenchSpec()).value();
  const bool owned = state.range(0) != 0;
  size_t i = 0;
  const auto start = Start();
  for (auto _ : state) {
    const std::string_view r = c.records[i++ % kNumExamples];
    Result<Element> e = owned ? parser.ParseSingle(r, c.buffer) : parser.ParseSingle(r);
    if (!e.ok()) state.SkipWithError(e.status().ToString().c_str());
    benchmark::DoNotOptimize(e);
  }
  Report(state, static_cast<int64_t>(state.iterations()), start);
}

void BM_ParseBatch(benchmark::State& state) {
  const Corpus& c = GetCorpus();
  const ExampleParser parser = ExampleParser::Create(BenchSpec()).value();
  const size_t batch = static_cast<size_t>(state.range(0));
  const bool owned = state.range(1) != 0;
  std::vector<Buffer> owners(batch, c.buffer);
  size_t next = 0;
  const auto start = Start();
  for (auto _ : state) {
    if (next + batch > c.records.size()) next = 0;
    const std::span<const std::string_view> rows(c.records.data() + next, batch);
    Result<Element> e = owned ? parser.ParseBatch(rows, owners) : parser.ParseBatch(rows);
    if (!e.ok()) state.SkipWithError(e.status().ToString().c_str());
    benchmark::DoNotOptimize(e);
    next += batch;
  }
  Report(state, static_cast<int64_t>(state.iterations() * batch), start);
}

BENCHMARK(BM_ProtobufParseFromString);
BENCHMARK(BM_ParseSingle)->ArgName("owned")->Arg(1)->Arg(0);
BENCHMARK(BM_ParseBatch)->ArgNames({"batch", "owned"})->Args({128, 1})->Args({128, 0});

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
