// MakeBatchFeed's default feed (nn/batch_feed.h) on the CPU backend: it
// reads inside Next(), moves the selected tensors to the device, keeps
// the iterator reachable between calls, and returns the input's and the
// selector's errors in order.
#include "sluice/nn/batch_feed.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sluice/nn/backend.h"
#include "sluice/pipeline/dataset.h"
#include "test_util.h"

namespace sluice::nn {
namespace {

using ::testing::HasSubstr;

// Picks component "v"; its value 3 is refused.
Result<std::vector<Tensor>> PickV(const Element& e) {
  SLUICE_ASSIGN_OR_RETURN(Tensor v, e.get("v"));
  if (v.scalar<int64_t>() == 3) return Status::InvalidArgument("v = 3 is refused");
  return std::vector<Tensor>{v};
}

TEST(BatchFeedTest, DefaultFeedReadsInNextAndTheIteratorMaySaveBetweenCalls) {
  SLUICE_ASSERT_OK_AND_ASSIGN(Backend * cpu, GetBackend(Device::Cpu()));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor names, Tensor::FromStrings({"a", "b", "c", "d"}));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor values, Tensor::FromVector<int64_t>({0, 1, 2, 3}));
  Dataset ds = Dataset::from_tensor_slices({names, values}, {"name", "v"});
  SLUICE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<BatchFeed> feed,
                              MakeBatchFeed(*cpu, ds, PickV, /*depth=*/2));
  ASSERT_NE(feed->iterator(), nullptr);
  for (int64_t i = 0; i < 3; ++i) {
    SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<std::vector<DeviceTensor>> got, feed->Next());
    ASSERT_TRUE(got.has_value());
    ASSERT_EQ(got->size(), 1u);
    EXPECT_EQ((*got)[0].device(), Device::Cpu());
    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor host, cpu->ToHost((*got)[0]));
    EXPECT_EQ(host.scalar<int64_t>(), i);
    if (i == 1) {
      // Between calls the iterator is at the batch boundary: saving it and
      // restoring into a fresh one resumes with the element after this one.
      SLUICE_ASSERT_OK_AND_ASSIGN(std::string state, feed->iterator()->save());
      SLUICE_ASSERT_OK_AND_ASSIGN(Iterator fresh, ds.iterator());
      SLUICE_ASSERT_OK(fresh.restore(state));
      SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<Element> next, fresh.next());
      ASSERT_TRUE(next.has_value());
      EXPECT_EQ((*next)[1].scalar<int64_t>(), 2);
    }
  }
  Result<std::optional<std::vector<DeviceTensor>>> refused = feed->Next();
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("v = 3 is refused"));
  EXPECT_FALSE(feed->input_stats().stages.empty());
}

TEST(BatchFeedTest, EndRepeatsAndANegativeDepthIsRefused) {
  SLUICE_ASSERT_OK_AND_ASSIGN(Backend * cpu, GetBackend(Device::Cpu()));
  SLUICE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<BatchFeed> feed,
                              MakeBatchFeed(*cpu, Dataset::range(0), PickV, 0));
  for (int i = 0; i < 2; ++i) {
    SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<std::vector<DeviceTensor>> got, feed->Next());
    EXPECT_FALSE(got.has_value());
  }
  Result<std::unique_ptr<BatchFeed>> bad = MakeBatchFeed(*cpu, Dataset::range(3), PickV, -1);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("depth must be >= 0, got -1"));
}

}  // namespace
}  // namespace sluice::nn
