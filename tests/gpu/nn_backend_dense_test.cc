// The GPU nn backend's elementwise methods (Fill, Cast, Axpby, Multiply,
// DropoutMask), dense algebra (MatMul, BiasAdd, BiasGrad) and reductions
// (Sum, CountArgMaxMatches) against the CPU backend, their argument errors,
// and cuBLAS's run-time loading.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "nn_backend_test_util.h"
#include "sluice/nn/cuda/internal/cublas_lib.h"

namespace sluice::gpu::testing {
namespace {

class DenseTest : public NnBackendTest {
 protected:
  // Outputs on both backends prefilled with `value` (NaN shows a read of
  // an output that must only be written).
  Pair Filled(const Shape& shape, float value) {
    Pair p = BothAlloc(shape);
    EXPECT_TRUE(gpu()->Fill(value, &p.gpu).ok());
    EXPECT_TRUE(cpu()->Fill(value, &p.cpu).ok());
    return p;
  }
};
SLUICE_NN_BACKEND_TEST_SUITE(DenseTest);

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr Tolerance kExact{0.0, 0.0};

// "<Method>: <problem>", the part of an error before the tensors (whose
// device names differ between the backends on a GPU).
std::string Prefix(const Status& s) {
  const std::string m(s.message());
  return m.substr(0, m.find(" ("));
}

// The GPU backend fails as the CPU backend does: same code and prefix.
void ExpectSameError(const Status& gpu, const Status& cpu, const std::string& what) {
  ASSERT_FALSE(cpu.ok()) << what << ": the CPU backend accepted it";
  EXPECT_EQ(gpu.code(), cpu.code()) << what << ": " << gpu;
  EXPECT_EQ(Prefix(gpu), Prefix(cpu)) << what << ": " << gpu << " vs " << cpu;
}

// A host tensor of `dtype` with values in the dtype's range: 0/1 for bool,
// 0..255 for uint8, wide integers for int32/int64 (int64 beyond float's 24
// bits, so the conversion rounds), fractions for the float types.
Tensor RandomOfDType(DType dtype, const Shape& shape, uint32_t seed) {
  Tensor t = Tensor::Allocate(dtype, shape).value();
  std::mt19937_64 gen(seed);
  VisitDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, std::string_view>) {
      T* p = t.flat<T>().data();
      for (int64_t i = 0; i < t.num_elements(); ++i) {
        const uint64_t r = gen();
        if constexpr (std::is_same_v<T, bool>) {
          p[i] = (r & 1) != 0;
        } else if constexpr (std::is_same_v<T, uint8_t>) {
          p[i] = static_cast<uint8_t>(r);
        } else if constexpr (std::is_same_v<T, int32_t>) {
          p[i] = static_cast<int32_t>(static_cast<uint32_t>(r));
        } else if constexpr (std::is_same_v<T, int64_t>) {
          p[i] = static_cast<int64_t>(r) >> (r % 40);
        } else {
          p[i] = static_cast<T>((static_cast<double>(r >> 11) * 0x1.0p-53 - 0.5) * 1000.0);
        }
      }
    }
  });
  return t;
}

const std::vector<Shape>& ElementwiseShapes() {
  static const std::vector<Shape> shapes = {Shape{},     Shape{1},       Shape{0},   Shape{3, 0},
                                            Shape{7, 3}, Shape{2, 3, 5}, Shape{1001}};
  return shapes;
}

// --- Elementwise -------------------------------------------------------------

TEST_P(DenseTest, FillSetsEveryElement) {
  for (const Shape& shape : ElementwiseShapes()) {
    for (float value : {0.0f, -2.5f, kNaN}) {
      Pair p = BothAlloc(shape);
      SLUICE_ASSERT_OK(gpu()->Fill(value, &p.gpu));
      SLUICE_ASSERT_OK(cpu()->Fill(value, &p.cpu));
      ExpectAgree(p, kExact, "Fill " + shape.ToString());
    }
  }
}

TEST_P(DenseTest, CastConvertsEveryNumericDtype) {
  for (DType dtype : {DType::kBool, DType::kUInt8, DType::kInt32, DType::kInt64, DType::kFloat16,
                      DType::kBFloat16, DType::kFloat32, DType::kFloat64}) {
    for (const Shape& shape : {Shape{}, Shape{0}, Shape{5, 67}}) {
      for (float scale : {1.0f, 1.0f / 255.0f, -3.0f}) {
        const std::string what = std::string("Cast ") + std::string(DTypeName(dtype)) +
                                 shape.ToString() + " * " + std::to_string(scale);
        Pair x = Both(RandomOfDType(dtype, shape, 11));
        Pair y = BothAlloc(shape);
        SLUICE_ASSERT_OK(gpu()->Cast(x.gpu, scale, &y.gpu));
        SLUICE_ASSERT_OK(cpu()->Cast(x.cpu, scale, &y.cpu));
        // One conversion and one product, each rounded once: bit for bit.
        ExpectAgree(y, kExact, what);
      }
    }
  }
}

TEST_P(DenseTest, AxpbyWithAndWithoutBeta) {
  for (const Shape& shape : ElementwiseShapes()) {
    for (float alpha : {1.0f, -0.75f}) {
      for (float beta : {0.0f, 1.0f, 0.3f}) {
        const std::string what = "Axpby " + shape.ToString() + " alpha " + std::to_string(alpha) +
                                 " beta " + std::to_string(beta);
        Pair x = BothRandom(shape, 1);
        // beta == 0 must ignore y's NaNs; otherwise y's values count.
        Pair y = beta == 0.0f ? Filled(shape, kNaN) : BothRandom(shape, 2);
        SLUICE_ASSERT_OK(gpu()->Axpby(alpha, x.gpu, beta, &y.gpu));
        SLUICE_ASSERT_OK(cpu()->Axpby(alpha, x.cpu, beta, &y.cpu));
        ExpectAgree(y, kElem, what);
        if (beta == 0.0f) {
          for (float v : GpuValues(y.gpu)) ASSERT_FALSE(std::isnan(v)) << what;
        }
      }
    }
  }
}

TEST_P(DenseTest, MultiplyAlsoInPlace) {
  for (const Shape& shape : ElementwiseShapes()) {
    const std::string what = "Multiply " + shape.ToString();
    Pair a = BothRandom(shape, 3);
    Pair b = BothRandom(shape, 4, -2.0f, 2.0f);
    Pair y = BothAlloc(shape);
    SLUICE_ASSERT_OK(gpu()->Multiply(a.gpu, b.gpu, &y.gpu));
    SLUICE_ASSERT_OK(cpu()->Multiply(a.cpu, b.cpu, &y.cpu));
    ExpectAgree(y, kElem, what);
    // In place: y is a, then y is b.
    SLUICE_ASSERT_OK(gpu()->Multiply(a.gpu, b.gpu, &a.gpu));
    SLUICE_ASSERT_OK(cpu()->Multiply(a.cpu, b.cpu, &a.cpu));
    ExpectAgree(a, kElem, what + " into a");
    SLUICE_ASSERT_OK(gpu()->Multiply(a.gpu, b.gpu, &b.gpu));
    SLUICE_ASSERT_OK(cpu()->Multiply(a.cpu, b.cpu, &b.cpu));
    ExpectAgree(b, kElem, what + " into b");
  }
}

// The mask is the CPU backend's bit for bit: the same Philox draws, the
// same keep value. Sizes not divisible by 4 end inside a Philox block;
// seeds and streams beyond 32 bits use both key and counter words.
TEST_P(DenseTest, DropoutMaskIsTheCpuMaskBitForBit) {
  for (uint64_t seed : {uint64_t{0}, uint64_t{1}, uint64_t{42}, (uint64_t{1} << 40) + 3}) {
    for (uint64_t stream : {uint64_t{0}, uint64_t{7}, (uint64_t{5} << 33) + 1}) {
      for (int64_t n : {1, 2, 3, 5, 17, 1023, 4097}) {
        for (float rate : {0.0f, 0.1f, 0.5f, 0.9f}) {
          const std::string what = "DropoutMask seed " + std::to_string(seed) + " stream " +
                                   std::to_string(stream) + " n " + std::to_string(n) + " rate " +
                                   std::to_string(rate);
          Pair m = Filled(Shape{n}, kNaN);
          SLUICE_ASSERT_OK(gpu()->DropoutMask(rate, seed, stream, &m.gpu));
          SLUICE_ASSERT_OK(cpu()->DropoutMask(rate, seed, stream, &m.cpu));
          SLUICE_ASSERT_OK_AND_ASSIGN(Tensor g, gpu()->ToHost(m.gpu));
          SLUICE_ASSERT_OK_AND_ASSIGN(Tensor c, cpu()->ToHost(m.cpu));
          ASSERT_EQ(std::memcmp(g.raw_data(), c.raw_data(), g.byte_size()), 0) << what;
        }
      }
    }
  }
  // A 2-D mask is the same sequence in row-major order; an empty one is fine.
  Pair m = BothAlloc(Shape{3, 7});
  SLUICE_ASSERT_OK(gpu()->DropoutMask(0.3f, 9, 2, &m.gpu));
  SLUICE_ASSERT_OK(cpu()->DropoutMask(0.3f, 9, 2, &m.cpu));
  ExpectAgree(m, kExact, "DropoutMask [3,7]");
  Pair e = BothAlloc(Shape{0});
  SLUICE_EXPECT_OK(gpu()->DropoutMask(0.3f, 9, 2, &e.gpu));
}

// --- Dense algebra -----------------------------------------------------------

TEST_P(DenseTest, MatMulEveryTransposeAndBeta) {
  struct Dims {
    int64_t m, k, n;
  };
  for (const Dims& d : {Dims{1, 1, 1}, Dims{3, 5, 4}, Dims{17, 33, 9}, Dims{64, 300, 32},
                        Dims{2, 0, 3}, Dims{0, 4, 3}, Dims{3, 4, 0}}) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        for (float beta : {0.0f, 1.0f, -0.5f}) {
          const std::string what = "MatMul m " + std::to_string(d.m) + " k " + std::to_string(d.k) +
                                   " n " + std::to_string(d.n) + (ta ? " a^T" : "") +
                                   (tb ? " b^T" : "") + " beta " + std::to_string(beta);
          Pair a = BothRandom(ta ? Shape{d.k, d.m} : Shape{d.m, d.k}, 5);
          Pair b = BothRandom(tb ? Shape{d.n, d.k} : Shape{d.k, d.n}, 6);
          // beta == 0 must not read c (NaN here); otherwise c's values count.
          Pair c = beta == 0.0f ? Filled(Shape{d.m, d.n}, kNaN) : BothRandom(Shape{d.m, d.n}, 7);
          SLUICE_ASSERT_OK(gpu()->MatMul(a.gpu, ta, b.gpu, tb, beta, &c.gpu));
          SLUICE_ASSERT_OK(cpu()->MatMul(a.cpu, ta, b.cpu, tb, beta, &c.cpu));
          ExpectAgree(c, kSum, what);
        }
      }
    }
  }
}

TEST_P(DenseTest, BiasAddOverTheLastDimension) {
  for (const Shape& shape : {Shape{4}, Shape{5, 4}, Shape{2, 3, 4}, Shape{0, 4}, Shape{1, 1},
                             Shape{3, 0}, Shape{300, 7}}) {
    const int64_t c = shape.dim(shape.rank() - 1);
    Pair bias = BothRandom(Shape{c}, 8);
    Pair y = BothRandom(shape, 9);
    SLUICE_ASSERT_OK(gpu()->BiasAdd(bias.gpu, &y.gpu));
    SLUICE_ASSERT_OK(cpu()->BiasAdd(bias.cpu, &y.cpu));
    ExpectAgree(y, kElem, "BiasAdd " + shape.ToString());
  }
}

// Shapes with more rows than one partial sum covers (256), and beta
// accumulating into db or (beta == 0) ignoring its NaNs.
TEST_P(DenseTest, BiasGradSumsAllButTheLastDimension) {
  for (const Shape& shape : {Shape{4}, Shape{300, 7}, Shape{2, 3, 5, 4}, Shape{1000, 1},
                             Shape{513, 3}, Shape{0, 4}, Shape{3, 0}}) {
    for (float beta : {0.0f, 1.0f, 0.7f}) {
      const std::string what = "BiasGrad " + shape.ToString() + " beta " + std::to_string(beta);
      const int64_t c = shape.dim(shape.rank() - 1);
      Pair dy = BothRandom(shape, 10);
      Pair db = beta == 0.0f ? Filled(Shape{c}, kNaN) : BothRandom(Shape{c}, 11);
      SLUICE_ASSERT_OK(gpu()->BiasGrad(dy.gpu, beta, &db.gpu));
      SLUICE_ASSERT_OK(cpu()->BiasGrad(dy.cpu, beta, &db.cpu));
      ExpectAgree(db, kSum, what);
    }
  }
}

// --- Reductions --------------------------------------------------------------

// Sizes below, at and beyond the kernel's 8192 partial sums; the result
// is the same on every call.
TEST_P(DenseTest, SumInDoubleAndDeterministic) {
  for (int64_t n : {0, 1, 7, 8192, 8193, 100003}) {
    const std::string what = "Sum n " + std::to_string(n);
    Pair x = BothRandom(Shape{n}, 12, -1.0f, 3.0f);
    SLUICE_ASSERT_OK_AND_ASSIGN(double g, gpu()->Sum(x.gpu));
    SLUICE_ASSERT_OK_AND_ASSIGN(double c, cpu()->Sum(x.cpu));
    EXPECT_LE(std::abs(g - c), kSum.atol + kSum.rtol * std::abs(c))
        << what << ": " << g << " vs " << c;
    // Double sums of float32 values: far closer than kSum.
    EXPECT_LE(std::abs(g - c), 1e-9 * (1.0 + std::abs(c))) << what;
    SLUICE_ASSERT_OK_AND_ASSIGN(double again, gpu()->Sum(x.gpu));
    EXPECT_EQ(again, g) << what;
  }
  Pair m = BothRandom(Shape{3, 4, 5}, 13);
  SLUICE_ASSERT_OK_AND_ASSIGN(double g, gpu()->Sum(m.gpu));
  SLUICE_ASSERT_OK_AND_ASSIGN(double c, cpu()->Sum(m.cpu));
  EXPECT_NEAR(g, c, 1e-9) << "Sum [3,4,5]";
}

// Scores with ties (values from {0, 1, 2}) and NaNs, so the first maximum
// decides; class ids outside [0, c) simply never match.
TEST_P(DenseTest, CountArgMaxMatchesEveryLabelKind) {
  for (int64_t n : {0, 1, 50, 9000}) {
    for (int64_t c : {1, 3, 10}) {
      const std::string what =
          "CountArgMaxMatches n " + std::to_string(n) + " c " + std::to_string(c);
      std::mt19937 gen(static_cast<uint32_t>(n * 31 + c));
      Tensor s = Tensor::Allocate(DType::kFloat32, Shape{n, c}).value();
      Tensor dense = Tensor::Allocate(DType::kFloat32, Shape{n, c}).value();
      Tensor ids32 = Tensor::Allocate(DType::kInt32, Shape{n}).value();
      Tensor ids64 = Tensor::Allocate(DType::kInt64, Shape{n, 1}).value();
      for (int64_t i = 0; i < n * c; ++i) {
        s.flat<float>()[i] = gen() % 17 == 0 ? kNaN : static_cast<float>(gen() % 3);
        dense.flat<float>()[i] = static_cast<float>(gen() % 3);
      }
      for (int64_t i = 0; i < n; ++i) {
        const int64_t id = static_cast<int64_t>(gen() % (c + 2)) - 1;  // -1 .. c
        ids32.flat<int32_t>()[i] = static_cast<int32_t>(id);
        ids64.flat<int64_t>()[i] = id;
      }
      Pair scores = Both(s);
      for (const Tensor* labels : {&ids32, &ids64, &dense}) {
        Pair l{gpu()->ToDevice(*labels).value(), cpu()->ToDevice(*labels).value()};
        SLUICE_ASSERT_OK_AND_ASSIGN(int64_t g, gpu()->CountArgMaxMatches(scores.gpu, l.gpu));
        SLUICE_ASSERT_OK_AND_ASSIGN(int64_t want, cpu()->CountArgMaxMatches(scores.cpu, l.cpu));
        EXPECT_EQ(g, want) << what << " labels " << DTypeName(labels->dtype())
                           << labels->shape().ToString();
      }
    }
  }
}

// --- Errors ------------------------------------------------------------------

TEST_P(DenseTest, RejectsWhatTheCpuBackendRejects) {
  auto both = [&](DType dtype, const Shape& shape) {
    return Pair{gpu()->Allocate(dtype, shape).value(), cpu()->Allocate(dtype, shape).value()};
  };
  Pair f4 = both(DType::kFloat32, Shape{4});
  Pair f5 = both(DType::kFloat32, Shape{5});
  Pair f23 = both(DType::kFloat32, Shape{2, 3});
  Pair f32 = both(DType::kFloat32, Shape{3, 2});
  Pair f22 = both(DType::kFloat32, Shape{2, 2});
  Pair f20 = both(DType::kFloat32, Shape{2, 0});
  Pair i4 = both(DType::kInt32, Shape{4});
  Pair i2 = both(DType::kInt32, Shape{2});
  Pair i21 = both(DType::kInt32, Shape{2, 1});
  Pair u2 = both(DType::kUInt8, Shape{2});
  Pair scalar = both(DType::kFloat32, Shape{});

  ExpectSameError(gpu()->Fill(1.0f, nullptr), cpu()->Fill(1.0f, nullptr), "Fill null");
  ExpectSameError(gpu()->Fill(1.0f, &i4.gpu), cpu()->Fill(1.0f, &i4.cpu), "Fill int32");
  ExpectSameError(gpu()->Cast(i4.gpu, 1.0f, &f5.gpu), cpu()->Cast(i4.cpu, 1.0f, &f5.cpu),
                  "Cast shapes");
  ExpectSameError(gpu()->Cast(f4.gpu, 1.0f, &i4.gpu), cpu()->Cast(f4.cpu, 1.0f, &i4.cpu),
                  "Cast to int32");
  ExpectSameError(gpu()->Cast(f4.gpu, 1.0f, nullptr), cpu()->Cast(f4.cpu, 1.0f, nullptr),
                  "Cast null");
  ExpectSameError(gpu()->Axpby(1.0f, f4.gpu, 0.0f, &f5.gpu),
                  cpu()->Axpby(1.0f, f4.cpu, 0.0f, &f5.cpu), "Axpby shapes");
  ExpectSameError(gpu()->Axpby(1.0f, i4.gpu, 0.0f, &f4.gpu),
                  cpu()->Axpby(1.0f, i4.cpu, 0.0f, &f4.cpu), "Axpby int32");
  ExpectSameError(gpu()->Multiply(f4.gpu, f5.gpu, &f4.gpu),
                  cpu()->Multiply(f4.cpu, f5.cpu, &f4.cpu), "Multiply a b");
  ExpectSameError(gpu()->Multiply(f4.gpu, f4.gpu, &f5.gpu),
                  cpu()->Multiply(f4.cpu, f4.cpu, &f5.cpu), "Multiply a y");
  for (float rate : {1.0f, -0.1f, 2.0f, kNaN}) {
    ExpectSameError(gpu()->DropoutMask(rate, 1, 2, &f4.gpu),
                    cpu()->DropoutMask(rate, 1, 2, &f4.cpu), "DropoutMask " + std::to_string(rate));
  }
  ExpectSameError(gpu()->DropoutMask(0.5f, 1, 2, &i4.gpu), cpu()->DropoutMask(0.5f, 1, 2, &i4.cpu),
                  "DropoutMask int32");

  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const std::string t = std::string(ta ? " a^T" : "") + (tb ? " b^T" : "");
      ExpectSameError(gpu()->MatMul(f4.gpu, ta, f23.gpu, tb, 0.0f, &f22.gpu),
                      cpu()->MatMul(f4.cpu, ta, f23.cpu, tb, 0.0f, &f22.cpu), "MatMul 1-D" + t);
      // [2,3] · [2,3]: the inner dimensions differ unless exactly one is
      // transposed; then c must be [3,3] or [2,2].
      ExpectSameError(gpu()->MatMul(f23.gpu, ta, f23.gpu, tb, 0.0f, &f32.gpu),
                      cpu()->MatMul(f23.cpu, ta, f23.cpu, tb, 0.0f, &f32.cpu), "MatMul dims" + t);
      ExpectSameError(gpu()->MatMul(f23.gpu, ta, f32.gpu, tb, 0.0f, nullptr),
                      cpu()->MatMul(f23.cpu, ta, f32.cpu, tb, 0.0f, nullptr), "MatMul null" + t);
    }
  }
  ExpectSameError(gpu()->MatMul(f23.gpu, false, i2.gpu, false, 0.0f, &f22.gpu),
                  cpu()->MatMul(f23.cpu, false, i2.cpu, false, 0.0f, &f22.cpu), "MatMul int32");

  ExpectSameError(gpu()->BiasAdd(f23.gpu, &f23.gpu), cpu()->BiasAdd(f23.cpu, &f23.cpu),
                  "BiasAdd 2-D bias");
  ExpectSameError(gpu()->BiasAdd(f4.gpu, &f23.gpu), cpu()->BiasAdd(f4.cpu, &f23.cpu),
                  "BiasAdd channels");
  ExpectSameError(gpu()->BiasAdd(f4.gpu, &scalar.gpu), cpu()->BiasAdd(f4.cpu, &scalar.cpu),
                  "BiasAdd scalar y");
  ExpectSameError(gpu()->BiasGrad(f23.gpu, 0.0f, &f4.gpu), cpu()->BiasGrad(f23.cpu, 0.0f, &f4.cpu),
                  "BiasGrad channels");
  ExpectSameError(gpu()->BiasGrad(scalar.gpu, 0.0f, &f4.gpu),
                  cpu()->BiasGrad(scalar.cpu, 0.0f, &f4.cpu), "BiasGrad scalar dy");
  ExpectSameError(gpu()->BiasGrad(f23.gpu, 1.0f, nullptr), cpu()->BiasGrad(f23.cpu, 1.0f, nullptr),
                  "BiasGrad null");

  ExpectSameError(gpu()->Sum(i4.gpu).status(), cpu()->Sum(i4.cpu).status(), "Sum int32");
  auto count = [&](const Pair& s, const Pair& l, const std::string& what) {
    ExpectSameError(gpu()->CountArgMaxMatches(s.gpu, l.gpu).status(),
                    cpu()->CountArgMaxMatches(s.cpu, l.cpu).status(), what);
  };
  count(f4, i4, "scores 1-D");
  count(f20, i2, "scores without classes");
  count(i21, i2, "int32 scores");
  count(f23, i4, "ids of another length");
  count(f23, both(DType::kInt32, Shape{2, 2}), "ids [n, 2]");
  count(f23, both(DType::kInt64, Shape{2, 3}), "int64 ids [n, c]");
  count(f23, f32, "dense labels of another shape");
  count(f23, u2, "uint8 labels");
  SLUICE_EXPECT_OK(gpu()->Synchronize());
}

// Ids [n, 1] are accepted beside [n] (the rejections above are [n, 2]).
TEST_P(DenseTest, CountArgMaxMatchesAcceptsIdsOfShapeN1) {
  Pair s = BothRandom(Shape{2, 3}, 14);
  Tensor ids = Tensor::FromVector<int32_t>(std::vector<int32_t>{0, 2}, Shape{2, 1}).value();
  Pair l{gpu()->ToDevice(ids).value(), cpu()->ToDevice(ids).value()};
  SLUICE_ASSERT_OK_AND_ASSIGN(int64_t g, gpu()->CountArgMaxMatches(s.gpu, l.gpu));
  SLUICE_ASSERT_OK_AND_ASSIGN(int64_t c, cpu()->CountArgMaxMatches(s.cpu, l.cpu));
  EXPECT_EQ(g, c);
}

// --- cuBLAS ------------------------------------------------------------------

// The library MatMul uses on a GPU opens here and every function it calls
// resolves (the GPU-only path itself needs a GPU: MatMul's tests on gpu:0).
TEST(DenseCublasTest, LoadsAndResolvesEverySymbol) {
  const Status s = gpu_backend_internal::LoadCublas();
  if (!s.ok() && s.message().find("cannot open cuBLAS") != std::string::npos) {
    GTEST_SKIP() << "cuBLAS is not installed here: " << s;
  }
  SLUICE_EXPECT_OK(s);
  SLUICE_EXPECT_OK(gpu_backend_internal::LoadCublas());  // cached
}

}  // namespace
}  // namespace sluice::gpu::testing
