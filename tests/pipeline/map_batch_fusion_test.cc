// Map-and-batch fusion: RowPlacer, batch joining adjacent rows without a
// copy, and fused pipelines giving exactly what unfused ones give.
#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "conformance.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/pipeline/internal/row_placer.h"
#include "sluice/pipeline/internal/stack.h"
#include "test_util.h"

namespace sluice {
namespace {

using pipeline_internal::RowPlacer;
using pipeline_internal::StackElements;
using testing::ReadAll;
using testing::RunConformance;

// Floats per big row: exactly RowPlacer::kMinBytes.
constexpr int64_t kRow = RowPlacer::kMinBytes / sizeof(float);

// A big row {k * 10000 + j} and a small label k.
Element BigRow(int64_t k, int64_t floats = kRow) {
  std::vector<float> v(static_cast<size_t>(floats));
  for (size_t j = 0; j < v.size(); ++j) v[j] = static_cast<float>(k * 10000 + j);
  return Element({Tensor::FromVector<float>(v).value(), Tensor::Scalar<int64_t>(k)});
}

std::vector<float> Floats(const Tensor& t) {
  auto f = t.flat<float>();
  return {f.begin(), f.end()};
}

TEST(RowPlacerTest, PlacesRowsBackToBackAndBatchJoinsThemWithoutACopy) {
  RowPlacer placer(4);
  std::vector<Element> rows;
  for (int64_t k = 0; k < 4; ++k) rows.push_back(BigRow(k));
  for (int64_t k : {3, 1, 0, 2}) placer.Place(k, rows[static_cast<size_t>(k)]);
  EXPECT_EQ(placer.open(), 0u);  // all four seen: let go
  const size_t bytes = rows[0][0].byte_size();
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_TRUE(rows[k][0].buffer().SameAllocation(rows[0][0].buffer()));
    EXPECT_EQ(rows[k][0].buffer_offset(), k * bytes);
    EXPECT_EQ(Floats(rows[k][0]), Floats(BigRow(static_cast<int64_t>(k))[0]));
  }
  // The label is small: left in its own buffer.
  EXPECT_FALSE(rows[1][1].buffer().SameAllocation(rows[0][1].buffer()));

  SLUICE_ASSERT_OK_AND_ASSIGN(Element batch, StackElements(rows, "batch", false));
  EXPECT_TRUE(batch[0].buffer().SameAllocation(rows[0][0].buffer()));  // no copy
  EXPECT_EQ(batch[0].shape().ToString(), "[4," + std::to_string(kRow) + "]");
  std::vector<float> want;
  for (int64_t k = 0; k < 4; ++k) {
    const std::vector<float> r = Floats(BigRow(k)[0]);
    want.insert(want.end(), r.begin(), r.end());
  }
  EXPECT_EQ(Floats(batch[0]), want);
  EXPECT_EQ(batch[1].DebugString(), "int64[4] {0, 1, 2, 3}");

  // A partial batch (the input ended) is a view of the first rows.
  std::vector<Element> first_two = {rows[0], rows[1]};
  SLUICE_ASSERT_OK_AND_ASSIGN(Element part, StackElements(first_two, "batch", false));
  EXPECT_TRUE(part[0].buffer().SameAllocation(rows[0][0].buffer()));
  EXPECT_EQ(part[0].shape().dim(0), 2);
}

TEST(RowPlacerTest, RowsOutOfPlaceAreCopiedAsBefore) {
  RowPlacer placer(4);
  std::vector<Element> rows;
  for (int64_t k = 0; k < 4; ++k) rows.push_back(BigRow(k));
  for (int64_t k = 0; k < 4; ++k) placer.Place(k, rows[static_cast<size_t>(k)]);
  // Shifted by one (as after an error in place of an element): copied.
  std::vector<Element> shifted = {rows[1], rows[2], rows[3], BigRow(4)};
  SLUICE_ASSERT_OK_AND_ASSIGN(Element batch, StackElements(shifted, "batch", false));
  EXPECT_FALSE(batch[0].buffer().SameAllocation(rows[0][0].buffer()));
  EXPECT_EQ(Floats(batch[0]).front(), 10000.0f);
  EXPECT_EQ(Floats(batch[0]).back(), static_cast<float>(40000 + kRow - 1));
  // Out of order: copied, in the rows' order.
  std::vector<Element> swapped = {rows[1], rows[0], rows[2], rows[3]};
  SLUICE_ASSERT_OK_AND_ASSIGN(Element b2, StackElements(swapped, "batch", false));
  EXPECT_FALSE(b2[0].buffer().SameAllocation(rows[0][0].buffer()));
  EXPECT_EQ(Floats(b2[0])[0], 10000.0f);
  EXPECT_EQ(Floats(b2[0])[static_cast<size_t>(kRow)], 0.0f);
}

TEST(RowPlacerTest, NeverWritesASlotTwiceOrAForeignShape) {
  RowPlacer placer(4);
  Element a = BigRow(0), again = BigRow(7), wide = BigRow(2, 2 * kRow);
  placer.Place(0, a);
  const Buffer batch0 = a[0].buffer();
  placer.Place(0, again);  // index 0 computed twice: stays in its own buffer
  EXPECT_FALSE(again[0].buffer().SameAllocation(batch0));
  EXPECT_EQ(Floats(a[0])[0], 0.0f);  // the first view is untouched
  EXPECT_EQ(Floats(again[0])[0], 70000.0f);
  placer.Place(2, wide);  // another shape than row 0's: not placed
  EXPECT_FALSE(wide[0].buffer().SameAllocation(batch0));
  EXPECT_EQ(wide[0].shape().dim(0), 2 * kRow);
  // A batch of more than kMaxBatchBytes is left to batch's copy.
  RowPlacer huge(int64_t{1} << 20);  // 4 GiB of 4 KiB rows
  Element h = BigRow(0);
  const Buffer own = h[0].buffer();
  huge.Place(0, h);
  EXPECT_TRUE(h[0].buffer().SameAllocation(own));
}

TEST(RowPlacerTest, FailedElementsCountAndStaleBatchesAreLetGo) {
  RowPlacer placer(3);
  Element e0 = BigRow(0), e2 = BigRow(2);
  placer.Place(0, e0);
  placer.Skip(1);  // its function failed
  EXPECT_EQ(placer.open(), 1u);
  placer.Place(2, e2);
  EXPECT_EQ(placer.open(), 0u);
  // Batches whose other rows never come: at most kMaxOpen stay open.
  for (int64_t b = 0; b < static_cast<int64_t>(RowPlacer::kMaxOpen) + 5; ++b) {
    Element e = BigRow(b);
    placer.Place(b * 3 + 100, e);
  }
  EXPECT_EQ(placer.open(), RowPlacer::kMaxOpen);
  // Small elements take the lock-free path and place nothing.
  RowPlacer small(2);
  Element s = Element({Tensor::Scalar<int64_t>(1)});
  small.Place(0, s);
  EXPECT_EQ(small.open(), 0u);
}

// map(big rows) -> batch, with fusion on or off.
Dataset BigRows(int64_t n, int parallelism, int64_t batch, bool fusion, int64_t fail_at = -1) {
  return Dataset::range(n)
      .map(
          [fail_at](Element e) -> Result<Element> {
            const int64_t k = e[0].scalar<int64_t>();
            if (k == fail_at) return Status::DataLoss("bad element " + std::to_string(k));
            return BigRow(k);
          },
          {.parallelism = parallelism})
      .batch(batch)
      .with_options({.seed = 3, .map_and_batch_fusion = fusion});
}

TEST(MapBatchFusionTest, ConformanceAgainstTheUnfusedPipeline) {
  const std::vector<std::string> unfused = ReadAll(BigRows(23, 1, 4, false));
  ASSERT_EQ(unfused.size(), 6u);
  RunConformance({.name = "map-batch fused",
                  .make = [](int p) { return BigRows(23, p, 4, true); },
                  .expected = unfused});
  RunConformance({.name = "map(autotune)-batch fused",
                  .make = [](int) { return BigRows(23, kAutotune, 5, true); },
                  .expected = ReadAll(BigRows(23, 1, 5, false))});
}

TEST(MapBatchFusionTest, AnErrorShiftsTheRowsAndResultsStayTheSame) {
  // batch drops row 4 with the error of row 5, so the next batches hold
  // rows 6-9, 10-13, 14-17 and 18: none lines up with its slots.
  for (int p : {1, 2, 4}) {
    const std::vector<std::string> fused = ReadAll(BigRows(19, p, 4, true, 5).ignore_errors());
    const std::vector<std::string> unfused = ReadAll(BigRows(19, p, 4, false, 5).ignore_errors());
    EXPECT_EQ(fused, unfused) << "parallelism " << p;
    ASSERT_EQ(fused.size(), 5u);
    EXPECT_NE(fused[1].find("int64[4] {6, 7, 8, 9}"), std::string::npos) << fused[1];
  }
  // Without ignore_errors the error ends the iteration, as unfused.
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator failing, BigRows(19, 2, 4, true, 5).iterator());
  SLUICE_ASSERT_OK(failing.next().status());
  SLUICE_EXPECT_ERROR(failing.next().status(), StatusCode::kDataLoss, "bad element 5");
  // Unordered maps are not fused; their batches still hold every row once.
  Dataset unordered =
      Dataset::range(40)
          .map([](Element e) -> Result<Element> { return BigRow(e[0].scalar<int64_t>()); },
               {.parallelism = 4, .deterministic = false})
          .batch(8);
  int64_t sum = 0, batches = 0;
  Iterator it = unordered.iterator().value();
  while (auto e = it.next().value()) {
    ++batches;
    auto labels = (*e)[1].flat<int64_t>();
    for (size_t j = 0; j < labels.size(); ++j) {
      sum += labels[j];
      EXPECT_EQ((*e)[0].flat<float>()[j * kRow], static_cast<float>(labels[j] * 10000));
    }
  }
  EXPECT_EQ(batches, 5);
  EXPECT_EQ(sum, 40 * 39 / 2);
}

TEST(MapBatchFusionTest, OptionsBetweenMapAndBatchKeepItAndSayWhatIsSet) {
  // with_options passes the fusion through (map -> with_options -> batch),
  // and its description lists the fields it sets.
  Dataset ds = Dataset::range(9)
                   .map([](Element e) -> Result<Element> { return BigRow(e[0].scalar<int64_t>()); },
                        {.parallelism = 2})
                   .with_options({.seed = 5, .map_and_batch_fusion = true})
                   .batch(3);
  EXPECT_NE(ds.DebugString().find("options(seed=5, map_and_batch_fusion=true) -> batch(3)"),
            std::string::npos)
      << ds.DebugString();
  EXPECT_EQ(ReadAll(ds), ReadAll(BigRows(9, 1, 3, false)));
}

TEST(MapBatchFusionTest, MismatchedShapesAreStillNamed) {
  Dataset ds = Dataset::range(4)
                   .map([](Element e) -> Result<Element> {
                     const int64_t k = e[0].scalar<int64_t>();
                     return BigRow(k, k == 1 ? 2 * kRow : kRow);
                   })
                   .batch(2);
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
  SLUICE_EXPECT_ERROR(it.next().status(), StatusCode::kInvalidArgument,
                      "element 0 of the batch is float32[1024] but element 1 is float32[2048]");
}

}  // namespace
}  // namespace sluice
