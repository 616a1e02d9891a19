// The bandwidth-bound kernels' fast paths (pool_kernels.cu, bias_kernels.cu,
// train_kernels.cu's linear and relu): on the host target, the vector path
// (aligned pointers, several channels or elements per thread) and the
// one-element path (the same data one element past alignment) write the
// same bits, which are those of a direct computation here; BiasGrad's
// block reduction is within one float rounding of the exact sum at sizes
// around its chunks. On each device, bfloat16 pooling, BiasAdd and
// BiasGrad at vectorizable shapes are float32 staging's bits.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "nn_backend_test_util.h"
#include "sluice/core/float16.h"
#include "sluice/nn/cuda/internal/conv_kernels.h"
#include "sluice/nn/cuda/internal/dense_kernels.h"
#include "sluice/nn/cuda/internal/train_kernels.h"
#include "sluice/nn/kit/float32_staging.h"

namespace sluice::gpu::testing {
namespace {

namespace bi = ::sluice::gpu_backend_internal;

constexpr bi::KernelTarget kHost{};  // the host loops

// n elements of float32 or bfloat16, placed `offset` elements past a
// 64-byte boundary (offset 1 defeats every vector path).
class Buf {
 public:
  Buf(int64_t n, bool bf16, int offset)
      : n_(n), bf16_(bf16), bytes_(static_cast<size_t>(n + 8) * Elem() + 64) {
    const uintptr_t base = reinterpret_cast<uintptr_t>(bytes_.data());
    p_ = bytes_.data() + ((64 - base % 64) % 64) + offset * Elem();
  }
  Buf(const std::vector<float>& v, bool bf16, int offset)
      : Buf(static_cast<int64_t>(v.size()), bf16, offset) {
    for (int64_t i = 0; i < n_; ++i) Set(i, v[i]);
  }
  size_t Elem() const { return bf16_ ? 2 : 4; }
  void* data() { return p_; }
  void Set(int64_t i, float v) {
    if (bf16_) {
      const uint16_t b = bfloat16(v).bits;
      std::memcpy(p_ + i * 2, &b, 2);
    } else {
      std::memcpy(p_ + i * 4, &v, 4);
    }
  }
  float Get(int64_t i) const {
    if (bf16_) {
      uint16_t b;
      std::memcpy(&b, p_ + i * 2, 2);
      return static_cast<float>(bfloat16::FromBits(b));
    }
    float f;
    std::memcpy(&f, p_ + i * 4, 4);
    return f;
  }
  std::vector<uint32_t> Bits() const {
    std::vector<uint32_t> out(n_);
    for (int64_t i = 0; i < n_; ++i) {
      const float f = Get(i);
      std::memcpy(&out[i], &f, 4);
    }
    return out;
  }

 private:
  int64_t n_;
  bool bf16_;
  std::vector<unsigned char> bytes_;
  unsigned char* p_;
};

// v as a float32 (or, when bf16, rounded to bfloat16) value, as stored.
float Stored(float v, bool bf16) { return bf16 ? static_cast<float>(bfloat16(v)) : v; }

std::vector<float> Values(int64_t n, uint32_t seed, bool integers = false) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(integers ? 0.0f : -4.0f, integers ? 3.0f : 4.0f);
  std::vector<float> v(n);
  for (float& x : v) x = integers ? std::floor(dist(gen)) : dist(gen);
  if (!integers && n > 3) v[1] = 0.0f, v[2] = -0.0f;
  return v;
}

uint32_t BitsOf(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

struct Types {
  bool in_bf16, out_bf16;
};
const Types kTypeMixes[] = {{false, false}, {true, true}, {true, false}, {false, true}};

// Relu and linear, forward and backward, over a count with a short last run.
TEST(VectorKernelsTest, ReluAndLinearEqualTheOneElementPathAndTheDirectValues) {
  constexpr int64_t kCount = 8 * 37 + 5;
  const std::vector<float> x = Values(kCount, 1), dy = Values(kCount, 2);
  for (const Types t : kTypeMixes) {
    for (bi::ActivationKind f : {bi::ActivationKind::kLinear, bi::ActivationKind::kRelu}) {
      const std::string what = std::string(f == bi::ActivationKind::kRelu ? "relu" : "linear") +
                               (t.in_bf16 ? " bf16" : " f32") + (t.out_bf16 ? "->bf16" : "->f32");
      for (int offset : {0, 1}) {
        Buf xb(x, t.in_bf16, offset), yb(kCount, t.out_bf16, offset);
        bi::ActivationForwardArgs fa;
        fa.f = f;
        fa.x = xb.data();
        fa.y = yb.data();
        fa.count = kCount;
        fa.x_bf16 = t.in_bf16;
        fa.y_bf16 = t.out_bf16;
        ASSERT_EQ(bi::RunActivationForward(fa, kHost), 0);
        Buf dyb(dy, t.in_bf16, offset), dxb(kCount, t.out_bf16, offset);
        bi::ActivationBackwardArgs ba;
        ba.f = f;
        ba.y = yb.data();
        ba.dy = dyb.data();
        ba.dx = dxb.data();
        ba.count = kCount;
        ba.y_bf16 = t.out_bf16;
        ba.dy_bf16 = t.in_bf16;
        ba.dx_bf16 = t.out_bf16;
        ASSERT_EQ(bi::RunActivationBackward(ba, kHost), 0);
        for (int64_t i = 0; i < kCount; ++i) {
          const float xi = Stored(x[i], t.in_bf16);
          const bool relu = f == bi::ActivationKind::kRelu;
          const float want_y = Stored(relu ? (xi > 0.0f ? xi : 0.0f) : xi, t.out_bf16);
          ASSERT_EQ(BitsOf(yb.Get(i)), BitsOf(want_y)) << what << " offset " << offset << " y" << i;
          const float dyi = Stored(dy[i], t.in_bf16);
          const float want_dx = Stored(relu ? (want_y > 0.0f ? dyi : 0.0f) : dyi, t.out_bf16);
          ASSERT_EQ(BitsOf(dxb.Get(i)), BitsOf(want_dx))
              << what << " offset " << offset << " dx" << i;
        }
      }
    }
  }
}

TEST(VectorKernelsTest, BiasAddEqualsTheOneElementPathAndTheDirectValues) {
  for (int64_t c : {8, 16, 64, 5}) {
    constexpr int64_t kRows = 13;
    const std::vector<float> y = Values(kRows * c, 3), bias = Values(c, 4);
    for (const Types t : kTypeMixes) {  // bias, y
      for (int offset : {0, 1}) {
        Buf bb(bias, t.in_bf16, offset), yb(y, t.out_bf16, offset);
        const bi::BiasAddArgs a{bb.data(), yb.data(), kRows, c, t.in_bf16, t.out_bf16};
        ASSERT_EQ(bi::RunBiasAdd(a, kHost), 0);
        for (int64_t i = 0; i < kRows * c; ++i) {
          const float want =
              Stored(Stored(y[i], t.out_bf16) + Stored(bias[i % c], t.in_bf16), t.out_bf16);
          ASSERT_EQ(BitsOf(yb.Get(i)), BitsOf(want))
              << "c " << c << " offset " << offset << " element " << i;
        }
      }
    }
  }
}

// A pooling window geometry (nn::kit::ConvGeometry's rules for VALID and
// SAME).
bi::WindowGeometry Geometry(int64_t n, int64_t h, int64_t w, int64_t c, int64_t k, int64_t s,
                            bool same) {
  bi::WindowGeometry g;
  g.batch = n, g.in_h = h, g.in_w = w, g.in_c = c, g.out_c = c;
  g.kernel_h = g.kernel_w = k;
  g.stride_h = g.stride_w = s;
  g.out_h = same ? (h + s - 1) / s : (h - k) / s + 1;
  g.out_w = same ? (w + s - 1) / s : (w - k) / s + 1;
  if (same) {
    g.pad_top = std::max<int64_t>((g.out_h - 1) * s + k - h, 0) / 2;
    g.pad_left = std::max<int64_t>((g.out_w - 1) * s + k - w, 0) / 2;
  }
  return g;
}

// Windows apart (2x2 stride 2 on odd sizes, stride beyond the kernel, SAME
// padding) and overlapping; channels that take the 4-channel path and one
// that does not. Each output is compared between the aligned run and the
// run one element past alignment (the one-channel path) bit for bit.
TEST(VectorKernelsTest, PoolingEqualsTheOneChannelPath) {
  struct PoolCase {
    int64_t n, h, w, c, k, s;
    bool same;
  };
  const PoolCase cases[] = {{2, 8, 8, 8, 2, 2, false}, {2, 7, 9, 4, 2, 2, false},
                            {1, 7, 9, 8, 2, 2, true},  {1, 8, 10, 4, 2, 3, false},
                            {1, 7, 8, 4, 1, 2, true},  {2, 7, 7, 8, 3, 2, true},
                            {1, 6, 6, 4, 3, 1, false}, {1, 5, 7, 12, 3, 3, true}};
  for (const PoolCase& k : cases) {
    const bi::WindowGeometry g = Geometry(k.n, k.h, k.w, k.c, k.k, k.s, k.same);
    const int64_t nx = k.n * k.h * k.w * k.c, ny = k.n * g.out_h * g.out_w * k.c;
    const std::vector<float> x = Values(nx, 5, /*integers=*/true), dy = Values(ny, 6);
    for (bi::PoolKind kind : {bi::PoolKind::kMax, bi::PoolKind::kAverage}) {
      for (const Types t : kTypeMixes) {
        const std::string what =
            "x[" + std::to_string(k.n) + "," + std::to_string(k.h) + "," + std::to_string(k.w) +
            "," + std::to_string(k.c) + "] k" + std::to_string(k.k) + " s" + std::to_string(k.s) +
            (k.same ? " same " : " valid ") + (kind == bi::PoolKind::kMax ? "max" : "average") +
            (t.in_bf16 ? " bf16" : " f32") + (t.out_bf16 ? "->bf16" : "->f32");
        std::vector<uint32_t> y_bits[2], dx_bits[2];
        std::vector<int64_t> argmax[2];
        for (int offset : {0, 1}) {
          Buf xb(x, t.in_bf16, offset), yb(ny, t.out_bf16, offset);
          // The argmax one int64 past a 32-byte boundary when offset is 1.
          std::vector<int64_t> am_store(ny + 4);
          int64_t* am = am_store.data();
          while (reinterpret_cast<uintptr_t>(am) % 32 != 0) ++am;
          am += offset;
          bi::Pool2DForwardArgs fa;
          fa.g = g;
          fa.kind = kind;
          fa.x = xb.data();
          fa.y = yb.data();
          fa.argmax = am;
          fa.x_bf16 = t.in_bf16;
          fa.y_bf16 = t.out_bf16;
          ASSERT_EQ(bi::RunPool2DForward(fa, kHost), 0);
          Buf dyb(dy, t.in_bf16, offset), dxb(nx, t.out_bf16, offset);
          for (int64_t i = 0; i < nx; ++i) dxb.Set(i, NAN);  // every element must be written
          bi::Pool2DBackwardArgs ba;
          ba.g = g;
          ba.kind = kind;
          ba.dy = dyb.data();
          ba.argmax = am;
          ba.dx = dxb.data();
          ba.dy_bf16 = t.in_bf16;
          ba.dx_bf16 = t.out_bf16;
          ASSERT_EQ(bi::RunPool2DBackward(ba, kHost), 0);
          y_bits[offset] = yb.Bits();
          dx_bits[offset] = dxb.Bits();
          argmax[offset].assign(am, am + ny);
        }
        EXPECT_EQ(y_bits[0], y_bits[1]) << what << ": y";
        if (kind == bi::PoolKind::kMax) {
          EXPECT_EQ(argmax[0], argmax[1]) << what << ": argmax";
        }
        EXPECT_EQ(dx_bits[0], dx_bits[1]) << what << ": dx";
        for (uint32_t b : dx_bits[0]) {
          ASSERT_FALSE(std::isnan(std::bit_cast<float>(b))) << what << ": a dx left unwritten";
        }
      }
    }
  }
}

// BiasGrad's chunks and lanes: channel counts that fill the block's 256
// threads (16, 64), leave some idle (5, 3), take one lane each (300), row
// counts below one chunk, at chunk boundaries and past them; within one
// float rounding of the exact sum (plus beta · db).
TEST(VectorKernelsTest, BiasGradIsTheSumToOneRounding) {
  for (int64_t c : {1, 3, 5, 16, 64, 256, 300}) {
    const int64_t chunk = bi::BiasGradChunkRows(c);
    for (int64_t rows : {int64_t{0}, int64_t{1}, chunk - 1, chunk, 3 * chunk + 7}) {
      for (bool bf16 : {false, true}) {
        for (float beta : {0.0f, 0.5f}) {
          const std::string what = "c " + std::to_string(c) + " rows " + std::to_string(rows) +
                                   (bf16 ? " bf16" : " f32") + " beta " + std::to_string(beta);
          const std::vector<float> dy = Values(rows * c, 7), db0 = Values(c, 8);
          Buf dyb(dy, bf16, 0), db(db0, false, 0);
          std::vector<double> partial(std::max<int64_t>(bi::BiasGradChunks(rows, c) * c, 1));
          const bi::BiasGradArgs a{dyb.data(),       db.data(), partial.data(), rows, c, beta,
                                   /*dy_bf16=*/bf16, false};
          ASSERT_EQ(bi::RunBiasGrad(a, kHost), 0);
          for (int64_t j = 0; j < c; ++j) {
            long double exact = beta != 0.0f ? static_cast<long double>(beta) * db0[j] : 0.0L;
            for (int64_t r = 0; r < rows; ++r) exact += dyb.Get(r * c + j);
            const float want = static_cast<float>(exact);
            const float ulp = std::nextafter(std::abs(want), INFINITY) - std::abs(want);
            ASSERT_LE(std::abs(db.Get(j) - want), ulp) << what << " channel " << j;
          }
        }
      }
    }
  }
}

// On each device: the fast paths' bfloat16 results are float32 staging's.
using VectorBf16Test = NnBackendTest;
SLUICE_NN_BACKEND_TEST_SUITE(VectorBf16Test);

TEST_P(VectorBf16Test, PoolingAndBiasAreFloat32StagingBitForBit) {
  namespace staged = nn::kit::in_float32;
  nn::Backend& b = *gpu();
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
      if (BitsOf(got[i]) != BitsOf(want[i])) {
        ADD_FAILURE() << what << ": element " << i << " is " << got[i] << " native, " << want[i]
                      << " through float32 staging";
        return;
      }
    }
  };
  const DType kF = DType::kFloat32, kB = DType::kBFloat16;
  const std::vector<std::pair<DType, DType>> mixes = {{kB, kB}, {kB, kF}, {kF, kB}};
  const Shape image{2, 9, 11, 8};
  for (const nn::Window2D& w :
       {nn::Window2D{2, 2, 2, 2, nn::Padding::kValid}, nn::Window2D{3, 3, 2, 2, nn::Padding::kSame},
        nn::Window2D{2, 2, 3, 3, nn::Padding::kSame}}) {
    const Shape pooled = nn::Pool2DOutputShape(image, w).value();
    for (nn::PoolMode mode : {nn::PoolMode::kMax, nn::PoolMode::kAverage}) {
      for (const auto& [in, out] : mixes) {
        const std::string what = std::string(mode == nn::PoolMode::kMax ? "max" : "average") +
                                 " pool k" + std::to_string(w.kernel_h) + " s" +
                                 std::to_string(w.stride_h) + " " + std::string(DTypeName(in)) +
                                 " -> " + std::string(DTypeName(out));
        DeviceTensor x = input(in, 31, image);
        DeviceTensor y = b.Allocate(out, pooled).value(), y_ref = b.Allocate(out, pooled).value();
        DeviceTensor ws, ws_ref;
        SLUICE_ASSERT_OK(b.Pool2DForward(mode, x, w, &y, &ws));
        SLUICE_ASSERT_OK(staged::Pool2DForward(b, mode, x, w, &y_ref, &ws_ref));
        same_bits(y, y_ref, what);
        DeviceTensor dy = input(in, 32, pooled);
        DeviceTensor dx = b.Allocate(out, image).value(), dx_ref = b.Allocate(out, image).value();
        SLUICE_ASSERT_OK(b.Pool2DBackward(mode, x, y, dy, ws, w, &dx));
        SLUICE_ASSERT_OK(staged::Pool2DBackward(b, mode, x, y_ref, dy, ws_ref, w, &dx_ref));
        same_bits(dx, dx_ref, what + " backward");
      }
    }
  }
  const Shape act{5, 7, 16};
  for (const auto& [bias_dtype, y_dtype] : mixes) {
    const std::string what =
        std::string(DTypeName(bias_dtype)) + " / " + std::string(DTypeName(y_dtype));
    DeviceTensor bias = input(bias_dtype, 33, Shape{16});
    DeviceTensor y = input(y_dtype, 34, act), y_ref = input(y_dtype, 34, act);
    SLUICE_ASSERT_OK(b.BiasAdd(bias, &y));
    SLUICE_ASSERT_OK(staged::BiasAdd(b, bias, &y_ref));
    same_bits(y, y_ref, "BiasAdd " + what);
  }
  const Shape grad{3, 300, 16};  // 900 rows: several chunks of 16 channels
  for (const auto& [dy_dtype, db_dtype] : mixes) {
    const std::string what =
        std::string(DTypeName(dy_dtype)) + " / " + std::string(DTypeName(db_dtype));
    DeviceTensor dy = input(dy_dtype, 35, grad);
    DeviceTensor db = input(db_dtype, 36, Shape{16}), db_ref = input(db_dtype, 36, Shape{16});
    SLUICE_ASSERT_OK(b.BiasGrad(dy, 0.5f, &db));
    SLUICE_ASSERT_OK(staged::BiasGrad(b, dy, 0.5f, &db_ref));
    same_bits(db, db_ref, "BiasGrad " + what);
  }
}

}  // namespace
}  // namespace sluice::gpu::testing
