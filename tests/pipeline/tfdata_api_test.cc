// tf.data.experimental's assert_cardinality and at: conformance and tf.data
// semantics.
#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "conformance.h"
#include "sluice/pipeline/dataset.h"

namespace sluice {
namespace {

using testing::Int64Elements;
using testing::RunConformance;

std::vector<int64_t> Iota(int64_t n) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(i);
  return v;
}

// range(n) with the cardinality hidden (a filter that keeps everything).
Dataset UnknownCount(int64_t n, int p = 1) {
  return Dataset::range(n)
      .map([](Element e) { return e; }, {.parallelism = p})
      .filter([](const Element&) -> Result<bool> { return true; });
}

// The error reading `ds` to its end gives (OK if none).
Status ReadToEnd(const Dataset& ds, int64_t* count) {
  *count = 0;
  SLUICE_ASSIGN_OR_RETURN(Iterator it, ds.iterator());
  for (;;) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, it.next());
    if (!e) return Status::OK();
    ++*count;
  }
}

TEST(AssertCardinalityTest, Conformance) {
  RunConformance({.name = "assert_cardinality",
                  .make = [](int p) { return UnknownCount(20, p).assert_cardinality(20); },
                  .expected = Int64Elements(Iota(20)),
                  .make_failing = [] { return UnknownCount(5).assert_cardinality(7); },
                  .error_substring = "expected to contain 7 elements but contained only 5"});
}

TEST(AssertCardinalityTest, ReportsTheDeclaredCardinality) {
  EXPECT_EQ(UnknownCount(20).cardinality(), kUnknownCardinality);
  EXPECT_EQ(UnknownCount(20).assert_cardinality(20).cardinality(), 20);
  EXPECT_EQ(Dataset::range(3).repeat().assert_cardinality(kInfiniteCardinality).cardinality(),
            kInfiniteCardinality);
  EXPECT_EQ(UnknownCount(20).assert_cardinality(20).DebugString(),
            "range(0, 20, 1) -> map -> filter -> assert_cardinality(20)");
}

TEST(AssertCardinalityTest, TooFewAndTooManyAreFailedPrecondition) {
  int64_t n = 0;
  Status few = ReadToEnd(UnknownCount(5).assert_cardinality(7), &n);
  EXPECT_EQ(few.code(), StatusCode::kFailedPrecondition) << few.ToString();
  EXPECT_NE(few.message().find("expected to contain 7 elements but contained only 5 elements"),
            std::string::npos)
      << few.ToString();
  EXPECT_EQ(n, 5);
  Status many = ReadToEnd(UnknownCount(9).assert_cardinality(7), &n);
  EXPECT_EQ(many.code(), StatusCode::kFailedPrecondition) << many.ToString();
  EXPECT_NE(many.message().find("but contained at least 8 elements"), std::string::npos)
      << many.ToString();
  EXPECT_EQ(n, 7);  // the 8th is the error, never handed out
  // range(0) through a filter is known to be empty: the build error.
  Status none = ReadToEnd(UnknownCount(0).assert_cardinality(1), &n);
  EXPECT_NE(none.message().find("expected to contain 1 element but contained 0 elements"),
            std::string::npos)
      << none.ToString();
  Status inf = ReadToEnd(UnknownCount(2).assert_cardinality(kInfiniteCardinality), &n);
  EXPECT_NE(inf.message().find("an infinite number of elements but contained only 2"),
            std::string::npos)
      << inf.ToString();
}

TEST(AssertCardinalityTest, AKnownMismatchIsTheBuildError) {
  Dataset ds = Dataset::range(5).assert_cardinality(6);
  EXPECT_EQ(ds.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(ds.status().message().find("contained 5 elements (known when built)"),
            std::string::npos)
      << ds.status().ToString();
  EXPECT_EQ(Dataset::range(5).assert_cardinality(-7).status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Dataset::range(5).assert_cardinality(5).status().ok());
}

TEST(AssertCardinalityTest, KeepsRandomAccess) {
  Dataset ds = Dataset::range(10).assert_cardinality(10);
  EXPECT_TRUE(ds.random_access());
  Result<Element> e = ds.global_shuffle({.seed = 3}).at(4);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
}

TEST(AtTest, ReadsOneElementOfARandomAccessDataset) {
  Dataset ds = Dataset::range(100).map(
      [](Element e) { return Element({Tensor::Scalar<int64_t>(e[0].scalar<int64_t>() * 2)}); });
  ASSERT_TRUE(ds.random_access());
  for (int64_t i : {0, 1, 57, 99}) {
    Result<Element> e = ds.at(i);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    EXPECT_EQ((*e)[0].scalar<int64_t>(), 2 * i);
  }
  // global_shuffle's element i is at(i) of it: the permutation read alone.
  Dataset shuffled = Dataset::range(50).global_shuffle({.seed = 11});
  Result<Iterator> it = shuffled.iterator();
  ASSERT_TRUE(it.ok());
  for (int64_t i = 0; i < 50; ++i) {
    Result<std::optional<Element>> next = it->next();
    ASSERT_TRUE(next.ok() && next->has_value());
    Result<Element> direct = shuffled.at(i);
    ASSERT_TRUE(direct.ok()) << direct.status().ToString();
    EXPECT_EQ((*direct)[0].scalar<int64_t>(), (**next)[0].scalar<int64_t>()) << i;
  }
}

TEST(AtTest, ErrorsNameWhatIsWrong) {
  Result<Element> past = Dataset::range(10).at(10);
  EXPECT_EQ(past.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(past.status().message().find("index 10 is out of range for a dataset of 10"),
            std::string::npos);
  EXPECT_EQ(Dataset::range(10).at(-1).status().code(), StatusCode::kOutOfRange);
  Result<Element> seq = UnknownCount(10).at(2);
  EXPECT_EQ(seq.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(seq.status().message().find("does not allow random access"), std::string::npos);
}

}  // namespace
}  // namespace sluice
