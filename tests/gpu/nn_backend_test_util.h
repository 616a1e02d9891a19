// The GPU nn backend's tests: a fixture run once per device ("cpu:0",
// where the backend's kernels run as host loops, everywhere; "gpu:0",
// skipped without a GPU), with the CPU backend as the reference the GPU
// backend must agree with (nn/cpu/ is itself checked against naive double
// references in tests/nn/backend_test.cc).
//
// Agreement tolerances (|gpu - cpu| <= atol + rtol · |cpu|), stated once:
// - kElem: elementwise ops, activations, losses and optimizer steps: a few
//   float32 roundings that may differ in order (and exp/log/tanh, whose
//   last bit differs between libm and CUDA's).
// - kSum: products, convolutions, bias gradients and reductions, which sum
//   up to thousands of float products in different orders.
// - kBf16: below.
#ifndef SLUICE_TESTS_GPU_NN_BACKEND_TEST_UTIL_H_
#define SLUICE_TESTS_GPU_NN_BACKEND_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "device_test_util.h"
#include "sluice/nn/backend.h"
#include "sluice/nn/cuda/cuda_backend.h"
#include "test_util.h"

namespace sluice::gpu::testing {

struct Tolerance {
  double atol;
  double rtol;
};
inline constexpr Tolerance kElem{1e-6, 1e-5};
inline constexpr Tolerance kSum{1e-4, 1e-4};
// - kBf16: a bfloat16 output of a computation the two backends order
//   differently: its float32 values may round to neighbouring bfloat16
//   values (one step is 2^-8 relative; 2^-7 covers a step either way).
inline constexpr Tolerance kBf16{1e-5, 0x1p-7};

// The backend of each device, made once per process.
inline nn::Backend* GpuNnBackend(const Device& device) {
  static std::map<std::string, std::unique_ptr<nn::Backend>> backends;
  std::unique_ptr<nn::Backend>& b = backends[device.ToString()];
  if (b == nullptr) b = std::move(NewNnBackend(device)).value();
  return b.get();
}

inline nn::Backend* CpuNnBackend() { return nn::GetBackend(Device::Cpu()).value(); }

// A float32 host tensor of uniform values in [lo, hi).
inline Tensor RandomHost(const Shape& shape, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(shape.num_elements());
  for (float& x : v) x = dist(gen);
  return Tensor::FromVector<float>(std::span<const float>(v), shape).value();
}

// Fixture: gpu() is the backend under test, cpu() the reference.
class NnBackendTest : public OnEachDevice {
 protected:
  void SetUp() override {
    OnEachDevice::SetUp();
    if (IsSkipped()) return;
    gpu_ = GpuNnBackend(device_);
  }
  nn::Backend* gpu() { return gpu_; }
  nn::Backend* cpu() { return CpuNnBackend(); }

  // The same host tensor on both backends.
  struct Pair {
    DeviceTensor gpu, cpu;
  };
  Pair Both(const Tensor& host) {
    return {gpu()->ToDevice(host).value(), cpu()->ToDevice(CopyOf(host)).value()};
  }
  Pair BothRandom(const Shape& shape, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
    return Both(RandomHost(shape, seed, lo, hi));
  }
  // Uninitialized float32 outputs on both backends.
  Pair BothAlloc(const Shape& shape, DType dtype = DType::kFloat32) {
    return {gpu()->Allocate(dtype, shape).value(), cpu()->Allocate(dtype, shape).value()};
  }

  std::vector<float> GpuValues(const DeviceTensor& t) { return Values(gpu(), t); }
  std::vector<float> CpuValues(const DeviceTensor& t) { return Values(cpu(), t); }

  // Expects gpu and cpu to agree element by element; names the first miss.
  void ExpectAgree(const Pair& p, Tolerance tol, const std::string& what) {
    ExpectClose(GpuValues(p.gpu), CpuValues(p.cpu), tol, what);
  }
  static void ExpectClose(const std::vector<float>& got, const std::vector<float>& want,
                          Tolerance tol, const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < got.size(); ++i) {
      const bool both_nan = std::isnan(got[i]) && std::isnan(want[i]);
      if (!both_nan && !(std::abs(got[i] - want[i]) <= tol.atol + tol.rtol * std::abs(want[i]))) {
        ADD_FAILURE() << what << ": element " << i << " is " << got[i] << " on the GPU backend, "
                      << want[i] << " on the CPU backend";
        return;
      }
    }
  }

 private:
  // A deep copy, so the CPU backend (which shares host bytes) and the GPU
  // backend never alias one buffer.
  static Tensor CopyOf(const Tensor& t) {
    Tensor c = Tensor::Allocate(t.dtype(), t.shape()).value();
    if (t.byte_size() > 0) std::memcpy(c.raw_data(), t.raw_data(), t.byte_size());
    return c;
  }
  static std::vector<float> Values(nn::Backend* b, const DeviceTensor& t) {
    Tensor h = b->ToHost(t).value();
    if (h.dtype() == DType::kBFloat16) {
      std::vector<float> out;
      for (bfloat16 v : h.flat<bfloat16>()) out.push_back(static_cast<float>(v));
      return out;
    }
    auto f = h.flat<float>();
    return std::vector<float>(f.begin(), f.end());
  }
  nn::Backend* gpu_ = nullptr;
};

#define SLUICE_NN_BACKEND_TEST_SUITE(Suite)                                     \
  INSTANTIATE_TEST_SUITE_P(Devices, Suite, ::testing::Values("cpu:0", "gpu:0"), \
                           ::sluice::gpu::testing::DeviceTestName)

}  // namespace sluice::gpu::testing

#endif  // SLUICE_TESTS_GPU_NN_BACKEND_TEST_UTIL_H_
