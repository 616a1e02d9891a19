// parse_sequence_example's per-record cost against parse_example's on
// comparable data (the same values as one Example or as one
// SequenceExample), one record per map call and after batch(32), and
// SparseFeature / RaggedFeature against the plain VarLen features they
// read. BM_Stage_records_source drains the in-memory records alone.
// ns_per_element is per record.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "drain.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/pipeline/parse_example.h"
#include "sluice/pipeline/parse_sequence_example.h"
#include "sluice/records/example_builder.h"

namespace sluice {
namespace {

constexpr int64_t kRecords = 20'000;
constexpr int kSteps = 8;

// Record i: id, 8 steps of a float pair and of 0..3 int64 tokens.
const Tensor& Records(bool sequence) {
  static const Tensor* tensors[2] = {nullptr, nullptr};
  if (tensors[sequence] == nullptr) {
    std::vector<std::string> out;
    for (int64_t i = 0; i < kRecords; ++i) {
      std::vector<float> frames;
      std::vector<int64_t> tokens, lengths;
      SequenceExampleBuilder s;
      s.context().AddInt64("id", i);
      for (int k = 0; k < kSteps; ++k) {
        const float pair[2] = {static_cast<float>(i), static_cast<float>(k)};
        frames.insert(frames.end(), pair, pair + 2);
        std::vector<int64_t> step(static_cast<size_t>((i + k) % 4), i * k);
        tokens.insert(tokens.end(), step.begin(), step.end());
        lengths.push_back(static_cast<int64_t>(step.size()));
        s.AppendFloatList("frames", pair).AppendInt64List("tok", step);
      }
      if (sequence) {
        out.push_back(s.Serialize());
      } else {
        ExampleBuilder b;
        b.AddInt64("id", i).AddFloatList("frames", frames).AddInt64List("tok", tokens);
        b.AddInt64List("tok_len", lengths);
        out.push_back(b.Serialize());
      }
    }
    tensors[sequence] = new Tensor(Tensor::FromStrings(out).value());
  }
  return *tensors[sequence];
}

Dataset Src(bool sequence) {
  return Dataset::from_tensor_slices({Records(sequence)})
      .with_options({.seed = 1, .autotune = false});
}

void Drain(benchmark::State& state, const Dataset& ds, int64_t per_element) {
  std::optional<int64_t> n = bench::DrainEachIteration(state, ds);
  if (!n) return;
  const int64_t records = *n * per_element;
  state.SetItemsProcessed(records);
  state.counters["ns_per_element"] = bench::TimePer(static_cast<double>(records));
}

ParseSpec ExampleSpec() {
  return {{"id", FixedLenFeature(DType::kInt64, {})},
          {"frames", FixedLenSequenceFeature(DType::kFloat32, {2}, true)},
          {"tok", VarLenFeature(DType::kInt64)},
          {"tok_len", VarLenFeature(DType::kInt64)}};
}
ParseSpec RaggedSpec() {
  return {{"id", FixedLenFeature(DType::kInt64, {})},
          {"frames", RaggedFeature(DType::kFloat32, "frames", {UniformRowLength(2)})},
          {"tok", RaggedFeature(DType::kInt64, "tok", {RowLengths("tok_len")})}};
}
ParseSpec Context() { return {{"id", FixedLenFeature(DType::kInt64, {})}}; }
ParseSpec Sequence() {
  return {{"frames", FixedLenSequenceFeature(DType::kFloat32, {2})},
          {"tok", VarLenFeature(DType::kInt64)}};
}

void BM_Stage_records_source(benchmark::State& s) { Drain(s, Src(true), 1); }
void BM_Stage_records_parse_example(benchmark::State& s) {
  Drain(s, Src(false).map(parse_example(ExampleSpec())), 1);
}
void BM_Stage_records_parse_example_ragged(benchmark::State& s) {
  Drain(s, Src(false).map(parse_example(RaggedSpec())), 1);
}
void BM_Stage_records_parse_sequence_example(benchmark::State& s) {
  Drain(s, Src(true).map(parse_sequence_example(Context(), Sequence())), 1);
}
void BM_Stage_records_parse_example_batch32(benchmark::State& s) {
  Drain(s, Src(false).batch(32).map(parse_example(ExampleSpec())), 32);
}
void BM_Stage_records_parse_example_ragged_batch32(benchmark::State& s) {
  Drain(s, Src(false).batch(32).map(parse_example(RaggedSpec())), 32);
}
void BM_Stage_records_parse_sequence_example_batch32(benchmark::State& s) {
  Drain(s, Src(true).batch(32).map(parse_sequence_example(Context(), Sequence())), 32);
}

}  // namespace
}  // namespace sluice

BENCHMARK(sluice::BM_Stage_records_source)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(sluice::BM_Stage_records_parse_example)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(sluice::BM_Stage_records_parse_example_ragged)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(sluice::BM_Stage_records_parse_sequence_example)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(sluice::BM_Stage_records_parse_example_batch32)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(sluice::BM_Stage_records_parse_example_ragged_batch32)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(sluice::BM_Stage_records_parse_sequence_example_batch32)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
