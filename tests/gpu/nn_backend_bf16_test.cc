// bfloat16 tensors (mixed precision, nn/policy.h) on the GPU backend agree
// with the CPU backend: casts and dropout masks bit for bit, products and
// convolutions (cuBLAS GemmEx, cuDNN's bfloat16 config, float32 staging) to
// one bfloat16 step,
// float32 outputs of bfloat16 operands to kSum; and a captured step that
// stages bfloat16 through float32 scratch replays exactly.
#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "nn_backend_test_util.h"

namespace sluice::gpu::testing {
namespace {

class Bf16Test : public NnBackendTest {
 protected:
  // Random bfloat16 tensors (the same values on both backends).
  Pair Bf16Random(const Shape& shape, uint32_t seed) {
    Pair f = BothRandom(shape, seed);
    Pair b = BothAlloc(shape, DType::kBFloat16);
    EXPECT_TRUE(gpu()->Cast(f.gpu, 1.0f, &b.gpu).ok());
    EXPECT_TRUE(cpu()->Cast(f.cpu, 1.0f, &b.cpu).ok());
    return b;
  }
};
SLUICE_NN_BACKEND_TEST_SUITE(Bf16Test);

TEST_P(Bf16Test, CastIsBitIdentical) {
  Tensor x = RandomHost(Shape{1000}, 1, -1e3f, 1e3f);
  Pair in = Both(x);
  Pair out = BothAlloc(Shape{1000}, DType::kBFloat16);
  SLUICE_ASSERT_OK(gpu()->Cast(in.gpu, 0.37f, &out.gpu));
  SLUICE_ASSERT_OK(cpu()->Cast(in.cpu, 0.37f, &out.cpu));
  ExpectAgree(out, {0, 0}, "Cast to bfloat16");
  // And back: widening is exact.
  Pair back = BothAlloc(Shape{1000});
  SLUICE_ASSERT_OK(gpu()->Cast(out.gpu, 1.0f, &back.gpu));
  SLUICE_ASSERT_OK(cpu()->Cast(out.cpu, 1.0f, &back.cpu));
  ExpectAgree(back, {0, 0}, "Cast from bfloat16");
}

TEST_P(Bf16Test, MatMulIntoFloat32AndBfloat16) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      Pair a = Bf16Random(ta ? Shape{64, 33} : Shape{33, 64}, 2);
      Pair b = Bf16Random(tb ? Shape{17, 64} : Shape{64, 17}, 3);
      const std::string what = std::string("MatMul ") + (ta ? "a^T" : "a") + (tb ? " b^T" : " b");
      Pair c32 = BothAlloc(Shape{33, 17});
      SLUICE_ASSERT_OK(gpu()->MatMul(a.gpu, ta, b.gpu, tb, 0.0f, &c32.gpu));
      SLUICE_ASSERT_OK(cpu()->MatMul(a.cpu, ta, b.cpu, tb, 0.0f, &c32.cpu));
      ExpectAgree(c32, kSum, what + " into float32");
      Pair c16 = BothAlloc(Shape{33, 17}, DType::kBFloat16);
      SLUICE_ASSERT_OK(gpu()->MatMul(a.gpu, ta, b.gpu, tb, 0.0f, &c16.gpu));
      SLUICE_ASSERT_OK(cpu()->MatMul(a.cpu, ta, b.cpu, tb, 0.0f, &c16.cpu));
      ExpectAgree(c16, kBf16, what + " into bfloat16");
      SLUICE_ASSERT_OK(gpu()->MatMul(a.gpu, ta, b.gpu, tb, 0.5f, &c16.gpu));
      SLUICE_ASSERT_OK(cpu()->MatMul(a.cpu, ta, b.cpu, tb, 0.5f, &c16.cpu));
      ExpectAgree(c16, kBf16, what + " with beta");
    }
  }
  // Shape errors are the CPU backend's, and write nothing.
  Pair a = Bf16Random(Shape{4, 5}, 4), b = Bf16Random(Shape{6, 3}, 5);
  Pair c = BothAlloc(Shape{4, 3});
  Status sg = gpu()->MatMul(a.gpu, false, b.gpu, false, 0.0f, &c.gpu);
  Status sc = cpu()->MatMul(a.cpu, false, b.cpu, false, 0.0f, &c.cpu);
  EXPECT_EQ(sg.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(sg.code(), sc.code());
}

TEST_P(Bf16Test, ConvolutionsAgree) {
  const nn::Window2D w{3, 3, 1, 1, nn::Padding::kSame};
  Pair x = Bf16Random(Shape{2, 9, 9, 4}, 6);
  Pair f = Bf16Random(Shape{3, 3, 4, 8}, 7);
  Pair bias = BothRandom(Shape{8}, 8);  // float32 bias into a bfloat16 y
  Pair y = BothAlloc(Shape{2, 9, 9, 8}, DType::kBFloat16);
  SLUICE_ASSERT_OK(gpu()->Conv2DForward(x.gpu, f.gpu, &bias.gpu, w, &y.gpu));
  SLUICE_ASSERT_OK(cpu()->Conv2DForward(x.cpu, f.cpu, &bias.cpu, w, &y.cpu));
  ExpectAgree(y, kBf16, "Conv2DForward");
  Pair dy = Bf16Random(Shape{2, 9, 9, 8}, 9);
  Pair dx = BothAlloc(Shape{2, 9, 9, 4}, DType::kBFloat16);
  SLUICE_ASSERT_OK(gpu()->Conv2DBackwardData(dy.gpu, f.gpu, w, &dx.gpu));
  SLUICE_ASSERT_OK(cpu()->Conv2DBackwardData(dy.cpu, f.cpu, w, &dx.cpu));
  ExpectAgree(dx, kBf16, "Conv2DBackwardData");
  Pair df = BothAlloc(Shape{3, 3, 4, 8});  // float32 gradients, as layers keep them
  Pair db = BothAlloc(Shape{8});
  SLUICE_ASSERT_OK(gpu()->Conv2DBackwardFilter(x.gpu, dy.gpu, w, &df.gpu, &db.gpu));
  SLUICE_ASSERT_OK(cpu()->Conv2DBackwardFilter(x.cpu, dy.cpu, w, &df.cpu, &db.cpu));
  // cuDNN's bfloat16 path writes the filter gradient through bfloat16 (as
  // TensorFlow's mixed_bfloat16 does); staging keeps it float32.
  ExpectAgree(df, kBf16, "Conv2DBackwardFilter");
  ExpectAgree(db, kSum, "Conv2DBackwardFilter bias");
}

TEST_P(Bf16Test, PoolingActivationsLossAndMask) {
  const nn::Window2D w{2, 2, 2, 2, nn::Padding::kValid};
  Pair x = Bf16Random(Shape{2, 6, 6, 3}, 10);
  Pair y = BothAlloc(Shape{2, 3, 3, 3}, DType::kBFloat16);
  nn::DeviceTensor wg, wc;
  SLUICE_ASSERT_OK(gpu()->Pool2DForward(nn::PoolMode::kMax, x.gpu, w, &y.gpu, &wg));
  SLUICE_ASSERT_OK(cpu()->Pool2DForward(nn::PoolMode::kMax, x.cpu, w, &y.cpu, &wc));
  ExpectAgree(y, {0, 0}, "max pool");
  Pair dy = Bf16Random(Shape{2, 3, 3, 3}, 11);
  Pair dx = BothAlloc(Shape{2, 6, 6, 3}, DType::kBFloat16);
  SLUICE_ASSERT_OK(gpu()->Pool2DBackward(nn::PoolMode::kMax, x.gpu, y.gpu, dy.gpu, wg, w, &dx.gpu));
  SLUICE_ASSERT_OK(cpu()->Pool2DBackward(nn::PoolMode::kMax, x.cpu, y.cpu, dy.cpu, wc, w, &dx.cpu));
  ExpectAgree(dx, {0, 0}, "max pool backward");

  Pair logits = Bf16Random(Shape{16, 10}, 12);
  Pair probs = BothAlloc(Shape{16, 10}, DType::kBFloat16);
  SLUICE_ASSERT_OK(gpu()->ActivationForward(nn::Activation::kSoftmax, logits.gpu, &probs.gpu));
  SLUICE_ASSERT_OK(cpu()->ActivationForward(nn::Activation::kSoftmax, logits.cpu, &probs.cpu));
  ExpectAgree(probs, kBf16, "softmax");
  std::vector<int32_t> ids(16);
  for (int i = 0; i < 16; ++i) ids[i] = (i * 3) % 10;
  Pair labels = Both(Tensor::FromVector<int32_t>(ids).value());
  Pair loss = BothAlloc(Shape{16});
  Pair dpred = BothAlloc(Shape{16, 10}, DType::kBFloat16);
  SLUICE_ASSERT_OK(
      gpu()->CrossEntropy(logits.gpu, labels.gpu, true, 0.0625f, &loss.gpu, &dpred.gpu));
  SLUICE_ASSERT_OK(
      cpu()->CrossEntropy(logits.cpu, labels.cpu, true, 0.0625f, &loss.cpu, &dpred.cpu));
  ExpectAgree(loss, kElem, "cross-entropy of bfloat16 logits");
  ExpectAgree(dpred, kBf16, "its bfloat16 gradient");
  SLUICE_ASSERT_OK_AND_ASSIGN(int64_t mg, gpu()->CountArgMaxMatches(probs.gpu, labels.gpu));
  SLUICE_ASSERT_OK_AND_ASSIGN(int64_t mc, cpu()->CountArgMaxMatches(probs.cpu, labels.cpu));
  EXPECT_EQ(mg, mc);

  Pair mask = BothAlloc(Shape{999}, DType::kBFloat16);
  SLUICE_ASSERT_OK(gpu()->DropoutMask(0.3f, 5, 7, &mask.gpu));
  SLUICE_ASSERT_OK(cpu()->DropoutMask(0.3f, 5, 7, &mask.cpu));
  ExpectAgree(mask, {0, 0}, "bfloat16 dropout mask");
}

// Staging allocates float32 scratch while recording: the recording must
// keep it, and replays must equal the eager calls.
TEST_P(Bf16Test, CapturedStagingReplaysExactly) {
  nn::Backend* b = gpu();
  if (!b->can_capture()) GTEST_SKIP() << b->name() << " cannot capture";
  Pair a = Bf16Random(Shape{24, 40}, 13), w = Bf16Random(Shape{40, 8}, 14);
  SLUICE_ASSERT_OK_AND_ASSIGN(nn::DeviceTensor c, b->Allocate(DType::kBFloat16, Shape{24, 8}));
  auto step = [&]() -> Status {
    SLUICE_RETURN_IF_ERROR(b->MatMul(a.gpu, false, w.gpu, false, 0.0f, &c));
    return b->ActivationForward(nn::Activation::kTanh, c, &c);
  };
  SLUICE_ASSERT_OK(step());
  const std::vector<float> eager = GpuValues(c);
  SLUICE_ASSERT_OK(b->Fill(0.0f, &c));
  SLUICE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<nn::CapturedWork> work, b->Capture(step));
  // Allocations after the capture must not reuse the recording's scratch.
  SLUICE_ASSERT_OK_AND_ASSIGN(nn::DeviceTensor other, b->Allocate(DType::kFloat32, Shape{24, 40}));
  SLUICE_ASSERT_OK(b->Fill(1e6f, &other));
  for (int r = 0; r < 3; ++r) {
    SLUICE_ASSERT_OK(work->Replay());
    EXPECT_EQ(GpuValues(c), eager) << "replay " << r;
  }
}

}  // namespace
}  // namespace sluice::gpu::testing
