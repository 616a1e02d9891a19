// pack_sequences: conformance, first-fit and best-fit rows worked out by
// hand, Grain's emission rule, several components, truncation, padding
// stats and bad arguments.
#include "sluice/pipeline/pack_sequences.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "conformance.h"
#include "sluice/core/rng.h"
#include "sluice/pipeline/dataset.h"

namespace sluice {
namespace {

using testing::ReadAll;
using testing::RunConformance;
using Seq = std::vector<int64_t>;

template <typename T>
Tensor Vec(const std::vector<int64_t>& v) {
  std::vector<T> t(v.begin(), v.end());
  return Tensor::FromVector<T>(t).value();
}

Tensor VecOf(DType d, const std::vector<int64_t>& v) {
  return d == DType::kInt32 ? Vec<int32_t>(v) : Vec<int64_t>(v);
}

// range(n) mapped (parallelism p) to {name_k: seqs[k][i]}: variable-length
// 1-D tensors with a known spec.
Dataset Seqs(std::vector<std::string> names, std::vector<std::vector<Seq>> seqs, int p = 1,
             DType d = DType::kInt64) {
  std::vector<ComponentSpec> spec;
  for (const std::string& n : names) spec.push_back({n, d, Shape{Shape::kUnknownDim}});
  const int64_t n = static_cast<int64_t>(seqs[0].size());
  return Dataset::range(n).map(
      [names, seqs, d](Element e) -> Result<Element> {
        const size_t i = static_cast<size_t>(e[0].scalar<int64_t>());
        std::vector<Tensor> out;
        for (const auto& s : seqs) out.push_back(VecOf(d, s[i]));
        return Element(std::move(out), names);
      },
      {.parallelism = p, .output_spec = ElementSpec(spec)});
}

Dataset Inputs(std::vector<Seq> seqs, int p = 1) { return Seqs({"inputs"}, {std::move(seqs)}, p); }

// One row of a single component "inputs" as DebugString(1000).
std::string Row(const Seq& values, const Seq& seg, const Seq& pos, DType d = DType::kInt64) {
  return Element({VecOf(d, values), Vec<int32_t>(seg), Vec<int32_t>(pos)},
                 {"inputs", "inputs_segment_ids", "inputs_positions"})
      .DebugString(1000);
}

PackOptions Opts(PackAlgorithm a, int64_t bins) {
  return {.algorithm = a, .num_packing_bins = bins, .shuffle_bins = false};
}

// ---- conformance --------------------------------------------------------

std::vector<Seq> RandomSeqs(int n, int64_t max_len, uint64_t seed) {
  Rng rng(seed);
  std::vector<Seq> out;
  for (int i = 0; i < n; ++i) {
    Seq s(1 + rng.UniformInt(static_cast<uint64_t>(max_len)));
    for (int64_t& x : s) x = 1 + static_cast<int64_t>(rng.UniformInt(1000));
    out.push_back(s);
  }
  return out;
}

TEST(PackSequencesTest, ConformanceFirstFit) {
  const std::vector<Seq> seqs = RandomSeqs(40, 12, 1);
  RunConformance({.name = "pack_first_fit",
                  .make =
                      [&](int p) {
                        return Inputs(seqs, p).apply(pack_sequences(
                            16, {.num_packing_bins = 3, .shuffle_bins = true, .seed = 5}));
                      },
                  .make_failing =
                      [] {
                        return Inputs({{1}, {2, 3}, {4}, {1, 2, 3, 4, 5, 6}, {7}})
                            .apply(pack_sequences(4, {.num_packing_bins = 2}));
                      },
                  .error_substring = "stage 'pack_sequences' failed on element 3"});
}

TEST(PackSequencesTest, ConformanceBestFitTwoComponents) {
  const std::vector<Seq> a = RandomSeqs(30, 9, 2), b = RandomSeqs(30, 14, 3);
  RunConformance({.name = "pack_best_fit",
                  .make =
                      [&](int p) {
                        return pack_sequences(Seqs({"inputs", "targets"}, {a, b}, p), 16,
                                              {.algorithm = PackAlgorithm::kBestFit,
                                               .num_packing_bins = 4,
                                               .feature_lengths = {{"inputs", 12}},
                                               .name = "packer"});
                      },
                  .make_failing =
                      [] {
                        return Dataset::range(6)
                            .map([](Element e) -> Result<Element> {
                              if (e[0].scalar<int64_t>() == 4) return Status::DataLoss("bad four");
                              return Element({Vec<int64_t>({1, 2})}, {"inputs"});
                            })
                            .apply(pack_sequences(8, {.num_packing_bins = 1}));
                      },
                  .error_substring = "bad four"});
}

// ---- exact rows ---------------------------------------------------------

// Lengths 5, 6, 3, 2 into 2 rows of 10: first-fit puts the 3 into row 0
// (the first with room), best-fit into row 1 (6 tokens in it, more than 5).
const std::vector<Seq> kCrafted = {
    {1, 2, 3, 4, 5}, {11, 12, 13, 14, 15, 16}, {21, 22, 23}, {31, 32}};

TEST(PackSequencesTest, FirstFitRowsByHand) {
  EXPECT_EQ(ReadAll(pack_sequences(Inputs(kCrafted), 10, Opts(PackAlgorithm::kFirstFit, 2))),
            (std::vector<std::string>{
                Row({1, 2, 3, 4, 5, 21, 22, 23, 31, 32}, {1, 1, 1, 1, 1, 2, 2, 2, 3, 3},
                    {0, 1, 2, 3, 4, 0, 1, 2, 0, 1}),
                Row({11, 12, 13, 14, 15, 16, 0, 0, 0, 0}, {1, 1, 1, 1, 1, 1, 0, 0, 0, 0},
                    {0, 1, 2, 3, 4, 5, 0, 0, 0, 0}),
            }));
}

TEST(PackSequencesTest, BestFitRowsByHand) {
  EXPECT_EQ(ReadAll(pack_sequences(Inputs(kCrafted), 10, Opts(PackAlgorithm::kBestFit, 2))),
            (std::vector<std::string>{
                Row({1, 2, 3, 4, 5, 31, 32, 0, 0, 0}, {1, 1, 1, 1, 1, 2, 2, 0, 0, 0},
                    {0, 1, 2, 3, 4, 0, 1, 0, 0, 0}),
                Row({11, 12, 13, 14, 15, 16, 21, 22, 23, 0}, {1, 1, 1, 1, 1, 1, 2, 2, 2, 0},
                    {0, 1, 2, 3, 4, 5, 0, 1, 2, 0}),
            }));
}

TEST(PackSequencesTest, NoRoomEmitsEveryOpenRowThenStartsAfresh) {
  // Grain's rule: 6, 6 fill two rows; the third 6 fits neither, so both rows
  // go out and it opens a new set; the end flushes that one.
  const std::vector<std::string> got = ReadAll(
      pack_sequences(Inputs({{1, 1, 1, 1, 1, 1}, {2, 2, 2, 2, 2, 2}, {3, 3, 3, 3, 3, 3}, {4}}), 8,
                     Opts(PackAlgorithm::kFirstFit, 2)));
  EXPECT_EQ(got,
            (std::vector<std::string>{
                Row({1, 1, 1, 1, 1, 1, 0, 0}, {1, 1, 1, 1, 1, 1, 0, 0}, {0, 1, 2, 3, 4, 5, 0, 0}),
                Row({2, 2, 2, 2, 2, 2, 0, 0}, {1, 1, 1, 1, 1, 1, 0, 0}, {0, 1, 2, 3, 4, 5, 0, 0}),
                Row({3, 3, 3, 3, 3, 3, 4, 0}, {1, 1, 1, 1, 1, 1, 2, 0}, {0, 1, 2, 3, 4, 5, 0, 0}),
            }));
}

TEST(PackSequencesTest, SeveralComponentsInt32WithFeatureLengthsAndPadding) {
  // inputs rows of 4, targets rows of 6; the third sequence's targets do not
  // fit, so it starts the next row.
  Dataset ds = Seqs({"inputs", "targets"}, {{{1, 2}, {3}, {4}}, {{7, 8, 9}, {10, 11, 12}, {13}}}, 1,
                    DType::kInt32);
  Dataset packed = pack_sequences(ds, 6,
                                  {.num_packing_bins = 1,
                                   .feature_lengths = {{"inputs", 4}},
                                   .padding_value = -1,
                                   .padding_values = {{"targets", 99}}});
  ASSERT_TRUE(packed.status().ok()) << packed.status().ToString();
  EXPECT_EQ(packed.element_spec().DebugString(),
            "(inputs: int32[4], targets: int32[6], inputs_segment_ids: int32[4], "
            "inputs_positions: int32[4], targets_segment_ids: int32[6], targets_positions: "
            "int32[6])");
  auto row = [](Seq in, Seq tg, Seq in_seg, Seq in_pos, Seq tg_seg, Seq tg_pos) {
    return Element({Vec<int32_t>(in), Vec<int32_t>(tg), Vec<int32_t>(in_seg), Vec<int32_t>(in_pos),
                    Vec<int32_t>(tg_seg), Vec<int32_t>(tg_pos)},
                   {"inputs", "targets", "inputs_segment_ids", "inputs_positions",
                    "targets_segment_ids", "targets_positions"})
        .DebugString(1000);
  };
  EXPECT_EQ(ReadAll(packed), (std::vector<std::string>{
                                 row({1, 2, 3, -1}, {7, 8, 9, 10, 11, 12}, {1, 1, 2, 0},
                                     {0, 1, 0, 0}, {1, 1, 1, 2, 2, 2}, {0, 1, 2, 0, 1, 2}),
                                 row({4, -1, -1, -1}, {13, 99, 99, 99, 99, 99}, {1, 0, 0, 0},
                                     {0, 0, 0, 0}, {1, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0}),
                             }));
}

TEST(PackSequencesTest, Int32SingleComponent) {
  EXPECT_EQ(
      ReadAll(pack_sequences(Seqs({"inputs"}, {{{5, 6}, {7}}}, 1, DType::kInt32), 4,
                             Opts(PackAlgorithm::kBestFit, 1))),
      (std::vector<std::string>{Row({5, 6, 7, 0}, {1, 1, 2, 0}, {0, 1, 0, 0}, DType::kInt32)}));
}

TEST(PackSequencesTest, FloatComponentsArePackedToo) {
  Dataset ds = Dataset::from_tensors(
      Element({Tensor::FromVector<float>(std::vector<float>{0.5f, 1.5f}).value()}, {"w"}));
  EXPECT_EQ(ReadAll(pack_sequences(ds, 3, {.num_packing_bins = 1, .padding_value = 7})),
            (std::vector<std::string>{
                Element({Tensor::FromVector<float>(std::vector<float>{0.5f, 1.5f, 7.f}).value(),
                         Vec<int32_t>({1, 1, 0}), Vec<int32_t>({0, 1, 0})},
                        {"w", "w_segment_ids", "w_positions"})
                    .DebugString(1000)}));
}

TEST(PackSequencesTest, TruncateKeepsTheFirstTokens) {
  EXPECT_EQ(
      ReadAll(pack_sequences(Inputs({{1, 2, 3, 4, 5, 6}, {7}}), 4,
                             {.num_packing_bins = 1, .shuffle_bins = false, .truncate = true})),
      (std::vector<std::string>{Row({1, 2, 3, 4}, {1, 1, 1, 1}, {0, 1, 2, 3}),
                                Row({7, 0, 0, 0}, {1, 0, 0, 0}, {0, 0, 0, 0})}));
}

TEST(PackSequencesTest, OverLongIsAnErrorAsInGrain) {
  Result<Iterator> it = Inputs({{1, 2}, {1, 2, 3, 4, 5}}).apply(pack_sequences(4)).iterator();
  ASSERT_TRUE(it.ok());
  Result<std::optional<Element>> e = it->next();
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(e.status().message().find("stage 'pack_sequences' failed on element 1"),
            std::string::npos)
      << e.status().ToString();
  EXPECT_NE(e.status().message().find("'inputs' has 5 tokens, more than its row length 4"),
            std::string::npos)
      << e.status().ToString();
  // A length known from the spec fails when the dataset is built.
  Dataset fixed = Dataset::from_tensors(Element({Vec<int64_t>({1, 2, 3, 4, 5})}, {"inputs"}));
  EXPECT_EQ(pack_sequences(fixed, 4).status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(pack_sequences(fixed, 4, {.truncate = true}).status().ok());
}

TEST(PackSequencesTest, EmptyInputAndEmptySequences) {
  Dataset empty = Inputs({{}}).take(0);
  EXPECT_EQ(ReadAll(pack_sequences(empty, 8)).size(), 0u);
  EXPECT_EQ(pack_sequences(Dataset::range(0).map([](Element e) { return e; }), 8).cardinality(), 0);
  // A zero-length sequence takes a segment id and no cell (Grain's rule).
  EXPECT_EQ(ReadAll(pack_sequences(Inputs({{1}, {}, {2}}), 4, Opts(PackAlgorithm::kFirstFit, 1))),
            (std::vector<std::string>{Row({1, 2, 0, 0}, {1, 3, 0, 0}, {0, 0, 0, 0})}));
}

TEST(PackSequencesTest, ShuffleBinsPermutesEachSetOfRowsDeterministically) {
  const std::vector<Seq> seqs = RandomSeqs(200, 10, 9);
  const auto plain = ReadAll(pack_sequences(Inputs(seqs), 12, Opts(PackAlgorithm::kFirstFit, 8)));
  PackOptions o = Opts(PackAlgorithm::kFirstFit, 8);
  o.shuffle_bins = true;
  o.seed = 3;
  const auto shuffled = ReadAll(pack_sequences(Inputs(seqs), 12, o));
  EXPECT_EQ(shuffled, ReadAll(pack_sequences(Inputs(seqs), 12, o)));
  EXPECT_NE(plain, shuffled);
  auto sorted = [](std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  EXPECT_EQ(sorted(plain), sorted(shuffled));
}

// Unpacking rows by segment id gives back every input sequence.
std::vector<Seq> Unpack(const Dataset& packed) {
  std::vector<Seq> out;
  Result<Iterator> it = packed.iterator();
  EXPECT_TRUE(it.ok());
  for (;;) {
    Result<std::optional<Element>> e = it->next();
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    if (!e.ok() || !e->has_value()) break;
    auto v = (**e)[0].flat<int64_t>();
    auto seg = (**e)[1].flat<int32_t>();
    auto pos = (**e)[2].flat<int32_t>();
    std::map<int32_t, Seq> by_id;
    for (size_t k = 0; k < v.size(); ++k) {
      if (seg[k] == 0) continue;
      EXPECT_EQ(pos[k], static_cast<int32_t>(by_id[seg[k]].size()));
      by_id[seg[k]].push_back(v[k]);
    }
    for (auto& [id, s] : by_id) out.push_back(s);
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(PackSequencesTest, UnpackingGivesTheInputBack) {
  std::vector<Seq> seqs = RandomSeqs(300, 30, 4);
  for (PackAlgorithm a : {PackAlgorithm::kFirstFit, PackAlgorithm::kBestFit}) {
    std::vector<Seq> want = seqs;
    std::sort(want.begin(), want.end());
    EXPECT_EQ(Unpack(pack_sequences(Inputs(seqs), 32,
                                    {.algorithm = a, .num_packing_bins = 5, .seed = 1})),
              want);
  }
}

TEST(PackSequencesTest, PaddingFractionInStats) {
  Result<Iterator> it =
      pack_sequences(Inputs(kCrafted), 10, Opts(PackAlgorithm::kFirstFit, 2)).iterator();
  ASSERT_TRUE(it.ok());
  while (true) {
    auto e = it->next();
    ASSERT_TRUE(e.ok());
    if (!e->has_value()) break;
  }
  const IteratorStats st = it->stats();
  const StageStats* pack = nullptr;
  for (const StageStats& s : st.stages) {
    if (s.kind == "pack_sequences") pack = &s;
  }
  ASSERT_NE(pack, nullptr);
  EXPECT_EQ(pack->elements, 2);
  EXPECT_EQ(pack->tokens, 20);
  EXPECT_EQ(pack->padding_tokens, 4);
  EXPECT_DOUBLE_EQ(pack->padding_fraction(), 0.2);
  EXPECT_NE(st.ToJson().find("\"padding_fraction\": 0.2"), std::string::npos) << st.ToJson();
  EXPECT_NE(st.ToString().find("20.0% padding of 20 tokens"), std::string::npos);
}

TEST(PackSequencesTest, RowsAreChargedToTheRamBudget) {
  // One row of 4096 int64 tokens holds 4096 * (8 + 4 + 4) bytes: over a
  // 16 KiB budget, the stage refuses to open it rather than overshoot.
  Options o;
  o.ram_budget = 16 << 10;
  Result<Iterator> it = pack_sequences(Inputs({{1, 2}}), 4096).with_options(o).iterator();
  ASSERT_TRUE(it.ok());
  auto e = it->next();
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(e.status().message().find("ram_budget"), std::string::npos) << e.status().ToString();
  // With room for it, the row's bytes are charged while held, then released.
  Result<Iterator> ok = pack_sequences(Inputs({{1, 2}, {3}}), 16).iterator();
  ASSERT_TRUE(ok.ok());
  ASSERT_TRUE(ok->next().ok());
  EXPECT_TRUE(ok->next().ok());
  EXPECT_EQ(ok->stats().ram_used, 0);
}

// ---- bad arguments ------------------------------------------------------

void ExpectBad(const Dataset& ds, const std::string& what) {
  EXPECT_EQ(ds.status().code(), StatusCode::kInvalidArgument) << what;
  EXPECT_NE(ds.status().message().find(what), std::string::npos) << ds.status().ToString();
}

TEST(PackSequencesTest, BadArguments) {
  Dataset in = Inputs({{1}});
  ExpectBad(pack_sequences(in, 0), "length must be in [1, 2^40], got 0");
  ExpectBad(pack_sequences(in, -3), "got -3");
  ExpectBad(pack_sequences(in, 4, {.num_packing_bins = 0}), "num_packing_bins");
  ExpectBad(pack_sequences(in, 4, {.feature_lengths = {{"inputs", 0}}}), "feature_lengths");
  ExpectBad(pack_sequences(in, 4, {.feature_lengths = {{"nope", 3}}}), "'nope', which is not");
  ExpectBad(pack_sequences(in, 4, {.padding_values = {{"nope", 3}}}), "'nope', which is not");
  // Not 1-D, strings, unnamed components, clashing names.
  ExpectBad(pack_sequences(Dataset::from_tensors(
                               Element({Tensor::Zeros(DType::kInt64, Shape{2, 2}).value()}, {"x"})),
                           4),
            "1-D");
  ExpectBad(pack_sequences(
                Dataset::from_tensors(Element(
                    {Tensor::FromStrings(std::vector<std::string>{"a", "b"}).value()}, {"text"})),
                4),
            "string");
  ExpectBad(pack_sequences(Dataset::from_tensors(Element({Vec<int64_t>({1})})), 4), "no name");
  ExpectBad(pack_sequences(Dataset::from_tensors(Element({Vec<int64_t>({1}), Vec<int64_t>({1})},
                                                         {"x", "x_positions"})),
                           4),
            "clash");
  // An error carried by the input stays.
  Dataset broken = Dataset::FromError(Status::NotFound("no such file"));
  EXPECT_EQ(pack_sequences(broken, 4).status().code(), StatusCode::kNotFound);
}

TEST(PackSequencesTest, BadElementsAtRunTime) {
  // The spec is unknown (a map without output_spec): checked as elements flow.
  auto run = [](std::function<Element(int64_t)> make) {
    Dataset ds = Dataset::range(3).map([make](Element e) { return make(e[0].scalar<int64_t>()); });
    Result<Iterator> it = pack_sequences(ds, 4).iterator();
    EXPECT_TRUE(it.ok());
    Status s;
    while (s.ok()) {
      auto e = it->next();
      if (!e.ok())
        s = e.status();
      else if (!e->has_value())
        break;
    }
    return s;
  };
  Status s = run([](int64_t) {
    return Element({Tensor::Zeros(DType::kInt32, Shape{1, 2}).value()}, {"x"});
  });
  EXPECT_NE(s.message().find("expected a 1-D int32 tensor"), std::string::npos) << s.ToString();
  s = run(
      [](int64_t i) { return Element({i == 2 ? Vec<int32_t>({1}) : Vec<int64_t>({1})}, {"x"}); });
  EXPECT_NE(s.message().find("failed on element 2"), std::string::npos) << s.ToString();
  s = run([](int64_t i) { return Element({Vec<int64_t>({1})}, {i == 1 ? "y" : "x"}); });
  EXPECT_NE(s.message().find("other components"), std::string::npos) << s.ToString();
  s = run([](int64_t) {
    return Element({Tensor::FromStrings(std::vector<std::string>{"a"}).value()}, {"x"});
  });
  EXPECT_NE(s.message().find("string"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace sluice
