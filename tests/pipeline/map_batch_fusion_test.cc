// Map-and-batch fusion: RowPlacer, batch joining adjacent rows without a
// copy, and fused pipelines giving exactly what unfused ones give.
#include <gtest/gtest.h>

#include <memory>
#include <numeric>
#include <optional>
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

// map writing its big row through ctx.AllocateOutput -> batch; records the
// address each element's row was written at.
Dataset AllocatedRows(int64_t n, int parallelism, int64_t batch, bool fusion,
                      std::shared_ptr<std::vector<const void*>> at = nullptr,
                      int64_t fail_at = -1) {
  return Dataset::range(n)
      .map(
          [at, fail_at](Element e, const MapContext& ctx) -> Result<Element> {
            const int64_t k = e[0].scalar<int64_t>();
            SLUICE_ASSIGN_OR_RETURN(Tensor row,
                                    ctx.AllocateOutput(0, DType::kFloat32, Shape{kRow}));
            auto f = row.flat<float>();
            for (size_t j = 0; j < f.size(); ++j) f[j] = static_cast<float>(k * 10000 + j);
            if (at) (*at)[static_cast<size_t>(k)] = row.raw_data();
            if (k == fail_at) return Status::DataLoss("bad element " + std::to_string(k));
            return Element({std::move(row), Tensor::Scalar<int64_t>(k)});
          },
          {.parallelism = parallelism})
      .batch(batch)
      .with_options({.seed = 3, .map_and_batch_fusion = fusion});
}

TEST(RowPlacerTest, ReserveHandsOutEachSlotOnce) {
  RowPlacer placer(4);
  std::optional<Tensor> a = placer.Reserve(5, 0, DType::kFloat32, Shape{kRow});
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->buffer_offset(), 1 * RowPlacer::kMinBytes);                           // row 5 % 4
  EXPECT_FALSE(placer.Reserve(5, 0, DType::kFloat32, Shape{kRow}).has_value());      // taken
  EXPECT_FALSE(placer.Reserve(6, 0, DType::kFloat32, Shape{kRow + 1}).has_value());  // foreign
  EXPECT_FALSE(placer.Reserve(6, 1, DType::kFloat32, Shape{4}).has_value());         // small
  EXPECT_FALSE(placer.Reserve(6, 1, DType::kString, Shape{4096}).has_value());
  EXPECT_FALSE(placer.Reserve(-1, 0, DType::kFloat32, Shape{kRow}).has_value());
  // An element that returns another tensor than its reserved row keeps it:
  // the slot is used, nothing is copied over the view handed out.
  Element other = BigRow(5);
  placer.Place(5, other);
  EXPECT_FALSE(other[0].buffer().SameAllocation(a->buffer()));
  std::optional<Tensor> b = placer.Reserve(4, 0, DType::kFloat32, Shape{kRow});
  ASSERT_TRUE(b.has_value());
  EXPECT_TRUE(b->buffer().SameAllocation(a->buffer()));
  EXPECT_EQ(b->buffer_offset(), 0u);
}

TEST(MapBatchFusionTest, AllocateOutputWritesRowsInTheBatchItself) {
  const std::vector<std::string> want = ReadAll(BigRows(12, 1, 4, false));
  for (int p : {1, 2, 4}) {
    auto at = std::make_shared<std::vector<const void*>>(12);
    SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, AllocatedRows(12, p, 4, true, at).iterator());
    std::vector<std::string> got;
    std::vector<Element> batches;
    while (auto e = it.next().value()) {
      got.push_back(e->DebugString(1000));
      batches.push_back(*e);
    }
    EXPECT_EQ(got, want) << "parallelism " << p;
    ASSERT_EQ(batches.size(), 3u);
    for (size_t b = 0; b < 3; ++b) {
      for (size_t j = 0; j < 4; ++j) {
        const auto* row =
            static_cast<const char*>(batches[b][0].raw_data()) + j * RowPlacer::kMinBytes;
        EXPECT_EQ(row, (*at)[b * 4 + j]) << "parallelism " << p << " batch " << b << " row " << j;
      }
    }
  }
  // Without fusion: fresh tensors, copied by batch; the same results.
  auto at = std::make_shared<std::vector<const void*>>(12);
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, AllocatedRows(12, 2, 4, false, at).iterator());
  SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<Element> first, it.next());
  EXPECT_NE(static_cast<const void*>((*first)[0].raw_data()), (*at)[0]);
  EXPECT_EQ(ReadAll(AllocatedRows(12, 2, 4, false)), want);
}

TEST(MapBatchFusionTest, AllocateOutputConformsAndSurvivesErrors) {
  RunConformance({.name = "map(AllocateOutput)-batch fused",
                  .make = [](int p) { return AllocatedRows(23, p, 4, true); },
                  .expected = ReadAll(BigRows(23, 1, 4, false))});
  // An element that wrote its row and then failed: skipped, rows shift,
  // batch copies them; the same as unfused.
  for (int p : {1, 3}) {
    EXPECT_EQ(ReadAll(AllocatedRows(19, p, 4, true, nullptr, 5).ignore_errors()),
              ReadAll(BigRows(19, p, 4, false, 5).ignore_errors()))
        << "parallelism " << p;
  }
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
