// The GPU nn backend's construction, registration and memory methods.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "nn_backend_test_util.h"
#include "sluice/device/config.h"

namespace sluice::gpu::testing {
namespace {

using MemoryTest = NnBackendTest;
SLUICE_NN_BACKEND_TEST_SUITE(MemoryTest);

TEST_P(MemoryTest, DeviceAndName) {
  if (device_.is_cpu()) {
    EXPECT_EQ(gpu()->device(), Device::Cpu());
    EXPECT_NE(gpu()->name().find("host"), std::string::npos) << gpu()->name();
  } else {
    EXPECT_EQ(gpu()->device(), Device::Gpu(0));
    EXPECT_EQ(gpu()->name().rfind("gpu:0 (", 0), 0u) << gpu()->name();
  }
}

TEST_P(MemoryTest, RoundTripsEveryNumericDtype) {
  for (DType dtype : {DType::kBool, DType::kUInt8, DType::kInt32, DType::kInt64, DType::kFloat16,
                      DType::kBFloat16, DType::kFloat32, DType::kFloat64}) {
    SCOPED_TRACE(DTypeName(dtype));
    Tensor host = Tensor::Allocate(dtype, Shape{3, 5}).value();
    auto* bytes = static_cast<unsigned char*>(host.raw_data());
    for (size_t i = 0; i < host.byte_size(); ++i) bytes[i] = static_cast<unsigned char>(i * 7 + 1);
    if (dtype == DType::kBool) {
      for (size_t i = 0; i < host.byte_size(); ++i) bytes[i] &= 1;
    }
    SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor d, gpu()->ToDevice(host));
    EXPECT_EQ(d.device(), gpu()->device());
    EXPECT_EQ(d.dtype(), dtype);
    EXPECT_EQ(d.shape(), (Shape{3, 5}));
    SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor d2, gpu()->Allocate(dtype, Shape{15}));
    SLUICE_ASSERT_OK(gpu()->Copy(d, &d2));
    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor back, gpu()->ToHost(d2));
    ASSERT_EQ(back.byte_size(), host.byte_size());
    EXPECT_EQ(std::memcmp(back.raw_data(), host.raw_data(), host.byte_size()), 0);
  }
}

TEST_P(MemoryTest, ToDeviceCopiesTheHostBytes) {
  Tensor host = RandomHost(Shape{64}, 1);
  SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor d, gpu()->ToDevice(host));
  const std::vector<float> before(host.flat<float>().begin(), host.flat<float>().end());
  SLUICE_ASSERT_OK(gpu()->Synchronize());
  host.flat<float>()[0] = 1234.0f;
  EXPECT_EQ(GpuValues(d), before);
}

// CopyFromHost returns before the copy has run; the host tensor it was
// given is kept alive until it has, even when the caller drops it at once.
TEST_P(MemoryTest, CopyFromHostKeepsTheSourceAliveUntilTheCopyRuns) {
  SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor d, gpu()->Allocate(DType::kFloat32, Shape{1 << 16}));
  std::vector<float> want;
  for (int round = 0; round < 20; ++round) {
    Tensor host = RandomHost(Shape{1 << 16}, round);
    want.assign(host.flat<float>().begin(), host.flat<float>().end());
    SLUICE_ASSERT_OK(gpu()->CopyFromHost(host, &d));
  }  // every host tensor is dropped here, most before their copy ran
  EXPECT_EQ(GpuValues(d), want);
}

TEST_P(MemoryTest, ZerosAndEmptyTensors) {
  SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor z, gpu()->Zeros(DType::kInt64, Shape{4}));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor h, gpu()->ToHost(z));
  for (int64_t v : h.flat<int64_t>()) EXPECT_EQ(v, 0);
  SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor e, gpu()->Allocate(DType::kFloat32, Shape{0, 3}));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor eh, gpu()->ToHost(e));
  EXPECT_EQ(eh.num_elements(), 0);
  SLUICE_EXPECT_OK(gpu()->Copy(e, &e));
}

TEST_P(MemoryTest, RejectsBadArguments) {
  EXPECT_EQ(gpu()->Allocate(DType::kString, Shape{2}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(gpu()->Allocate(DType::kFloat32, Shape{-1, 2}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(gpu()->ToDevice(Tensor::StringScalar("x")).status().code(),
            StatusCode::kInvalidArgument);
  SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor d, gpu()->Allocate(DType::kFloat32, Shape{4}));
  Status s = gpu()->CopyFromHost(RandomHost(Shape{5}, 1), &d);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("CopyFromHost: element counts differ"), std::string::npos) << s;
  EXPECT_EQ(gpu()->CopyFromHost(RandomHost(Shape{4}, 1), nullptr).code(),
            StatusCode::kInvalidArgument);
  SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor i, gpu()->Allocate(DType::kInt32, Shape{4}));
  s = gpu()->Copy(i, &d);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("Copy: dst must be int32"), std::string::npos) << s;
  SLUICE_EXPECT_OK(gpu()->Synchronize());
}

// RegisterNnBackend makes nn::GetBackend serve GPUs: with a GPU, the
// backend of gpu:0; without one, GpuAvailability()'s reason, not "the gpu
// module is not built or registered".
TEST(NnBackendRegistrationTest, GetBackendServesGpus) {
  RegisterNnBackend();
  RegisterNnBackend();  // idempotent
  Result<nn::Backend*> b = nn::GetBackend(Device::Gpu(0));
  if (Status s = GpuAvailability(); s.ok()) {
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ((*b)->device(), Device::Gpu(0));
  } else {
    ASSERT_FALSE(b.ok());
    EXPECT_EQ(b.status().message().find("RegisterNnBackend"), std::string::npos) << b.status();
    EXPECT_EQ(b.status().code(), s.code()) << b.status();
  }
}

}  // namespace
}  // namespace sluice::gpu::testing
