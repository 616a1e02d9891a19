// gpu::ConvAlgorithms: the convolution algorithms a GPU backend chose, one
// per operation, geometry and dtype, measured by cudnnFind on the first
// call (docs/gpu.md, "Convolution algorithms"); none on the host device.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "nn_backend_test_util.h"

namespace sluice::gpu::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class ConvAlgorithmsTest : public NnBackendTest {};
SLUICE_NN_BACKEND_TEST_SUITE(ConvAlgorithmsTest);

TEST_P(ConvAlgorithmsTest, ListsWhatTheConvolutionsRan) {
  // A geometry no other test uses, so this backend's list gains its three.
  const nn::Window2D w{3, 3, 1, 1, nn::Padding::kSame};
  Pair x = BothRandom(Shape{3, 11, 13, 5}, 1);
  Pair f = BothRandom(Shape{3, 3, 5, 7}, 2);
  Pair y = BothAlloc(Shape{3, 11, 13, 7});
  SLUICE_ASSERT_OK(gpu()->Conv2DForward(x.gpu, f.gpu, nullptr, w, &y.gpu));
  SLUICE_ASSERT_OK(cpu()->Conv2DForward(x.cpu, f.cpu, nullptr, w, &y.cpu));
  ExpectAgree(y, kSum, "Conv2DForward");
  Pair dx = BothAlloc(Shape{3, 11, 13, 5});
  SLUICE_ASSERT_OK(gpu()->Conv2DBackwardData(y.gpu, f.gpu, w, &dx.gpu));
  Pair df = BothAlloc(Shape{3, 3, 5, 7});
  SLUICE_ASSERT_OK(gpu()->Conv2DBackwardFilter(x.gpu, y.gpu, w, &df.gpu, nullptr));
  // Again: the cached choice, no second entry.
  SLUICE_ASSERT_OK(gpu()->Conv2DForward(x.gpu, f.gpu, nullptr, w, &y.gpu));
  SLUICE_ASSERT_OK(gpu()->Synchronize());

  SLUICE_ASSERT_OK_AND_ASSIGN(std::vector<ConvAlgorithm> algos, ConvAlgorithms(*gpu()));
  if (device_.is_cpu() || !GpuAvailability().ok()) {
    EXPECT_THAT(algos, ::testing::IsEmpty()) << "the host device runs sluice's own kernels";
    return;
  }
  std::vector<std::string> ops;
  for (const ConvAlgorithm& a : algos) {
    if (a.geometry != "x[3,11,13,5] filter 3x3x5->7 stride 1x1 pad 1,1") continue;
    ops.push_back(a.op);
    EXPECT_FALSE(a.bfloat16);
    EXPECT_FALSE(a.algorithm.empty());
    EXPECT_TRUE(a.measured) << a.ToString();
    EXPECT_GE(a.time_ms, 0.0) << a.ToString();
    if (a.deterministic) {
      EXPECT_THAT(a.ToString(), Not(HasSubstr("non-deterministic")));
    } else {
      EXPECT_THAT(a.ToString(), HasSubstr("non-deterministic"));
    }
    EXPECT_THAT(a.ToString(), HasSubstr(a.op + " x[3,11,13,5]"));
  }
  if (ops.empty()) GTEST_SKIP() << "cuDNN did not load: the convolutions ran sluice's kernels";
  EXPECT_THAT(ops, ::testing::UnorderedElementsAre("Conv2DForward", "Conv2DBackwardData",
                                                   "Conv2DBackwardFilter"));
}

TEST(ConvAlgorithmsOtherBackendTest, RefusesTheCpuBackend) {
  Result<std::vector<ConvAlgorithm>> r = ConvAlgorithms(*CpuNnBackend());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("not a GPU backend"));
}

}  // namespace
}  // namespace sluice::gpu::testing
