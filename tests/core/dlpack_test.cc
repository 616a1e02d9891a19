#include "sluice/core/dlpack.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <numeric>
#include <vector>

#include "test_util.h"

namespace sluice {
namespace {

// A DLManagedTensor as another framework would make it: its own bytes,
// shape and strides, and a deleter that counts its calls.
struct Foreign {
  Foreign(DLDataType dtype, std::vector<int64_t> dims, size_t bytes)
      : data(bytes), shape(std::move(dims)) {
    std::iota(data.begin(), data.end(), uint8_t{1});
    managed.dl_tensor.data = data.data();
    managed.dl_tensor.device = {kDLCPU, 0};
    managed.dl_tensor.ndim = static_cast<int>(shape.size());
    managed.dl_tensor.dtype = dtype;
    managed.dl_tensor.shape = shape.data();
    managed.dl_tensor.strides = nullptr;
    managed.dl_tensor.byte_offset = 0;
    managed.manager_ctx = this;
    managed.deleter = [](DLManagedTensor* self) {
      ++static_cast<Foreign*>(self->manager_ctx)->deleted;
    };
  }
  void SetStrides(std::vector<int64_t> s) {
    strides = std::move(s);
    managed.dl_tensor.strides = strides.data();
  }

  std::vector<uint8_t> data;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  DLManagedTensor managed{};
  int deleted = 0;
};

constexpr DLDataType kFloat32{kDLFloat, 32, 1};

struct DTypeCase {
  DType dtype;
  DLDataType dl;
  DType back;  // what FromDLPack makes of `dl`
};

const DTypeCase kDTypeCases[] = {
    {DType::kBool, {kDLUInt, 8, 1}, DType::kUInt8},  // DLPack 0.6 has no kDLBool
    {DType::kUInt8, {kDLUInt, 8, 1}, DType::kUInt8},
    {DType::kInt32, {kDLInt, 32, 1}, DType::kInt32},
    {DType::kInt64, {kDLInt, 64, 1}, DType::kInt64},
    {DType::kFloat16, {kDLFloat, 16, 1}, DType::kFloat16},
    {DType::kBFloat16, {kDLBfloat, 16, 1}, DType::kBFloat16},
    {DType::kFloat32, {kDLFloat, 32, 1}, DType::kFloat32},
    {DType::kFloat64, {kDLFloat, 64, 1}, DType::kFloat64},
};

TEST(DLPackTest, RoundTripEveryDTypeSharesTheBytes) {
  for (const DTypeCase& c : kDTypeCases) {
    SCOPED_TRACE(DTypeName(c.dtype));
    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor t, Tensor::Allocate(c.dtype, Shape{2, 3, 4}));
    auto* bytes = static_cast<uint8_t*>(t.raw_data());
    for (size_t i = 0; i < t.byte_size(); ++i) {
      bytes[i] = c.dtype == DType::kBool ? i % 2 : static_cast<uint8_t>(i * 7 + 3);
    }
    SLUICE_ASSERT_OK_AND_ASSIGN(DLManagedTensor * m, ToDLPack(t));
    const DLTensor& dl = m->dl_tensor;
    EXPECT_EQ(dl.data, t.raw_data());
    EXPECT_EQ(dl.byte_offset, 0u);
    EXPECT_EQ(dl.device.device_type, kDLCPU);
    EXPECT_EQ(dl.device.device_id, 0);
    EXPECT_EQ(dl.dtype.code, c.dl.code);
    EXPECT_EQ(dl.dtype.bits, c.dl.bits);
    EXPECT_EQ(dl.dtype.lanes, 1);
    ASSERT_EQ(dl.ndim, 3);
    EXPECT_EQ(std::vector<int64_t>(dl.shape, dl.shape + 3), (std::vector<int64_t>{2, 3, 4}));
    ASSERT_NE(dl.strides, nullptr);
    EXPECT_EQ(std::vector<int64_t>(dl.strides, dl.strides + 3), (std::vector<int64_t>{12, 4, 1}));

    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor back, FromDLPack(m));
    EXPECT_EQ(back.dtype(), c.back);
    EXPECT_EQ(back.shape(), t.shape());
    EXPECT_EQ(back.raw_data(), t.raw_data());
    EXPECT_EQ(back.device(), Device::Cpu());
    ASSERT_EQ(back.byte_size(), t.byte_size());
    EXPECT_EQ(std::memcmp(back.raw_data(), bytes, t.byte_size()), 0);
  }
}

TEST(DLPackTest, ScalarAndEmptyTensorsRoundTrip) {
  Tensor scalar = Tensor::Scalar<int64_t>(42);
  SLUICE_ASSERT_OK_AND_ASSIGN(DLManagedTensor * m, ToDLPack(scalar));
  EXPECT_EQ(m->dl_tensor.ndim, 0);
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor back, FromDLPack(m));
  EXPECT_EQ(back.shape(), Shape{});
  EXPECT_EQ(back.scalar<int64_t>(), 42);

  Tensor empty;  // float32[0], no buffer
  SLUICE_ASSERT_OK_AND_ASSIGN(m, ToDLPack(empty));
  EXPECT_EQ(m->dl_tensor.ndim, 1);
  EXPECT_EQ(m->dl_tensor.shape[0], 0);
  SLUICE_ASSERT_OK_AND_ASSIGN(back, FromDLPack(m));
  EXPECT_EQ(back.shape(), Shape{0});
  EXPECT_EQ(back.dtype(), DType::kFloat32);
}

TEST(DLPackTest, ExportedSliceStartsAtItsFirstElement) {
  SLUICE_ASSERT_OK_AND_ASSIGN(
      Tensor t, Tensor::FromVector<int32_t>(
                    std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, Shape{4, 3}));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor rows, t.Slice(1, 3));
  ASSERT_NE(rows.buffer_offset(), 0u);
  SLUICE_ASSERT_OK_AND_ASSIGN(DLManagedTensor * m, ToDLPack(rows));
  EXPECT_EQ(m->dl_tensor.data, t.flat<int32_t>().data() + 3);
  EXPECT_EQ(m->dl_tensor.byte_offset, 0u);
  EXPECT_EQ(m->dl_tensor.shape[0], 2);
  EXPECT_EQ(m->dl_tensor.shape[1], 3);
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor back, FromDLPack(m));
  EXPECT_EQ(back.flat<int32_t>().data(), rows.flat<int32_t>().data());
  EXPECT_EQ(back.DebugString(), "int32[2,3] {3, 4, 5, 6, 7, 8}");
  // A view of the import is a view of the same bytes.
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor row, back.Row(1));
  EXPECT_EQ(row.flat<int32_t>().data(), t.flat<int32_t>().data() + 6);
}

TEST(DLPackTest, ImportStartsAtByteOffset) {
  Foreign f(kFloat32, {2, 2}, 24);  // 8 bytes before the 16 of the tensor
  f.managed.dl_tensor.byte_offset = 8;
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor t, FromDLPack(&f.managed));
  EXPECT_EQ(t.raw_data(), f.data.data() + 8);
  float expected[4];
  std::memcpy(expected, f.data.data() + 8, sizeof(expected));
  EXPECT_EQ(std::memcmp(t.flat<float>().data(), expected, sizeof(expected)), 0);
}

TEST(DLPackTest, ImportAcceptsAMisalignedByteOffset) {
  Foreign f(kFloat32, {3}, 13);
  f.managed.dl_tensor.byte_offset = 1;
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor t, FromDLPack(&f.managed));
  EXPECT_EQ(t.raw_data(), f.data.data() + 1);
}

TEST(DLPackTest, DeleterRunsOnceAfterTheLastTensorIsDropped) {
  Foreign f(kFloat32, {4, 2}, 32);
  {
    std::optional<Tensor> t;
    SLUICE_ASSERT_OK_AND_ASSIGN(t, FromDLPack(&f.managed));
    Tensor copy = *t;
    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor slice, t->Slice(1, 3));
    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor flat, t->Reshape(Shape{8}));
    t.reset();
    copy = Tensor();
    EXPECT_EQ(f.deleted, 0);
    slice = Tensor();
    EXPECT_EQ(f.deleted, 0);  // `flat` still shares the bytes
    EXPECT_EQ(flat.raw_data(), f.data.data());
  }
  EXPECT_EQ(f.deleted, 1);
}

TEST(DLPackTest, ImportWithoutDeleterIsAccepted) {
  Foreign f(kFloat32, {2}, 8);
  f.managed.deleter = nullptr;
  { SLUICE_ASSERT_OK_AND_ASSIGN(Tensor t, FromDLPack(&f.managed)); }
  EXPECT_EQ(f.deleted, 0);
}

TEST(DLPackTest, ExportKeepsTheBufferAliveUntilTheDeleter) {
  auto bytes = std::make_unique<float[]>(6);
  for (int i = 0; i < 6; ++i) bytes[i] = 0.5f * i;
  int released = 0;
  DLManagedTensor* m = nullptr;
  {
    Buffer buffer = Buffer::Wrap(bytes.get(), 6 * sizeof(float), [&] { ++released; });
    SLUICE_ASSERT_OK_AND_ASSIGN(
        Tensor t, Tensor::FromBuffer(DType::kFloat32, Shape{2, 3}, std::move(buffer)));
    SLUICE_ASSERT_OK_AND_ASSIGN(m, ToDLPack(t));
  }
  EXPECT_EQ(released, 0);  // the source Tensor is gone; the managed tensor holds the bytes
  EXPECT_EQ(m->dl_tensor.data, bytes.get());
  EXPECT_EQ(static_cast<float*>(m->dl_tensor.data)[5], 2.5f);
  m->deleter(m);
  EXPECT_EQ(released, 1);
}

TEST(DLPackTest, ExportedThenImportedReleasesThroughBothOwners) {
  int released = 0;
  std::vector<float> bytes(4, 1.0f);
  DLManagedTensor* m = nullptr;
  {
    SLUICE_ASSERT_OK_AND_ASSIGN(
        Tensor t, Tensor::FromBuffer(DType::kFloat32, Shape{4},
                                     Buffer::Wrap(bytes.data(), 16, [&] { ++released; })));
    SLUICE_ASSERT_OK_AND_ASSIGN(m, ToDLPack(t));
  }
  std::optional<Tensor> back;
  SLUICE_ASSERT_OK_AND_ASSIGN(back, FromDLPack(m));
  EXPECT_EQ(released, 0);
  back.reset();  // runs the exported deleter, which drops the last Tensor
  EXPECT_EQ(released, 1);
}

TEST(DLPackTest, GpuTensorExportsKDLCUDAAndImportsBackToItsGpu) {
  std::vector<float> host(6, 3.0f);  // host memory standing in for gpu:N's
  for (int gpu : {0, 2}) {
    SCOPED_TRACE(gpu);
    int released = 0;
    {
      Buffer device_bytes = Buffer::WrapDevice(
          host.data(), 24, [&] { ++released; }, Device::Gpu(gpu), nullptr);
      SLUICE_ASSERT_OK_AND_ASSIGN(
          Tensor t, Tensor::FromBuffer(DType::kFloat32, Shape{2, 3}, std::move(device_bytes)));
      ASSERT_EQ(t.device(), Device::Gpu(gpu));
      SLUICE_ASSERT_OK_AND_ASSIGN(DLManagedTensor * m, ToDLPack(t));
      EXPECT_EQ(m->dl_tensor.device.device_type, kDLCUDA);
      EXPECT_EQ(m->dl_tensor.device.device_id, gpu);
      EXPECT_EQ(m->dl_tensor.data, host.data());
      SLUICE_ASSERT_OK_AND_ASSIGN(Tensor back, FromDLPack(m));
      EXPECT_EQ(back.device(), Device::Gpu(gpu));
      EXPECT_EQ(back.raw_data(), host.data());
      EXPECT_EQ(back.shape(), (Shape{2, 3}));
      EXPECT_EQ(back.buffer().device_uses(), nullptr);
    }
    EXPECT_EQ(released, 1);
  }
}

TEST(DLPackTest, ForeignCudaAndPinnedTensorsImport) {
  Foreign cuda(kFloat32, {2}, 8);
  cuda.managed.dl_tensor.device = {kDLCUDA, 1};
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor on_gpu, FromDLPack(&cuda.managed));
  EXPECT_EQ(on_gpu.device(), Device::Gpu(1));

  Foreign pinned(kFloat32, {2}, 8);
  pinned.managed.dl_tensor.device = {kDLCUDAHost, 0};
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor on_host, FromDLPack(&pinned.managed));
  EXPECT_EQ(on_host.device(), Device::Cpu());
  EXPECT_EQ(on_host.raw_data(), pinned.data.data());
}

TEST(DLPackTest, ImportReadsDLPack08Bool) {
  Foreign f(DLDataType{6, 8, 1}, {3}, 3);  // kDLBool of DLPack 0.8
  f.data = {1, 0, 1};
  f.managed.dl_tensor.data = f.data.data();
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor t, FromDLPack(&f.managed));
  EXPECT_EQ(t.dtype(), DType::kBool);
  EXPECT_EQ(t.DebugString(), "bool[3] {1, 0, 1}");
}

TEST(DLPackTest, CompactStridesAndAnyStrideOfSizeOneDimsImport) {
  Foreign f(kFloat32, {2, 1, 3}, 24);
  f.SetStrides({3, 3, 1});
  SLUICE_EXPECT_OK(FromDLPack(&f.managed).status());
  f.SetStrides({3, 999, 1});  // dimension 1 is never stepped over
  SLUICE_EXPECT_OK(FromDLPack(&f.managed).status());
  Foreign empty(kFloat32, {0, 3}, 0);
  empty.SetStrides({7, 5});  // no elements: nothing is addressed
  SLUICE_EXPECT_OK(FromDLPack(&empty.managed).status());
}

// Every refusal leaves `managed` to the caller: its deleter has not run.
void ExpectRefused(Foreign& f, const std::string& substr) {
  SLUICE_EXPECT_ERROR(FromDLPack(&f.managed), StatusCode::kInvalidArgument, substr);
  EXPECT_EQ(f.deleted, 0) << substr;
}

TEST(DLPackTest, ImportRefusesWhatSluiceCannotHold) {
  SLUICE_EXPECT_ERROR(FromDLPack(nullptr), StatusCode::kInvalidArgument, "null DLManagedTensor");
  {
    Foreign f(DLDataType{kDLInt, 16, 1}, {2}, 4);
    ExpectRefused(f, "int16");
  }
  {
    Foreign f(DLDataType{kDLComplex, 64, 1}, {2}, 16);
    ExpectRefused(f, "complex64");
  }
  {
    Foreign f(DLDataType{kDLUInt, 16, 1}, {2}, 4);
    ExpectRefused(f, "uint16");
  }
  {
    Foreign f(DLDataType{kDLFloat, 32, 4}, {2}, 32);
    ExpectRefused(f, "4 lanes");
  }
  {
    Foreign f(kFloat32, {3, 2}, 24);
    f.SetStrides({1, 3});  // a transposed [2,3]
    ExpectRefused(f, "strides [1, 3] of shape [3,2] are not compact row-major");
  }
  {
    Foreign f(kFloat32, {2, 3}, 48);
    f.SetStrides({6, 2});  // every other column
    ExpectRefused(f, "dimension 1 has stride 2, not 1");
  }
  {
    Foreign f(kFloat32, {2, -3}, 24);
    ExpectRefused(f, "dimension 1 is negative (-3)");
  }
  {
    Foreign f(kFloat32, {2}, 8);
    f.managed.dl_tensor.ndim = -1;
    ExpectRefused(f, "negative ndim -1");
  }
  {
    Foreign f(kFloat32, {2}, 8);
    f.managed.dl_tensor.shape = nullptr;
    ExpectRefused(f, "null shape");
  }
  {
    Foreign f(kFloat32, {int64_t{1} << 40, int64_t{1} << 40}, 8);
    ExpectRefused(f, "more bytes than an address space");
  }
  {
    Foreign f(kFloat32, {2}, 8);
    f.managed.dl_tensor.data = nullptr;
    ExpectRefused(f, "null data");
  }
  {
    Foreign f(kFloat32, {2}, 8);
    f.managed.dl_tensor.device = {kDLOpenCL, 0};
    ExpectRefused(f, "kDLOpenCL");
  }
  {
    Foreign f(kFloat32, {2}, 8);
    f.managed.dl_tensor.device = {kDLROCM, 0};
    ExpectRefused(f, "kDLROCM");
  }
  {
    Foreign f(kFloat32, {2}, 8);
    f.managed.dl_tensor.device = {kDLCUDAManaged, 0};
    ExpectRefused(f, "kDLCUDAManaged");
  }
  {
    Foreign f(kFloat32, {2}, 8);
    f.managed.dl_tensor.device = {kDLCUDA, -1};
    ExpectRefused(f, "kDLCUDA device id -1");
  }
  // After a refusal the caller still owns the tensor and can release it.
  Foreign f(DLDataType{kDLInt, 16, 1}, {2}, 4);
  ASSERT_FALSE(FromDLPack(&f.managed).ok());
  f.managed.deleter(&f.managed);
  EXPECT_EQ(f.deleted, 1);
}

TEST(DLPackTest, StringTensorsAreRefused) {
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor s, Tensor::FromStrings({"a", "bc"}));
  SLUICE_EXPECT_ERROR(ToDLPack(s), StatusCode::kInvalidArgument, "string[2]");
}

}  // namespace
}  // namespace sluice
