// bfloat16 tensors (mixed precision, nn/policy.h) on the GPU backend agree
// with the CPU backend: casts and dropout masks bit for bit, products and
// convolutions (cuBLAS GemmEx, cuDNN's bfloat16 config, float32 staging) to
// one bfloat16 step (a convolution's float32 bias: see ConvolutionsAgree), float32 outputs of
// bfloat16 operands to kSum; the activations (softmax too), BiasAdd, BiasGrad, pooling, Fill,
// Axpby, Multiply, dropout masks and the losses on bfloat16 tensors as they are, bit for bit as
// float32 staging on the same backend; and a captured step that stages bfloat16 through float32
// scratch replays exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <vector>

#include "nn_backend_test_util.h"
#include "sluice/nn/kit/float32_staging.h"

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
  Pair y0 = BothAlloc(Shape{2, 9, 9, 8}, DType::kBFloat16);
  SLUICE_ASSERT_OK(gpu()->Conv2DForward(x.gpu, f.gpu, nullptr, w, &y0.gpu));
  SLUICE_ASSERT_OK(cpu()->Conv2DForward(x.cpu, f.cpu, nullptr, w, &y0.cpu));
  ExpectAgree(y0, kBf16, "Conv2DForward without bias");
  // With a float32 bias the two backends round differently, by design:
  // cuDNN's bfloat16 config writes y in bfloat16, so on a GPU the sum is
  // rounded to bfloat16 before BiasAdd adds the bias and rounds again (the
  // order of TensorFlow's Conv2D then BiasAdd); float32 staging adds the
  // bias to the float32 sum and rounds once. The first rounding moves y by
  // up to half a bfloat16 step of the sum without the bias (2^-8 of its
  // magnitude: 8 significant bits), which is several steps of y where the
  // bias cancels most of the sum (on an H200: -0.1328125 against
  // -0.13671875, the sum -1.0703125).
  Pair y = BothAlloc(Shape{2, 9, 9, 8}, DType::kBFloat16);
  SLUICE_ASSERT_OK(gpu()->Conv2DForward(x.gpu, f.gpu, &bias.gpu, w, &y.gpu));
  SLUICE_ASSERT_OK(cpu()->Conv2DForward(x.cpu, f.cpu, &bias.cpu, w, &y.cpu));
  const std::vector<float> got = GpuValues(y.gpu), want = CpuValues(y.cpu);
  const std::vector<float> sum = CpuValues(y0.cpu);
  for (size_t i = 0; i < want.size(); ++i) {
    const double tol = kBf16.atol + kBf16.rtol * std::abs(want[i]) + 0x1p-8 * std::abs(sum[i]);
    ASSERT_LE(std::abs(got[i] - want[i]), tol)
        << "Conv2DForward with bias: element " << i << " is " << got[i] << " on the GPU backend, "
        << want[i] << " on the CPU backend (" << sum[i] << " without the bias)";
  }
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
  DeviceTensor wg, wc;
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

// Activations, BiasAdd and BiasGrad read and write bfloat16 tensors in one
// pass: their bits must be those of float32 staging (widen, run the float32
// kernel, round once) on the same backend, for every mix of float32 and
// bfloat16 operands.
TEST_P(Bf16Test, NativeBf16KernelsEqualFloat32StagingBitForBit) {
  namespace staged = nn::kit::in_float32;
  nn::Backend& b = *gpu();
  const Shape shape{3, 7, 11};
  // Values whose float32 results need rounding into bfloat16.
  auto input = [&](DType dtype, uint32_t seed, const Shape& of) {
    DeviceTensor f = b.ToDevice(RandomHost(of, seed, -4.0f, 4.0f)).value();
    if (dtype == DType::kFloat32) return f;
    DeviceTensor t = b.Allocate(dtype, of).value();
    EXPECT_TRUE(b.Cast(f, 1.0f, &t).ok());
    return t;
  };
  auto same_bits = [&](const DeviceTensor& native, const DeviceTensor& staged,
                       const std::string& what) {
    const std::vector<float> got = GpuValues(native), want = GpuValues(staged);
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < got.size(); ++i) {
      if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0) {
        ADD_FAILURE() << what << ": element " << i << " is " << got[i] << " native, " << want[i]
                      << " through float32 staging";
        return;
      }
    }
  };
  const DType kF = DType::kFloat32, kB = DType::kBFloat16;
  const std::vector<std::pair<DType, DType>> mixes = {{kB, kB}, {kB, kF}, {kF, kB}};
  for (nn::Activation f : {nn::Activation::kLinear, nn::Activation::kRelu, nn::Activation::kSigmoid,
                           nn::Activation::kTanh, nn::Activation::kSoftmax}) {
    for (const auto& [in, out] : mixes) {
      const std::string what = std::string(nn::ActivationName(f)) + " " +
                               std::string(DTypeName(in)) + " -> " + std::string(DTypeName(out));
      DeviceTensor x = input(in, 21, shape);
      DeviceTensor y = b.Allocate(out, shape).value(), ref = b.Allocate(out, shape).value();
      SLUICE_ASSERT_OK(b.ActivationForward(f, x, &y));
      SLUICE_ASSERT_OK(staged::ActivationForward(b, f, x, &ref));
      same_bits(y, ref, what + " forward");
      DeviceTensor dy = input(in, 22, shape);
      DeviceTensor dx = b.Allocate(out, shape).value(), dref = b.Allocate(out, shape).value();
      SLUICE_ASSERT_OK(b.ActivationBackward(f, y, dy, &dx));
      SLUICE_ASSERT_OK(staged::ActivationBackward(b, f, y, dy, &dref));
      same_bits(dx, dref, what + " backward");
    }
  }
  // In place, as layers call relu on a convolution's output.
  DeviceTensor x = input(kB, 23, shape), x_ref = b.Allocate(kB, shape).value();
  SLUICE_ASSERT_OK(staged::ActivationForward(b, nn::Activation::kSigmoid, x, &x_ref));
  SLUICE_ASSERT_OK(b.ActivationForward(nn::Activation::kSigmoid, x, &x));
  same_bits(x, x_ref, "sigmoid in place");

  const Shape bias_shape{11};
  for (const auto& [bias_dtype, y_dtype] : mixes) {
    const std::string what = std::string("BiasAdd ") + std::string(DTypeName(bias_dtype)) +
                             " into " + std::string(DTypeName(y_dtype));
    DeviceTensor bias = input(bias_dtype, 24, bias_shape);
    DeviceTensor y = input(y_dtype, 25, shape), y_ref = input(y_dtype, 25, shape);
    SLUICE_ASSERT_OK(b.BiasAdd(bias, &y));
    SLUICE_ASSERT_OK(staged::BiasAdd(b, bias, &y_ref));
    same_bits(y, y_ref, what);
  }
  for (const auto& [dy_dtype, db_dtype] : mixes) {
    for (float beta : {0.0f, 0.5f}) {
      const std::string what = std::string("BiasGrad ") + std::string(DTypeName(dy_dtype)) +
                               " into " + std::string(DTypeName(db_dtype)) +
                               (beta != 0.0f ? " with beta" : "");
      DeviceTensor dy = input(dy_dtype, 26, shape);
      // beta reads db: the same values in both.
      DeviceTensor db = input(db_dtype, 27, bias_shape);
      DeviceTensor db_ref = input(db_dtype, 27, bias_shape);
      SLUICE_ASSERT_OK(b.BiasGrad(dy, beta, &db));
      SLUICE_ASSERT_OK(staged::BiasGrad(b, dy, beta, &db_ref));
      same_bits(db, db_ref, what);
    }
  }
  // Pooling, max and average, over windows that padding cuts short.
  const Shape image{2, 7, 9, 3};
  for (const nn::Window2D& w : {nn::Window2D{3, 3, 2, 2, nn::Padding::kSame},
                                nn::Window2D{2, 2, 2, 2, nn::Padding::kValid}}) {
    const Shape pooled = nn::Pool2DOutputShape(image, w).value();
    for (nn::PoolMode mode : {nn::PoolMode::kMax, nn::PoolMode::kAverage}) {
      for (const auto& [in, out] : mixes) {
        const std::string what = std::string(mode == nn::PoolMode::kMax ? "max" : "average") +
                                 " pool " + std::string(DTypeName(in)) + " -> " +
                                 std::string(DTypeName(out));
        DeviceTensor x = input(in, 28, image);
        DeviceTensor y = b.Allocate(out, pooled).value(), y_ref = b.Allocate(out, pooled).value();
        DeviceTensor ws, ws_ref;
        SLUICE_ASSERT_OK(b.Pool2DForward(mode, x, w, &y, &ws));
        SLUICE_ASSERT_OK(staged::Pool2DForward(b, mode, x, w, &y_ref, &ws_ref));
        same_bits(y, y_ref, what);
        DeviceTensor dy = input(in, 29, pooled);
        DeviceTensor dx = b.Allocate(out, image).value(), dx_ref = b.Allocate(out, image).value();
        SLUICE_ASSERT_OK(b.Pool2DBackward(mode, x, y, dy, ws, w, &dx));
        SLUICE_ASSERT_OK(staged::Pool2DBackward(b, mode, x, y_ref, dy, ws_ref, w, &dx_ref));
        same_bits(dx, dx_ref, what + " backward");
      }
    }
  }

  // Fill, Axpby, Multiply and the dropout masks.
  for (const auto& [in, out] : mixes) {
    const std::string what = std::string(DTypeName(in)) + " -> " + std::string(DTypeName(out));
    DeviceTensor y = b.Allocate(out, shape).value(), y_ref = b.Allocate(out, shape).value();
    SLUICE_ASSERT_OK(b.Fill(0.1f, &y));
    SLUICE_ASSERT_OK(staged::Fill(b, 0.1f, &y_ref));
    same_bits(y, y_ref, "Fill " + what);
    DeviceTensor x = input(in, 30, shape);
    for (float beta : {0.0f, 0.7f}) {
      DeviceTensor z = input(out, 31, shape), z_ref = input(out, 31, shape);
      SLUICE_ASSERT_OK(b.Axpby(0.3f, x, beta, &z));
      SLUICE_ASSERT_OK(staged::Axpby(b, 0.3f, x, beta, &z_ref));
      same_bits(z, z_ref, "Axpby " + what + (beta != 0.0f ? " with beta" : ""));
    }
    DeviceTensor m = input(kB, 32, shape);  // a dropout mask is bfloat16 under the policy
    SLUICE_ASSERT_OK(b.Multiply(x, m, &y));
    SLUICE_ASSERT_OK(staged::Multiply(b, x, m, &y_ref));
    same_bits(y, y_ref, "Multiply " + what);
  }
  DeviceTensor mask = b.Allocate(kB, shape).value(), mask_ref = b.Allocate(kB, shape).value();
  SLUICE_ASSERT_OK(b.DropoutMask(0.3f, 9, 4, &mask));
  SLUICE_ASSERT_OK(staged::DropoutMask(b, 0.3f, 9, 4, nullptr, &mask_ref));
  same_bits(mask, mask_ref, "DropoutMask into bfloat16");
  DeviceTensor counter = b.ToDevice(Tensor::Scalar<int64_t>(4)).value();
  SLUICE_ASSERT_OK(b.DropoutMaskFromCounter(0.3f, 9, counter, &mask));
  same_bits(mask, mask_ref, "DropoutMaskFromCounter into bfloat16");

  // The losses: pred, dense labels, loss and dpred in every mix.
  const Shape logits_shape{6, 5};
  const std::vector<int32_t> ids = {0, 4, 2, 2, 1, 3};
  const DeviceTensor id_labels = b.ToDevice(Tensor::FromVector<int32_t>(ids).value()).value();
  for (const auto& [in, out] : mixes) {
    for (bool from_logits : {true, false}) {
      for (DType labels_dtype : {DType::kInt32, kF, kB}) {
        const std::string what = std::string("CrossEntropy ") + std::string(DTypeName(in)) +
                                 " -> " + std::string(DTypeName(out)) +
                                 (from_logits ? " logits" : " probabilities") + ", labels " +
                                 std::string(DTypeName(labels_dtype));
        DeviceTensor pred = input(in, 33, logits_shape);
        if (!from_logits) {  // probabilities must be positive: shift the values up
          DeviceTensor shifted = b.Allocate(in, logits_shape).value();
          SLUICE_ASSERT_OK(b.Fill(4.5f, &shifted));
          SLUICE_ASSERT_OK(b.Axpby(1.0f, pred, 1.0f, &shifted));
          pred = shifted;
        }
        const DeviceTensor labels =
            labels_dtype == DType::kInt32 ? id_labels : input(labels_dtype, 34, logits_shape);
        DeviceTensor loss = b.Allocate(out, Shape{6}).value();
        DeviceTensor loss_ref = b.Allocate(out, Shape{6}).value();
        DeviceTensor dpred = b.Allocate(out, logits_shape).value();
        DeviceTensor dpred_ref = b.Allocate(out, logits_shape).value();
        SLUICE_ASSERT_OK(b.CrossEntropy(pred, labels, from_logits, 0.25f, &loss, &dpred));
        SLUICE_ASSERT_OK(
            staged::CrossEntropy(b, pred, labels, from_logits, 0.25f, &loss_ref, &dpred_ref));
        same_bits(loss, loss_ref, what + " loss");
        same_bits(dpred, dpred_ref, what + " dpred");
      }
    }
    const std::string what = std::string("MeanSquaredError ") + std::string(DTypeName(in)) +
                             " -> " + std::string(DTypeName(out));
    DeviceTensor pred = input(in, 35, logits_shape), target = input(out, 36, logits_shape);
    DeviceTensor loss = b.Allocate(out, Shape{6}).value();
    DeviceTensor loss_ref = b.Allocate(out, Shape{6}).value();
    DeviceTensor dpred = b.Allocate(out, logits_shape).value();
    DeviceTensor dpred_ref = b.Allocate(out, logits_shape).value();
    SLUICE_ASSERT_OK(b.MeanSquaredError(pred, target, 0.5f, &loss, &dpred));
    SLUICE_ASSERT_OK(staged::MeanSquaredError(b, pred, target, 0.5f, &loss_ref, &dpred_ref));
    same_bits(loss, loss_ref, what + " loss");
    same_bits(dpred, dpred_ref, what + " dpred");
  }

  // The checks name the dtype a mixed-precision kernel accepts.
  DeviceTensor ints = b.Allocate(DType::kInt32, shape).value();
  DeviceTensor y = b.Allocate(kB, shape).value();
  Status s = b.ActivationForward(nn::Activation::kRelu, ints, &y);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("x must be float32 or bfloat16"), std::string::npos) << s;
}

// Staging allocates float32 scratch while recording: the recording must
// keep it, and replays must equal the eager calls.
TEST_P(Bf16Test, CapturedStagingReplaysExactly) {
  nn::Backend* b = gpu();
  if (!b->can_capture()) GTEST_SKIP() << b->name() << " cannot capture";
  Pair a = Bf16Random(Shape{24, 40}, 13), w = Bf16Random(Shape{40, 8}, 14);
  SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor c, b->Allocate(DType::kBFloat16, Shape{24, 8}));
  // A convolution with a bfloat16 bias (cuDNN's path takes a float32 one)
  // stages through float32 scratch on a GPU too.
  Pair x = Bf16Random(Shape{2, 5, 5, 3}, 15), f = Bf16Random(Shape{2, 2, 3, 4}, 16);
  Pair bias = Bf16Random(Shape{4}, 17);
  const nn::Window2D window{2, 2, 1, 1, nn::Padding::kSame};
  SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor y, b->Allocate(DType::kBFloat16, Shape{2, 5, 5, 4}));
  auto step = [&]() -> Status {
    SLUICE_RETURN_IF_ERROR(b->MatMul(a.gpu, false, w.gpu, false, 0.0f, &c));
    SLUICE_RETURN_IF_ERROR(b->ActivationForward(nn::Activation::kSoftmax, c, &c));
    return b->Conv2DForward(x.gpu, f.gpu, &bias.gpu, window, &y);
  };
  SLUICE_ASSERT_OK(step());
  const std::vector<float> eager = GpuValues(c), eager_y = GpuValues(y);
  SLUICE_ASSERT_OK(b->Fill(0.0f, &c));
  SLUICE_ASSERT_OK(b->Fill(0.0f, &y));
  SLUICE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<nn::CapturedWork> work, b->Capture(step));
  // Allocations after the capture must not reuse the recording's scratch.
  SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor other, b->Allocate(DType::kFloat32, Shape{24, 40}));
  SLUICE_ASSERT_OK(b->Fill(1e6f, &other));
  for (int r = 0; r < 3; ++r) {
    SLUICE_ASSERT_OK(work->Replay());
    EXPECT_EQ(GpuValues(c), eager) << "replay " << r;
    EXPECT_EQ(GpuValues(y), eager_y) << "replay " << r;
  }
}

}  // namespace
}  // namespace sluice::gpu::testing
