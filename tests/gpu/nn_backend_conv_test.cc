// The GPU nn backend's convolutions and poolings against the CPU backend
// (agreement, ties, empty batches, the errors), and the run-time loading of
// cuDNN.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "nn_backend_test_util.h"
#include "sluice/nn/cuda/internal/conv_kernels.h"
#include "sluice/nn/cuda/internal/cudnn_lib.h"

namespace sluice::gpu::testing {
namespace {

using nn::Padding;
using nn::PoolMode;
using nn::Window2D;

// A convolution or pooling case: x [n, h, w, c], `out` filters (conv).
struct Case {
  int64_t n, h, w, c, out;
  Window2D window;
  std::string Name() const {
    return "x[" + std::to_string(n) + "," + std::to_string(h) + "," + std::to_string(w) + "," +
           std::to_string(c) + "] k" + std::to_string(window.kernel_h) + "x" +
           std::to_string(window.kernel_w) + " s" + std::to_string(window.stride_h) + "x" +
           std::to_string(window.stride_w) +
           (window.padding == Padding::kSame ? " same" : " valid") + " out" + std::to_string(out);
  }
};

Window2D Win(int kh, int kw, int sh, int sw, Padding p) { return Window2D{kh, kw, sh, sw, p}; }

// VALID and SAME (symmetric, and asymmetric: even kernels, or strides that
// leave an odd total padding), strides 1 and 2, square and non-square
// kernels, 1, 3 and 16 input channels, a 1-element case.
const std::vector<Case>& ConvCases() {
  static const std::vector<Case> cases = {
      {2, 6, 5, 1, 4, Win(1, 1, 1, 1, Padding::kValid)},
      {2, 7, 7, 3, 5, Win(3, 3, 1, 1, Padding::kSame)},  // pads 1 / 1
      {2, 8, 8, 3, 4, Win(3, 3, 2, 2, Padding::kSame)},  // pads 0 / 1
      {1, 9, 11, 16, 8, Win(5, 5, 2, 2, Padding::kValid)},
      {2, 6, 7, 16, 3, Win(5, 5, 1, 1, Padding::kSame)},  // pads 2 / 2
      {2, 7, 8, 3, 6, Win(2, 3, 1, 2, Padding::kSame)},   // rows 0 / 1, cols 1 / 1
      {2, 6, 7, 3, 4, Win(4, 4, 1, 1, Padding::kSame)},   // pads 1 / 2 (explicit padding)
      {2, 9, 10, 3, 2, Win(4, 5, 2, 3, Padding::kSame)},  // rows 1 / 2, cols 1 / 2
      {3, 9, 6, 1, 2, Win(4, 2, 2, 1, Padding::kValid)},
      {2, 5, 5, 3, 2, Win(1, 1, 2, 2, Padding::kSame)},
      {1, 5, 4, 3, 2, Win(5, 4, 1, 1, Padding::kValid)},  // the whole image
      {1, 1, 1, 1, 1, Win(1, 1, 1, 1, Padding::kValid)},  // one element
      {2, 3, 4, 16, 5, Win(3, 3, 2, 1, Padding::kSame)},  // kernel beyond the input
  };
  return cases;
}

Shape XShape(const Case& k) { return Shape{k.n, k.h, k.w, k.c}; }
Shape FilterShape(const Case& k) { return Shape{k.window.kernel_h, k.window.kernel_w, k.c, k.out}; }

// Expects the GPU backend's error to be the CPU backend's: the same code
// and the same message up to the argument list (which names the device).
void ExpectSameError(const Status& gpu, const Status& cpu, const std::string& what) {
  ASSERT_FALSE(cpu.ok()) << what << ": the CPU backend accepted it";
  ASSERT_FALSE(gpu.ok()) << what << ": the GPU backend accepted it; the CPU said " << cpu;
  EXPECT_EQ(gpu.code(), cpu.code()) << what << ": " << gpu << " vs " << cpu;
  const std::string g(gpu.message()), c(cpu.message());
  EXPECT_EQ(g.substr(0, g.find(" (")), c.substr(0, c.find(" ("))) << what;
}

using ConvTest = NnBackendTest;
SLUICE_NN_BACKEND_TEST_SUITE(ConvTest);

TEST_P(ConvTest, ForwardAgreesWithAndWithoutBias) {
  uint32_t seed = 1;
  for (const Case& k : ConvCases()) {
    SCOPED_TRACE(k.Name());
    const Pair x = BothRandom(XShape(k), seed++);
    const Pair f = BothRandom(FilterShape(k), seed++);
    const Pair b = BothRandom(Shape{k.out}, seed++);
    const Shape ys = nn::Conv2DOutputShape(XShape(k), FilterShape(k), k.window).value();
    for (bool with_bias : {false, true}) {
      Pair y = BothAlloc(ys);
      SLUICE_ASSERT_OK(
          gpu()->Conv2DForward(x.gpu, f.gpu, with_bias ? &b.gpu : nullptr, k.window, &y.gpu));
      SLUICE_ASSERT_OK(
          cpu()->Conv2DForward(x.cpu, f.cpu, with_bias ? &b.cpu : nullptr, k.window, &y.cpu));
      ExpectAgree(y, kSum, with_bias ? "y with bias" : "y");
    }
  }
}

TEST_P(ConvTest, BackwardDataAgrees) {
  uint32_t seed = 100;
  for (const Case& k : ConvCases()) {
    SCOPED_TRACE(k.Name());
    const Shape ys = nn::Conv2DOutputShape(XShape(k), FilterShape(k), k.window).value();
    const Pair dy = BothRandom(ys, seed++);
    const Pair f = BothRandom(FilterShape(k), seed++);
    Pair dx = BothAlloc(XShape(k));
    SLUICE_ASSERT_OK(gpu()->Conv2DBackwardData(dy.gpu, f.gpu, k.window, &dx.gpu));
    SLUICE_ASSERT_OK(cpu()->Conv2DBackwardData(dy.cpu, f.cpu, k.window, &dx.cpu));
    ExpectAgree(dx, kSum, "dx");
  }
}

TEST_P(ConvTest, BackwardFilterAgreesWithAndWithoutBias) {
  uint32_t seed = 200;
  for (const Case& k : ConvCases()) {
    SCOPED_TRACE(k.Name());
    const Shape ys = nn::Conv2DOutputShape(XShape(k), FilterShape(k), k.window).value();
    const Pair x = BothRandom(XShape(k), seed++);
    const Pair dy = BothRandom(ys, seed++);
    for (bool with_bias : {false, true}) {
      // Stale values in the outputs: both are overwritten.
      Pair df = BothRandom(FilterShape(k), seed++, 5.0f, 6.0f);
      Pair db = BothRandom(Shape{k.out}, seed++, 5.0f, 6.0f);
      SLUICE_ASSERT_OK(gpu()->Conv2DBackwardFilter(x.gpu, dy.gpu, k.window, &df.gpu,
                                                   with_bias ? &db.gpu : nullptr));
      SLUICE_ASSERT_OK(cpu()->Conv2DBackwardFilter(x.cpu, dy.cpu, k.window, &df.cpu,
                                                   with_bias ? &db.cpu : nullptr));
      ExpectAgree(df, kSum, "dfilter");
      if (with_bias) ExpectAgree(db, kSum, "dbias");
    }
  }
}

// A batch of zero: no output, and zero gradients for the filter and bias.
TEST_P(ConvTest, EmptyBatch) {
  const Case k{0, 5, 5, 3, 4, Win(3, 3, 1, 1, Padding::kSame)};
  const Pair x = BothRandom(XShape(k), 1);
  const Pair f = BothRandom(FilterShape(k), 2);
  const Pair b = BothRandom(Shape{4}, 3);
  Pair y = BothAlloc(Shape{0, 5, 5, 4});
  SLUICE_ASSERT_OK(gpu()->Conv2DForward(x.gpu, f.gpu, &b.gpu, k.window, &y.gpu));
  Pair dx = BothAlloc(XShape(k));
  SLUICE_ASSERT_OK(gpu()->Conv2DBackwardData(y.gpu, f.gpu, k.window, &dx.gpu));
  Pair df = BothRandom(FilterShape(k), 4);
  Pair db = BothRandom(Shape{4}, 5);
  SLUICE_ASSERT_OK(gpu()->Conv2DBackwardFilter(x.gpu, y.gpu, k.window, &df.gpu, &db.gpu));
  SLUICE_ASSERT_OK(cpu()->Conv2DBackwardFilter(x.cpu, y.cpu, k.window, &df.cpu, &db.cpu));
  ExpectAgree(df, kSum, "dfilter");
  ExpectAgree(db, kSum, "dbias");
  EXPECT_EQ(GpuValues(db.gpu), std::vector<float>(4, 0.0f));
}

TEST_P(ConvTest, RejectsWhatTheCpuBackendRejects) {
  const Window2D w3 = Win(3, 3, 1, 1, Padding::kValid);
  const Pair x = BothRandom(Shape{2, 5, 5, 3}, 1);
  const Pair f = BothRandom(Shape{3, 3, 3, 4}, 2);
  const Pair y = BothAlloc(Shape{2, 3, 3, 4});
  const Pair x3 = BothRandom(Shape{5, 5, 3}, 3);
  const Pair f3 = BothRandom(Shape{3, 3, 3}, 4);
  const Pair wrong_y = BothAlloc(Shape{2, 3, 3, 5});
  const Pair bias = BothRandom(Shape{4}, 5);
  const Pair wrong_bias = BothRandom(Shape{3}, 6);
  const Pair ints = BothAlloc(Shape{2, 5, 5, 3}, DType::kInt32);
  const Pair f_other_channels = BothRandom(Shape{3, 3, 2, 4}, 7);
  const Pair f7 = BothRandom(Shape{7, 7, 3, 4}, 8);  // larger than the 5x5 image
  struct Forward {
    const char* what;
    const Pair *x, *f, *bias;
    Window2D window;
    const Pair* y;
  };
  for (const Forward& c : std::vector<Forward>{
           {"x rank 3", &x3, &f, nullptr, w3, &y},
           {"filter rank 3", &x, &f3, nullptr, w3, &y},
           {"y shape", &x, &f, nullptr, w3, &wrong_y},
           {"bias shape", &x, &f, &wrong_bias, w3, &y},
           {"x int32", &ints, &f, nullptr, w3, &y},
           {"kernel size differs from the filter", &x, &f, nullptr,
            Win(2, 3, 1, 1, Padding::kValid), &y},
           {"filter input channels", &x, &f_other_channels, &bias, w3, &y},
           {"kernel larger than the valid input", &x, &f7, nullptr,
            Win(7, 7, 1, 1, Padding::kValid), &y},
           {"null y", &x, &f, nullptr, w3, nullptr},
       }) {
    Pair out = c.y != nullptr ? *c.y : Pair{};
    ExpectSameError(gpu()->Conv2DForward(c.x->gpu, c.f->gpu, c.bias ? &c.bias->gpu : nullptr,
                                         c.window, c.y ? &out.gpu : nullptr),
                    cpu()->Conv2DForward(c.x->cpu, c.f->cpu, c.bias ? &c.bias->cpu : nullptr,
                                         c.window, c.y ? &out.cpu : nullptr),
                    c.what);
  }
  Pair dx = BothAlloc(Shape{2, 5, 5, 3});
  Pair wrong_dx = BothAlloc(Shape{2, 6, 5, 3});
  ExpectSameError(gpu()->Conv2DBackwardData(y.gpu, f.gpu, w3, &wrong_dx.gpu),
                  cpu()->Conv2DBackwardData(y.cpu, f.cpu, w3, &wrong_dx.cpu), "dx shape");
  ExpectSameError(gpu()->Conv2DBackwardData(wrong_y.gpu, f.gpu, w3, &dx.gpu),
                  cpu()->Conv2DBackwardData(wrong_y.cpu, f.cpu, w3, &dx.cpu), "dy shape");
  ExpectSameError(gpu()->Conv2DBackwardData(y.gpu, f3.gpu, w3, &dx.gpu),
                  cpu()->Conv2DBackwardData(y.cpu, f3.cpu, w3, &dx.cpu), "filter rank");
  ExpectSameError(gpu()->Conv2DBackwardData(y.gpu, f.gpu, w3, nullptr),
                  cpu()->Conv2DBackwardData(y.cpu, f.cpu, w3, nullptr), "null dx");
  Pair df = BothAlloc(Shape{3, 3, 3, 4});
  Pair wrong_df = BothAlloc(Shape{3, 3, 3, 5});
  Pair db = BothAlloc(Shape{4});
  Pair wrong_db = BothAlloc(Shape{4, 1});
  ExpectSameError(gpu()->Conv2DBackwardFilter(x.gpu, y.gpu, w3, &wrong_df.gpu, nullptr),
                  cpu()->Conv2DBackwardFilter(x.cpu, y.cpu, w3, &wrong_df.cpu, nullptr),
                  "dfilter shape");
  ExpectSameError(gpu()->Conv2DBackwardFilter(x.gpu, y.gpu, w3, &df.gpu, &wrong_db.gpu),
                  cpu()->Conv2DBackwardFilter(x.cpu, y.cpu, w3, &df.cpu, &wrong_db.cpu),
                  "dbias shape");
  ExpectSameError(gpu()->Conv2DBackwardFilter(x3.gpu, y.gpu, w3, &df.gpu, &db.gpu),
                  cpu()->Conv2DBackwardFilter(x3.cpu, y.cpu, w3, &df.cpu, &db.cpu), "x rank");
  ExpectSameError(gpu()->Conv2DBackwardFilter(x.gpu, wrong_y.gpu, w3, &df.gpu, &db.gpu),
                  cpu()->Conv2DBackwardFilter(x.cpu, wrong_y.cpu, w3, &df.cpu, &db.cpu),
                  "dy shape");
}

// Pooling cases: windows that overlap (stride < kernel, so an input
// element is in several windows) or not, asymmetric SAME padding,
// non-square, channel counts that do and do not take 4-channel runs.
const std::vector<Case>& PoolCases() {
  static const std::vector<Case> cases = {
      {2, 6, 6, 3, 0, Win(2, 2, 2, 2, Padding::kValid)},
      {2, 7, 8, 3, 0, Win(3, 3, 2, 2, Padding::kSame)},  // rows 1 / 1, cols 0 / 1
      {2, 5, 6, 16, 0, Win(3, 3, 1, 1, Padding::kSame)},
      {1, 7, 9, 2, 0, Win(2, 3, 1, 2, Padding::kSame)},
      {2, 8, 7, 1, 0, Win(3, 2, 2, 1, Padding::kValid)},
      {1, 4, 4, 2, 0, Win(4, 4, 1, 1, Padding::kValid)},  // global
      {1, 1, 1, 1, 0, Win(1, 1, 1, 1, Padding::kValid)},  // one element
      // Four channels per thread: windows apart (the last row and column
      // in none), apart with gaps (stride beyond the kernel), overlapping.
      {2, 7, 9, 8, 0, Win(2, 2, 2, 2, Padding::kValid)},
      {1, 7, 8, 4, 0, Win(2, 2, 3, 3, Padding::kSame)},
      {2, 6, 7, 4, 0, Win(3, 3, 2, 2, Padding::kSame)},
  };
  return cases;
}

class PoolTest : public NnBackendTest {
 protected:
  // Integer values in [0, 3): max windows with ties everywhere, and sums
  // that are exact in float.
  static Tensor SmallIntegers(const Shape& shape, uint32_t seed) {
    Tensor t = RandomHost(shape, seed, 0.0f, 3.0f);
    for (float& v : t.flat<float>()) v = static_cast<float>(static_cast<int>(v));
    return t;
  }

  // Forward (keeping the workspace) and backward on both backends; expects
  // y within y_tol and dx within dx_tol of the CPU backend's.
  struct Run {
    Pair y, dx;
    DeviceTensor gpu_workspace;
  };
  Run ExpectPoolAgrees(PoolMode mode, const Window2D& window, const Pair& x, const Pair& dy,
                       Tolerance y_tol, Tolerance dx_tol) {
    Run r{BothAlloc(dy.cpu.shape()), BothAlloc(x.cpu.shape()), {}};
    DeviceTensor cpu_ws;
    EXPECT_TRUE(gpu()->Pool2DForward(mode, x.gpu, window, &r.y.gpu, &r.gpu_workspace).ok());
    EXPECT_TRUE(cpu()->Pool2DForward(mode, x.cpu, window, &r.y.cpu, &cpu_ws).ok());
    ExpectAgree(r.y, y_tol, "y");
    EXPECT_TRUE(
        gpu()
            ->Pool2DBackward(mode, x.gpu, r.y.gpu, dy.gpu, r.gpu_workspace, window, &r.dx.gpu)
            .ok());
    EXPECT_TRUE(
        cpu()->Pool2DBackward(mode, x.cpu, r.y.cpu, dy.cpu, cpu_ws, window, &r.dx.cpu).ok());
    ExpectAgree(r.dx, dx_tol, "dx");
    return r;
  }
};
SLUICE_NN_BACKEND_TEST_SUITE(PoolTest);

constexpr Tolerance kExact{0, 0};

// Max pooling: y and the gradient exactly the CPU backend's on inputs with
// ties (the gradient goes to the first maximum), with the forward call's
// workspace and without one.
TEST_P(PoolTest, MaxAgreesExactlyWithTies) {
  uint32_t seed = 1;
  for (const Case& k : PoolCases()) {
    SCOPED_TRACE(k.Name());
    const Shape ys = nn::Pool2DOutputShape(XShape(k), k.window).value();
    const Pair x = Both(SmallIntegers(XShape(k), seed++));
    const Pair dy = Both(SmallIntegers(ys, seed++));
    const Run r = ExpectPoolAgrees(PoolMode::kMax, k.window, x, dy, kExact, kExact);
    EXPECT_EQ(r.gpu_workspace.dtype(), DType::kInt64);
    Pair dx2 = BothAlloc(XShape(k));
    SLUICE_ASSERT_OK(gpu()->Pool2DBackward(PoolMode::kMax, x.gpu, r.y.gpu, dy.gpu, DeviceTensor(),
                                           k.window, &dx2.gpu));
    EXPECT_EQ(GpuValues(dx2.gpu), GpuValues(r.dx.gpu)) << "without a workspace";
    Pair y2 = BothAlloc(ys);
    SLUICE_ASSERT_OK(gpu()->Pool2DForward(PoolMode::kMax, x.gpu, k.window, &y2.gpu, nullptr));
    EXPECT_EQ(GpuValues(y2.gpu), GpuValues(r.y.gpu)) << "y without a workspace";
  }
}

TEST_P(PoolTest, MaxAgreesOnRandomInputs) {
  uint32_t seed = 50;
  for (const Case& k : PoolCases()) {
    SCOPED_TRACE(k.Name());
    const Pair x = BothRandom(XShape(k), seed++);
    const Pair dy = BothRandom(nn::Pool2DOutputShape(XShape(k), k.window).value(), seed++);
    ExpectPoolAgrees(PoolMode::kMax, k.window, x, dy, kExact, kElem);  // dx: sums in another order
  }
}

// Average pooling divides by the taps inside the input; its workspace is
// empty.
TEST_P(PoolTest, AverageAgrees) {
  uint32_t seed = 100;
  for (const Case& k : PoolCases()) {
    SCOPED_TRACE(k.Name());
    const Pair x = BothRandom(XShape(k), seed++);
    const Pair dy = BothRandom(nn::Pool2DOutputShape(XShape(k), k.window).value(), seed++);
    const Run r = ExpectPoolAgrees(PoolMode::kAverage, k.window, x, dy, kSum, kSum);
    EXPECT_EQ(r.gpu_workspace.num_elements(), 0);
  }
}

TEST_P(PoolTest, EmptyBatch) {
  const Window2D w = Win(2, 2, 2, 2, Padding::kValid);
  const Pair x = BothRandom(Shape{0, 4, 4, 3}, 1);
  Pair y = BothAlloc(Shape{0, 2, 2, 3});
  for (PoolMode mode : {PoolMode::kMax, PoolMode::kAverage}) {
    DeviceTensor ws;
    SLUICE_ASSERT_OK(gpu()->Pool2DForward(mode, x.gpu, w, &y.gpu, &ws));
    EXPECT_EQ(ws.num_elements(), 0);
    Pair dx = BothAlloc(Shape{0, 4, 4, 3});
    SLUICE_EXPECT_OK(gpu()->Pool2DBackward(mode, x.gpu, y.gpu, y.gpu, ws, w, &dx.gpu));
  }
}

TEST_P(PoolTest, RejectsWhatTheCpuBackendRejects) {
  const Window2D w = Win(2, 2, 2, 2, Padding::kValid);
  const Pair x = BothRandom(Shape{2, 4, 4, 3}, 1);
  const Pair x3 = BothRandom(Shape{4, 4, 3}, 2);
  Pair y = BothAlloc(Shape{2, 2, 2, 3});
  Pair wrong_y = BothAlloc(Shape{2, 2, 3, 3});
  for (PoolMode mode : {PoolMode::kMax, PoolMode::kAverage}) {
    ExpectSameError(gpu()->Pool2DForward(mode, x3.gpu, w, &y.gpu, nullptr),
                    cpu()->Pool2DForward(mode, x3.cpu, w, &y.cpu, nullptr), "x rank");
    ExpectSameError(gpu()->Pool2DForward(mode, x.gpu, w, &wrong_y.gpu, nullptr),
                    cpu()->Pool2DForward(mode, x.cpu, w, &wrong_y.cpu, nullptr), "y shape");
    ExpectSameError(
        gpu()->Pool2DForward(mode, x.gpu, Win(5, 5, 1, 1, Padding::kValid), &y.gpu, nullptr),
        cpu()->Pool2DForward(mode, x.cpu, Win(5, 5, 1, 1, Padding::kValid), &y.cpu, nullptr),
        "window larger than x");
    ExpectSameError(gpu()->Pool2DForward(mode, x.gpu, w, nullptr, nullptr),
                    cpu()->Pool2DForward(mode, x.cpu, w, nullptr, nullptr), "null y");
    DeviceTensor gpu_ws, cpu_ws;
    SLUICE_ASSERT_OK(gpu()->Pool2DForward(mode, x.gpu, w, &y.gpu, &gpu_ws));
    SLUICE_ASSERT_OK(cpu()->Pool2DForward(mode, x.cpu, w, &y.cpu, &cpu_ws));
    Pair dx = BothAlloc(Shape{2, 4, 4, 3});
    Pair wrong_dx = BothAlloc(Shape{2, 4, 4, 2});
    ExpectSameError(gpu()->Pool2DBackward(mode, x.gpu, y.gpu, wrong_y.gpu, gpu_ws, w, &dx.gpu),
                    cpu()->Pool2DBackward(mode, x.cpu, y.cpu, wrong_y.cpu, cpu_ws, w, &dx.cpu),
                    "dy shape");
    ExpectSameError(gpu()->Pool2DBackward(mode, x.gpu, y.gpu, y.gpu, gpu_ws, w, &wrong_dx.gpu),
                    cpu()->Pool2DBackward(mode, x.cpu, y.cpu, y.cpu, cpu_ws, w, &wrong_dx.cpu),
                    "dx shape");
    ExpectSameError(
        gpu()->Pool2DBackward(mode, x.gpu, wrong_y.gpu, wrong_y.gpu, gpu_ws, w, &dx.gpu),
        cpu()->Pool2DBackward(mode, x.cpu, wrong_y.cpu, wrong_y.cpu, cpu_ws, w, &dx.cpu),
        "y shape");
  }
  // A max-pooling workspace that Pool2DForward did not make.
  Pair bogus = BothAlloc(Shape{5}, DType::kUInt8);
  Pair dx = BothAlloc(Shape{2, 4, 4, 3});
  ExpectSameError(gpu()->Pool2DBackward(PoolMode::kMax, x.gpu, y.gpu, y.gpu, bogus.gpu, w, &dx.gpu),
                  cpu()->Pool2DBackward(PoolMode::kMax, x.cpu, y.cpu, y.cpu, bogus.cpu, w, &dx.cpu),
                  "bogus workspace");
}

// The kernels only the cuDNN path uses, run here as host loops: the filter
// transposes between HWIO and cuDNN's KRSC, and the bias add after it.
TEST(ConvKernelsTest, FilterTransposesBetweenHwioAndKrsc) {
  constexpr int64_t kh = 2, kw = 3, in = 4, out = 5;
  std::vector<float> hwio(kh * kw * in * out), krsc(hwio.size(), -1.0f), back(hwio.size());
  for (size_t i = 0; i < hwio.size(); ++i) hwio[i] = static_cast<float>(i);
  gpu_backend_internal::FilterTransposeArgs a{hwio.data(), krsc.data(), kh, kw, in, out, true};
  ASSERT_EQ(gpu_backend_internal::RunFilterTranspose(a, {}), 0);
  for (int64_t h = 0; h < kh; ++h) {
    for (int64_t w = 0; w < kw; ++w) {
      for (int64_t c = 0; c < in; ++c) {
        for (int64_t o = 0; o < out; ++o) {
          ASSERT_EQ(krsc[((o * kh + h) * kw + w) * in + c], hwio[((h * kw + w) * in + c) * out + o])
              << h << " " << w << " " << c << " " << o;
        }
      }
    }
  }
  gpu_backend_internal::FilterTransposeArgs b{krsc.data(), back.data(), kh, kw, in, out, false};
  ASSERT_EQ(gpu_backend_internal::RunFilterTranspose(b, {}), 0);
  EXPECT_EQ(back, hwio);

  // bfloat16 (cuDNN's mixed-precision path): HWIO bf16 -> KRSC bf16 ->
  // HWIO float32, exact for values bfloat16 holds; float32 -> bfloat16
  // rounds to nearest even.
  std::vector<bfloat16> hwio16(hwio.size()), krsc16(hwio.size());
  for (size_t i = 0; i < hwio.size(); ++i) hwio16[i] = bfloat16(hwio[i] + 0.5f);
  gpu_backend_internal::FilterTransposeArgs c{hwio16.data(), krsc16.data(), kh,   kw,  in,
                                              out,           true,          true, true};
  ASSERT_EQ(gpu_backend_internal::RunFilterTranspose(c, {}), 0);
  std::vector<float> wide(hwio.size());
  gpu_backend_internal::FilterTransposeArgs d{krsc16.data(), wide.data(), kh,   kw,   in,
                                              out,           false,       true, false};
  ASSERT_EQ(gpu_backend_internal::RunFilterTranspose(d, {}), 0);
  for (size_t i = 0; i < hwio.size(); ++i) {
    ASSERT_EQ(wide[i], static_cast<float>(hwio16[i])) << i;
  }
  std::vector<bfloat16> narrow(hwio.size());
  const float odd = std::bit_cast<float>(0x3f808000u);  // a tie: rounds to even 0x3f80
  std::vector<float> ties(hwio.size(), odd);
  gpu_backend_internal::FilterTransposeArgs e{ties.data(), narrow.data(), kh,    kw,  in,
                                              out,         true,          false, true};
  ASSERT_EQ(gpu_backend_internal::RunFilterTranspose(e, {}), 0);
  for (bfloat16 v : narrow) ASSERT_EQ(v.bits, 0x3f80);
}

// cuDNN, opened at run time: every function the backend uses resolves,
// and the descriptor calls reach the sub-library that computes shapes
// (no GPU needed). Skipped where libcudnn.so.9 is not installed.
TEST(CudnnLibTest, LoadsAndResolvesEverySymbol) {
  const gpu_backend_internal::CudnnLoad& load = gpu_backend_internal::LoadCudnn();
  if (!load.loaded && load.resolved.empty() && load.missing.empty()) {
    GTEST_SKIP() << "cuDNN is not installed: " << load.error;
  }
  EXPECT_TRUE(load.loaded) << load.error;
  EXPECT_TRUE(load.missing.empty()) << load.error;
  for (const char* fn : {"cudnnCreate", "cudnnSetStream", "cudnnConvolutionForward",
                         "cudnnConvolutionBackwardData", "cudnnConvolutionBackwardFilter"}) {
    EXPECT_NE(std::find(load.resolved.begin(), load.resolved.end(), fn), load.resolved.end()) << fn;
  }
  EXPECT_EQ(load.version / 10000, 9) << load.version;
}

TEST(CudnnLibTest, OutputDimsMatchTheGeometry) {
  if (!gpu_backend_internal::LoadCudnn().loaded) {
    GTEST_SKIP() << "cuDNN did not load: " << gpu_backend_internal::LoadCudnn().error;
  }
  for (const Case& k : ConvCases()) {
    SCOPED_TRACE(k.Name());
    const nn::WindowDim h =
        nn::ComputeWindowDim(k.h, k.window.kernel_h, k.window.stride_h, k.window.padding).value();
    const nn::WindowDim w =
        nn::ComputeWindowDim(k.w, k.window.kernel_w, k.window.stride_w, k.window.padding).value();
    nn::kit::ConvGeometry g{.batch = k.n,
                            .in_h = k.h,
                            .in_w = k.w,
                            .in_c = k.c,
                            .out_h = h.out,
                            .out_w = w.out,
                            .out_c = k.out,
                            .kernel_h = k.window.kernel_h,
                            .kernel_w = k.window.kernel_w,
                            .stride_h = k.window.stride_h,
                            .stride_w = k.window.stride_w,
                            .pad_top = h.pad_before,
                            .pad_bottom = h.pad_after,
                            .pad_left = w.pad_before,
                            .pad_right = w.pad_after};
    for (bool bf16 : {false, true}) {  // float32 with FMA math; bfloat16 with tensor ops
      SLUICE_ASSERT_OK_AND_ASSIGN(auto dims, gpu_backend_internal::CudnnForwardOutputDims(g, bf16));
      if (g.symmetric_padding()) {  // the only geometries the backend gives cuDNN
        EXPECT_EQ(dims, (std::array<int, 4>{static_cast<int>(k.n), static_cast<int>(k.out),
                                            static_cast<int>(h.out), static_cast<int>(w.out)}))
            << (bf16 ? "bfloat16" : "float32");
        // The graph API accepts the same convolution (its descriptors are
        // built and checked on the host).
        const Status graph = gpu_backend_internal::CudnnGraphOperationsCheck(g, bf16);
        EXPECT_TRUE(graph.ok()) << (bf16 ? "bfloat16: " : "float32: ") << graph;
        nn::kit::ConvGeometry wrong = g;  // an output one row too tall
        ++wrong.out_h;
        EXPECT_FALSE(gpu_backend_internal::CudnnGraphOperationsCheck(wrong, bf16).ok());
      }
    }
  }
}

}  // namespace
}  // namespace sluice::gpu::testing
