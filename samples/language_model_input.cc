// A language model's input pipeline: two corpora mixed 70/30 with
// sample_from_datasets, packed into fixed-length rows with pack_sequences
// (segment ids and positions, as MaxText trains on), batched; then a
// checkpoint mid-epoch, restored into the same pipeline with new mixture
// weights (each corpus continues where it was).
//
//   build/samples/language_model_input [--row-length 64] [--batches 3]
//
// Python, with sluice (python/samples/language_model_input.py):
//   mixed = sluice.Dataset.sample_from_datasets([web, code], [0.7, 0.3], seed=1)
//   rows = mixed.pack_sequences(64, algorithm="best_fit").batch(4)
#include <cstdio>
#include <string>
#include <vector>

#include "command_line.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/pipeline/pack_sequences.h"

namespace {

using sluice::Dataset;
using sluice::Element;
using sluice::Tensor;

// A corpus of `n` token sequences of 3..50 tokens; tokens start at `first`.
Dataset Corpus(int64_t n, int32_t first, int64_t stride) {
  return Dataset::range(n).map([first, stride](Element e) -> sluice::Result<Element> {
    const int64_t i = e[0].scalar<int64_t>();
    std::vector<int32_t> tokens(static_cast<size_t>(3 + (i * stride) % 48));
    for (size_t t = 0; t < tokens.size(); ++t) tokens[t] = first + static_cast<int32_t>(t);
    SLUICE_ASSIGN_OR_RETURN(Tensor tensor, Tensor::FromVector<int32_t>(tokens));
    return Element({tensor}, {"inputs"});
  });
}

Dataset Pipeline(std::vector<double> weights, int64_t row_length) {
  Dataset mixed = Dataset::sample_from_datasets({Corpus(400, 1000, 7), Corpus(400, 5000, 11)},
                                                std::move(weights), {.seed = 1});
  return mixed
      .apply(sluice::pack_sequences(row_length, {.algorithm = sluice::PackAlgorithm::kBestFit}))
      .batch(4, {.drop_remainder = true});
}

// Prints one batch's first row: which corpus each segment came from.
void PrintRow(const Element& batch, int64_t row_length) {
  const auto tokens = batch[0].flat<int32_t>();
  const auto segments = batch[1].flat<int32_t>();
  std::string line;
  int32_t last_segment = 0;
  for (int64_t t = 0; t < row_length; ++t) {
    const int32_t segment = segments[static_cast<size_t>(t)];
    if (segment == 0) {
      line += '.';
    } else if (segment != last_segment) {
      line += tokens[static_cast<size_t>(t)] >= 5000 ? 'C' : 'W';
    } else {
      line += tokens[static_cast<size_t>(t)] >= 5000 ? 'c' : 'w';
    }
    last_segment = segment;
  }
  std::printf("  row 0: %s\n", line.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "A language model's input: two corpora mixed 70/30, packed into rows with segment ids, "
      "batched; a checkpoint restored with new mixture weights."};
  int64_t row_length = 64;
  int batches = 3;
  app.add_option("--row-length", row_length, "tokens per packed row")->check(CLI::Range(8, 4096));
  app.add_option("--batches", batches, "batches before the checkpoint")->check(CLI::Range(1, 50));
  if (std::optional<int> status = samples::ParseCommandLine(app, argc, argv)) return *status;

  Dataset rows = Pipeline({0.7, 0.3}, row_length);
  if (!rows.status().ok()) {
    std::fprintf(stderr, "%s\n", rows.status().ToString().c_str());
    return 1;
  }
  std::printf("pipeline: %s\n", rows.DebugString().c_str());
  sluice::Result<sluice::Iterator> it = rows.iterator();
  if (!it.ok()) {
    std::fprintf(stderr, "%s\n", it.status().ToString().c_str());
    return 1;
  }
  for (int b = 0; b < batches; ++b) {
    sluice::Result<std::optional<Element>> batch = it->next();
    if (!batch.ok() || !batch->has_value()) {
      std::fprintf(stderr, "batch %d: %s\n", b,
                   batch.ok() ? "end of data" : batch.status().ToString().c_str());
      return 1;
    }
    std::printf("batch %d: %s (W/C: a web/code sequence starts, '.' padding)\n", b,
                (**batch)[0].shape().ToString().c_str());
    PrintRow(**batch, row_length);
  }
  for (const sluice::StageStats& s : it->stats().stages) {
    if (s.kind == "pack_sequences") {
      std::printf("packing: %.1f%% padding of %lld tokens\n", 100.0 * s.padding_fraction(),
                  static_cast<long long>(s.tokens));
    }
  }

  // Checkpoint, then resume with the mixture changed to 50/50: the state
  // holds each corpus's position and the draw counter, not the weights.
  sluice::Result<std::string> state = it->save();
  if (!state.ok()) {
    std::fprintf(stderr, "%s\n", state.status().ToString().c_str());
    return 1;
  }
  sluice::Result<sluice::Iterator> resumed = Pipeline({0.5, 0.5}, row_length).iterator();
  sluice::Status restored = resumed.ok() ? resumed->restore(*state) : resumed.status();
  if (!restored.ok()) {
    std::fprintf(stderr, "%s\n", restored.ToString().c_str());
    return 1;
  }
  int64_t rest = 0;
  for (;;) {
    sluice::Result<std::optional<Element>> batch = resumed->next();
    if (!batch.ok()) {
      std::fprintf(stderr, "%s\n", batch.status().ToString().c_str());
      return 1;
    }
    if (!batch->has_value()) break;
    ++rest;
  }
  std::printf("checkpoint: %zu bytes; resumed with weights 0.5/0.5: %lld more batches\n",
              state->size(), static_cast<long long>(rest));
  return 0;
}
