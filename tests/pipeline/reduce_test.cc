// Dataset::reduce (issue 37 item 14): folds in order, empty datasets return
// the initial state, the first error (a stage's or the function's) ends it
// naming where, and what cannot end or does not fit is refused up front.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "sluice/pipeline/dataset.h"
#include "test_util.h"

namespace sluice {
namespace {

Element Int(int64_t v) { return Element({Tensor::Scalar<int64_t>(v)}); }
int64_t IntOf(const Element& e, size_t i = 0) { return e[i].scalar<int64_t>(); }

Result<Element> Sum(Element state, Element e) { return Int(IntOf(state) + IntOf(e)); }

TEST(ReduceTest, Sum) {
  SLUICE_ASSERT_OK_AND_ASSIGN(Element r, Dataset::range(101).reduce(Int(0), Sum));
  EXPECT_EQ(IntOf(r), 5050);
  // The same through parallel stages (order kept, every element once).
  SLUICE_ASSERT_OK_AND_ASSIGN(Element p, Dataset::range(1000)
                                             .map([](Element e) { return e; }, {.parallelism = 4})
                                             .prefetch(8)
                                             .reduce(Int(7), Sum));
  EXPECT_EQ(IntOf(p), 7 + 999 * 1000 / 2);
}

TEST(ReduceTest, Count) {
  const Dataset evens =
      Dataset::range(100).filter([](const Element& e) { return IntOf(e) % 2 == 0; });
  SLUICE_ASSERT_OK_AND_ASSIGN(Element n,
                              evens.reduce(Int(0), [](Element s, Element) -> Result<Element> {
                                return Int(IntOf(s) + 1);
                              }));
  EXPECT_EQ(IntOf(n), 50);
}

TEST(ReduceTest, FoldsInOrderWithAStateOfSeveralComponents) {
  // (count, digits as text): the text shows the order.
  Element initial({Tensor::Scalar<int64_t>(0), Tensor::StringScalar("")});
  SLUICE_ASSERT_OK_AND_ASSIGN(
      Element r, Dataset::range(5).reduce(initial, [](Element s, Element e) -> Result<Element> {
        return Element({Tensor::Scalar<int64_t>(IntOf(s) + 1),
                        Tensor::StringScalar(std::string(s[1].scalar<std::string_view>()) +
                                             std::to_string(IntOf(e)))});
      }));
  EXPECT_EQ(IntOf(r), 5);
  EXPECT_EQ(r[1].scalar<std::string_view>(), "01234");
}

TEST(ReduceTest, EmptyDatasetReturnsTheInitialState) {
  int calls = 0;
  Element initial({Tensor::Scalar<int64_t>(42), Tensor::StringScalar("start")});
  SLUICE_ASSERT_OK_AND_ASSIGN(
      Element r, Dataset::range(0).reduce(initial, [&](Element s, Element) -> Result<Element> {
        ++calls;
        return s;
      }));
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(r.DebugString(100), initial.DebugString(100));
  SLUICE_ASSERT_OK_AND_ASSIGN(
      Element f,
      Dataset::range(10).filter([](const Element&) { return false; }).reduce(Int(-1), Sum));
  EXPECT_EQ(IntOf(f), -1);
}

TEST(ReduceTest, StageErrorEndsItNamingTheStage) {
  auto pulled = std::make_shared<std::atomic<int>>(0);
  const Dataset ds = Dataset::range(10).map(
      [pulled](Element e) -> Result<Element> {
        pulled->fetch_add(1);
        if (IntOf(e) == 3) return Status::DataLoss("bad element");
        return e;
      },
      {.name = "boom"});
  int calls = 0;
  const Result<Element> r = ds.reduce(Int(0), [&](Element s, Element e) {
    ++calls;
    return Sum(std::move(s), std::move(e));
  });
  SLUICE_EXPECT_ERROR(r, StatusCode::kDataLoss, "stage 'boom' failed on element 3");
  SLUICE_EXPECT_ERROR(r, StatusCode::kDataLoss, "bad element");
  EXPECT_EQ(calls, 3);  // elements 0, 1, 2
  EXPECT_EQ(pulled->load(), 4);
}

TEST(ReduceTest, FunctionErrorEndsItNamingTheElement) {
  auto pulled = std::make_shared<std::atomic<int>>(0);
  const Dataset ds = Dataset::range(1000).map([pulled](Element e) {
    pulled->fetch_add(1);
    return e;
  });
  int calls = 0;
  const Result<Element> r = ds.reduce(Int(0), [&](Element s, Element e) -> Result<Element> {
    ++calls;
    if (IntOf(e) == 4) return Status::OutOfRange("sum too large");
    return Sum(std::move(s), std::move(e));
  });
  SLUICE_EXPECT_ERROR(r, StatusCode::kOutOfRange,
                      "reduce: the function failed on element 4: sum too large");
  EXPECT_EQ(calls, 5);
  EXPECT_EQ(pulled->load(), 5);  // nothing read past the failing element
}

TEST(ReduceTest, StateMustKeepTheInitialStructure) {
  SLUICE_EXPECT_ERROR(
      Dataset::range(5).reduce(Int(0),
                               [](Element, Element e) -> Result<Element> {
                                 return Element({e[0], e[0]});
                               }),
      StatusCode::kInvalidArgument,
      "reduce: the function returned a state of another structure on element 0: 2 components, "
      "the initial state 1");
  SLUICE_EXPECT_ERROR(Dataset::range(5).reduce(Int(0),
                                               [](Element s, Element e) -> Result<Element> {
                                                 if (IntOf(e) < 2) return s;
                                                 return Element({Tensor::Scalar<float>(1.0f)});
                                               }),
                      StatusCode::kInvalidArgument,
                      "on element 2: component 0 float32, the initial state's int64");
  // Shapes may change: a growing vector.
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor empty, Tensor::FromVector(std::vector<int64_t>{}));
  SLUICE_ASSERT_OK_AND_ASSIGN(
      Element v,
      Dataset::range(3).reduce(Element({empty}), [](Element s, Element e) -> Result<Element> {
        std::vector<int64_t> values(s[0].flat<int64_t>().begin(), s[0].flat<int64_t>().end());
        values.push_back(IntOf(e));
        SLUICE_ASSIGN_OR_RETURN(Tensor t, Tensor::FromVector(values));
        return Element({t});
      }));
  EXPECT_EQ(v[0].shape().dim(0), 3);
}

TEST(ReduceTest, RefusesWhatCannotWork) {
  SLUICE_EXPECT_ERROR(Dataset::range(3).reduce(Int(0), nullptr), StatusCode::kInvalidArgument,
                      "reduce: the function is empty");
  // An infinite dataset would never return: refused at once.
  SLUICE_EXPECT_ERROR(Dataset::range(3).repeat().reduce(Int(0), Sum), StatusCode::kInvalidArgument,
                      "is infinite");
  // A dataset that failed to build returns its error.
  SLUICE_EXPECT_ERROR(Dataset::range(3).batch(0).reduce(Int(0), Sum), StatusCode::kInvalidArgument,
                      "batch");
}

}  // namespace
}  // namespace sluice
