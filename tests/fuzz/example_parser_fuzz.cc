// libFuzzer target for ExampleParser and SequenceExampleParser.
//
// Input: byte 0 picks a spec (and Example or SequenceExample mode), the rest
// is the serialized message. The fast parsers run on it (single, owned and
// copied, and as a batch with its two halves) next to protobuf's
// ParseFromString and the reference parser built on protobuf messages.
// Aborts when they disagree: where protobuf accepts the bytes, our output
// (or error code and the feature it names) must equal the reference's;
// where protobuf rejects them, we must report DataLoss.
//
// Every Example input is also parsed with a spec of SparseFeatures and
// RaggedFeatures (all partition kinds) over the same keys, which has no
// reference: there, rejected protobuf must be DataLoss, the batch must
// succeed exactly when each of its rows does, and row splits must be
// well formed (start at 0, never decrease).
//
// Build with -DSLUICE_FUZZ=ON under clang; run for example
//   ./example_parser_fuzz tests/fuzz/corpus/example_parser -max_total_time=60
#include <google/protobuf/stubs/logging.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "example_reference.h"
#include "sluice/records/example_parser.h"
#include "sluice/records/example_proto.h"
#include "sluice/records/sequence_example_parser.h"

namespace sluice {
namespace {

struct Specs {
  std::vector<ParseSpec> example;
  std::vector<ExampleParser> example_parsers;
  ParseSpec context, sequence;
  std::optional<ExampleParser> composite;
  std::vector<SequenceExampleParser> sequence_parsers;
};

const Specs& GetSpecs() {
  static const Specs* specs = [] {
    auto* s = new Specs;
    s->example = {
        {
            {"a", FixedLenFeature(DType::kInt64, {}, Tensor::Scalar<int64_t>(-1))},
            {"b", FixedLenFeature(DType::kFloat32, {2})},
            {"c", VarLenFeature(DType::kString)},
            {"d", FixedLenSequenceFeature(DType::kInt64, {}, true)},
            {"", VarLenFeature(DType::kFloat32)},
        },
        {
            {"a", VarLenFeature(DType::kInt64)},
            {"b", VarLenFeature(DType::kFloat32)},
            {"c", VarLenFeature(DType::kString)},
        },
        {
            {"label", FixedLenFeature(DType::kInt64, {}, Tensor::Scalar<int64_t>(-1))},
            {"scores", FixedLenFeature(DType::kFloat32, {3},
                                       Tensor::FromVector<float>({0.f, 0.f, 0.f}).value())},
            {"name", FixedLenFeature(DType::kString, {}, Tensor::StringScalar("?"))},
            {"tags", VarLenFeature(DType::kInt64)},
            {"frames",
             FixedLenSequenceFeature(DType::kFloat32, {2}, true, Tensor::Scalar<float>(0.5f))},
        },
    };
    for (const ParseSpec& spec : s->example) {
      s->example_parsers.push_back(ExampleParser::Create(spec).value());
    }
    s->context = {{"length", FixedLenFeature(DType::kInt64, {}, Tensor::Scalar<int64_t>(0))},
                  {"id", VarLenFeature(DType::kString)}};
    s->sequence = {{"tokens", VarLenFeature(DType::kInt64)},
                   {"vec", FixedLenSequenceFeature(DType::kFloat32, {2}, true)},
                   {"a", FixedLenSequenceFeature(DType::kInt64, {}, false)}};
    s->sequence_parsers.push_back(SequenceExampleParser::Create(s->context, s->sequence).value());
    // RaggedFeatures in both specs (no reference: see FuzzSequenceExample).
    s->sequence_parsers.push_back(
        SequenceExampleParser::Create(
            {{"ctx", RaggedFeature(DType::kString, "id", {RowLengths("length")})}},
            {{"tok", RaggedFeature(DType::kInt64, "tokens", {RowLengths("a")})},
             {"vec", RaggedFeature(DType::kFloat32, "vec", {UniformRowLength(2)}, DType::kInt64)},
             {"ids", RaggedFeature(DType::kInt64, "a", {ValueRowIds("tokens")})}})
            .value());
    s->composite =
        ExampleParser::Create(
            {
                {"sp", SparseFeature({"a"}, "b", DType::kFloat32, {8})},
                {"sp2",
                 SparseFeature({"a", "d"}, "c", DType::kString, {4, int64_t{1} << 40}, true)},
                {"r_splits", RaggedFeature(DType::kFloat32, "b", {RowSplits("a")})},
                {"r_len",
                 RaggedFeature(DType::kString, "c", {RowLengths("d"), UniformRowLength(2)})},
                {"r_ids", RaggedFeature(DType::kInt64, "tags", {ValueRowIds("a")})},
                {"r_starts", RaggedFeature(DType::kInt64, "d", {RowStarts("a")}, DType::kInt64)},
                {"r_limits",
                 RaggedFeature(DType::kInt64, "a", {RowLimits("tags"), UniformRowLength(1)})},
                {"r_plain", RaggedFeature(DType::kInt64, "label")},
                {"r_uniform", RaggedFeature(DType::kFloat32, "scores",
                                            {UniformRowLength(3), RowLengths("tags")})},
            })
            .value();
    return s;
  }();
  return *specs;
}

[[noreturn]] void Disagree(const char* what, const std::string& detail, std::string_view bytes) {
  std::fprintf(stderr, "example_parser_fuzz: %s\n%s\ninput (%zu bytes):", what, detail.c_str(),
               bytes.size());
  for (unsigned char c : bytes) std::fprintf(stderr, " %02x", c);
  std::fprintf(stderr, "\n");
  std::abort();
}

Buffer Copy(std::string_view bytes) {
  Buffer b = Buffer::Allocate(bytes.size()).value();
  if (!bytes.empty()) std::memcpy(b.data(), bytes.data(), bytes.size());
  return b;
}

std::string_view ViewOf(const Buffer& b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

// Row splits start at 0 and never decrease.
void CheckSplits(const Element& e, std::string_view bytes) {
  for (size_t i = 0; i < e.size(); ++i) {
    if (e.names()[i].find(".row_splits_") == std::string::npos) continue;
    const Tensor& t = e[i];
    int64_t prev = 0;
    for (int64_t k = 0; k < t.num_elements(); ++k) {
      const int64_t x = t.dtype() == DType::kInt64 ? t.flat<int64_t>()[k] : t.flat<int32_t>()[k];
      if ((k == 0 && x != 0) || x < prev) Disagree("bad row splits", e.names()[i], bytes);
      prev = x;
    }
  }
}

void FuzzComposite(std::string_view bytes, const bool proto_ok[3],
                   std::span<const std::string_view> rows) {
  const ExampleParser& parser = *GetSpecs().composite;
  bool all_ok = true;
  for (size_t r = 0; r < rows.size(); ++r) {
    const Result<Element> one = parser.ParseSingle(rows[r]);
    if (!proto_ok[r] && one.status().code() != StatusCode::kDataLoss) {
      Disagree("protobuf rejects, composite ParseSingle does not report DataLoss",
               one.ok() ? one->DebugString() : one.status().ToString(), bytes);
    }
    if (one.ok()) CheckSplits(*one, bytes);
    all_ok = all_ok && one.ok();
  }
  const Result<Element> batch = parser.ParseBatch(rows);
  if (batch.ok() != all_ok) {
    Disagree("composite ParseBatch and ParseSingle disagree",
             batch.ok() ? "batch ok" : batch.status().ToString(), bytes);
  }
  if (batch.ok()) CheckSplits(*batch, bytes);
}

void FuzzExample(size_t which, std::string_view bytes) {
  const Specs& specs = GetSpecs();
  const ParseSpec& spec = specs.example[which];
  const ExampleParser& parser = specs.example_parsers[which];
  proto::Example ex;
  const bool proto_ok = ex.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));

  const Buffer owned = Copy(bytes);
  for (const Result<Element>& fast :
       {parser.ParseSingle(bytes), parser.ParseSingle(ViewOf(owned), owned)}) {
    if (!proto_ok) {
      if (fast.status().code() != StatusCode::kDataLoss) {
        Disagree("protobuf rejects, ParseSingle does not report DataLoss",
                 fast.ok() ? fast->DebugString() : fast.status().ToString(), bytes);
      }
      continue;
    }
    const std::string diff =
        testing::CompareWithReference(fast, testing::ReferenceParseSingle(ex, spec));
    if (!diff.empty()) Disagree("ParseSingle differs from the reference", diff, bytes);
  }

  // A batch: the whole input, then its two halves.
  const std::string_view rows[] = {bytes, bytes.substr(0, bytes.size() / 2),
                                   bytes.substr(bytes.size() / 2)};
  std::vector<proto::Example> exs(3);
  bool all_ok = true;
  bool row_ok[3];
  for (size_t r = 0; r < 3; ++r) {
    row_ok[r] = exs[r].ParseFromArray(rows[r].data(), static_cast<int>(rows[r].size()));
    all_ok = row_ok[r] && all_ok;
  }
  FuzzComposite(bytes, row_ok, rows);
  const Result<Element> batch = parser.ParseBatch(rows);
  if (!all_ok) {
    if (batch.ok()) Disagree("protobuf rejects a row, ParseBatch succeeds", "", bytes);
    return;
  }
  const std::string diff =
      testing::CompareWithReference(batch, testing::ReferenceParseBatch(exs, spec));
  if (!diff.empty()) Disagree("ParseBatch differs from the reference", diff, bytes);
}

void FuzzSequenceExample(std::string_view bytes) {
  const Specs& specs = GetSpecs();
  proto::SequenceExample ex;
  const bool proto_ok = ex.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
  const Result<ParsedSequenceExample> fast = specs.sequence_parsers[0].Parse(bytes);
  // The ragged specs: DataLoss where protobuf rejects; else a batch of the
  // input twice succeeds exactly when the single parse does.
  const Result<ParsedSequenceExample> ragged = specs.sequence_parsers[1].Parse(bytes);
  if (!proto_ok && ragged.status().code() != StatusCode::kDataLoss) {
    Disagree("protobuf rejects, ragged SequenceExampleParser does not report DataLoss",
             ragged.ok() ? "OK" : ragged.status().ToString(), bytes);
  }
  const std::string_view twice[] = {bytes, bytes};
  const Result<ParsedSequenceExample> ragged_batch = specs.sequence_parsers[1].ParseBatch(twice);
  if (ragged_batch.ok() != ragged.ok()) {
    Disagree("ragged SequenceExample ParseBatch and Parse disagree",
             ragged_batch.ok() ? "batch ok" : ragged_batch.status().ToString(), bytes);
  }
  if (ragged.ok()) {
    CheckSplits(ragged->context, bytes);
    CheckSplits(ragged->feature_lists, bytes);
    CheckSplits(ragged_batch->feature_lists, bytes);
  }
  if (!proto_ok) {
    if (fast.status().code() != StatusCode::kDataLoss) {
      Disagree("protobuf rejects, SequenceExampleParser does not report DataLoss",
               fast.ok() ? "OK" : fast.status().ToString(), bytes);
    }
    return;
  }
  const std::string diff = testing::CompareWithReference(
      fast, testing::ReferenceParseSequence(ex, specs.context, specs.sequence));
  if (!diff.empty()) Disagree("SequenceExampleParser differs from the reference", diff, bytes);
}

}  // namespace
}  // namespace sluice

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static google::protobuf::LogSilencer* silence = new google::protobuf::LogSilencer;
  (void)silence;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  const size_t mode = data[0] % 4;
  if (mode == 3) {
    sluice::FuzzSequenceExample(bytes);
  } else {
    sluice::FuzzExample(mode, bytes);
  }
  return 0;
}
