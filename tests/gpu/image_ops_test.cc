// The image ops' device twins (ops/cuda/image_ops.h) against their ops/ CPU
// kernels: the same bytes for every dtype, shape and argument tried, on the
// host backend everywhere and on a GPU when there is one; and their errors.
#include "sluice/ops/cuda/image_ops.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

#include "device_test_util.h"
#include "sluice/core/float16.h"
#include "sluice/ops/image_ops.h"
#include "sluice/ops/resize.h"

namespace sluice::gpu {
namespace {

using ::sluice::gpu::testing::DeviceTestName;
using ::sluice::gpu::testing::OnEachDevice;
using ::testing::HasSubstr;

constexpr DType kNumeric[] = {DType::kBool,    DType::kUInt8,    DType::kInt32,   DType::kInt64,
                              DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64};

// Values of `dtype` drawn from `rng`: small integers and fractions for the
// floating types, with a few specials (0, -0, inf, NaN, large) when asked.
Tensor RandomTensor(DType dtype, const Shape& shape, uint64_t seed, bool specials = false) {
  Tensor t = Tensor::Allocate(dtype, shape).value();
  Rng rng(seed);
  const int64_t n = t.num_elements();
  const double kSpecials[] = {0.0,
                              -0.0,
                              std::numeric_limits<double>::infinity(),
                              -std::numeric_limits<double>::infinity(),
                              std::nan(""),
                              3e9,
                              -3e9,
                              300.5,
                              -1.5,
                              65519.0,
                              65520.0,
                              1e-8,
                              -2147483648.0,
                              2147483648.0,
                              1e20};
  for (int64_t i = 0; i < n; ++i) {
    double v = static_cast<double>(rng.UniformInt(600)) - 200.0 + rng.UniformDouble();
    if (specials && rng.UniformInt(4) == 0) v = kSpecials[rng.UniformInt(std::size(kSpecials))];
    const int64_t k = static_cast<int64_t>(rng.UniformInt(1u << 31)) - (1ll << 30);
    switch (dtype) {
      case DType::kBool: t.flat<bool>()[i] = rng.UniformInt(2) == 1; break;
      case DType::kUInt8: t.flat<uint8_t>()[i] = static_cast<uint8_t>(rng.UniformInt(256)); break;
      case DType::kInt32:
        t.flat<int32_t>()[i] = static_cast<int32_t>(specials ? k : k % 1000);
        break;
      case DType::kInt64: t.flat<int64_t>()[i] = specials ? k * 1000003 : k % 1000; break;
      case DType::kFloat16: t.flat<float16>()[i] = float16(static_cast<float>(v)); break;
      case DType::kBFloat16: t.flat<bfloat16>()[i] = bfloat16(static_cast<float>(v)); break;
      case DType::kFloat32: t.flat<float>()[i] = static_cast<float>(v); break;
      case DType::kFloat64: t.flat<double>()[i] = v; break;
      default: ADD_FAILURE() << "no strings here";
    }
  }
  return t;
}

void ExpectSameBytes(const Tensor& want, const Tensor& got, const std::string& what) {
  ASSERT_EQ(want.dtype(), got.dtype()) << what;
  ASSERT_EQ(want.shape(), got.shape()) << what;
  const auto* a = static_cast<const uint8_t*>(want.raw_data());
  const auto* b = static_cast<const uint8_t*>(got.raw_data());
  const size_t esize = DTypeSize(want.dtype());
  for (size_t i = 0; i < want.byte_size(); i += esize) {
    if (std::memcmp(a + i, b + i, esize) != 0) {
      ADD_FAILURE() << what << ": element " << i / esize << " of " << want.num_elements()
                    << " differs (CPU " << want.DebugString() << ")";
      return;
    }
  }
}

class ImageOpsTest : public OnEachDevice {
 protected:
  void SetUp() override {
    OnEachDevice::SetUp();
    if (IsSkipped()) return;
    stream_ = NewStream(device_).value();
  }

  using DeviceOp = std::function<Result<DeviceTensor>(const DeviceTensor&, Stream&)>;

  // Copies `host` to the device, runs `op` there and copies the result back.
  Result<Tensor> OnDevice(const Tensor& host, const DeviceOp& op) {
    SLUICE_ASSIGN_OR_RETURN(DeviceTensor in, CopyToDevice(host, *stream_));
    SLUICE_ASSIGN_OR_RETURN(DeviceTensor out, op(in, *stream_));
    return CopyToHost(out, *stream_);
  }

  void ExpectTwin(const Tensor& host, const Result<Tensor>& cpu, const DeviceOp& op,
                  const std::string& what) {
    ASSERT_TRUE(cpu.ok()) << what << ": " << cpu.status();
    Result<Tensor> got = OnDevice(host, op);
    ASSERT_TRUE(got.ok()) << what << ": " << got.status();
    ExpectSameBytes(*cpu, *got, what + " " + host.DebugString());
  }

  std::unique_ptr<Stream> stream_;
};

TEST_P(ImageOpsTest, CropMatchesTheCpuKernel) {
  for (DType dtype : kNumeric) {
    for (const Shape& shape : {Shape{7, 9, 3}, Shape{3, 6, 5, 2}, Shape{1, 1, 1}}) {
      const Tensor image = RandomTensor(dtype, shape, 1);
      const int r = shape.rank();
      const int64_t h = shape.dim(r - 3), w = shape.dim(r - 2);
      for (ops::CropWindow win : {ops::CropWindow{0, 0, h, w}, ops::CropWindow{h - 1, w - 1, 1, 1},
                                  ops::CropWindow{h / 2, w / 3, h - h / 2, w - w / 3}}) {
        ExpectTwin(
            image, ops::Crop(image, win),
            [&](const DeviceTensor& d, Stream& s) { return Crop(d, win, s); },
            "Crop y=" + std::to_string(win.y) + " x=" + std::to_string(win.x));
      }
    }
  }
}

TEST_P(ImageOpsTest, FlipsMatchTheCpuKernels) {
  for (DType dtype : kNumeric) {
    for (const Shape& shape : {Shape{5, 7, 3}, Shape{4, 3, 8, 1}, Shape{2, 2, 2, 5}}) {
      const Tensor image = RandomTensor(dtype, shape, 2);
      ExpectTwin(image, ops::FlipLeftRight(image), &FlipLeftRight, "FlipLeftRight");
      ExpectTwin(image, ops::FlipUpDown(image), &FlipUpDown, "FlipUpDown");
    }
  }
}

TEST_P(ImageOpsTest, RandomFlipsDrawAsTheCpuOps) {
  // 5000 images: more than one kernel's worth of flip bits.
  for (const Shape& shape : {Shape{40, 3, 4, 3}, Shape{5000, 1, 2, 1}, Shape{6, 5, 3}}) {
    const Tensor image = RandomTensor(DType::kUInt8, shape, 3);
    for (uint64_t seed : {7u, 8u, 9u}) {
      Rng cpu_rng(seed), device_rng(seed);
      ExpectTwin(
          image, ops::RandomFlipLeftRight(image, cpu_rng),
          [&](const DeviceTensor& d, Stream& s) { return RandomFlipLeftRight(d, device_rng, s); },
          "RandomFlipLeftRight");
      ExpectTwin(
          image, ops::RandomFlipUpDown(image, cpu_rng),
          [&](const DeviceTensor& d, Stream& s) { return RandomFlipUpDown(d, device_rng, s); },
          "RandomFlipUpDown");
      EXPECT_EQ(cpu_rng.UniformInt(1u << 30), device_rng.UniformInt(1u << 30)) << "draw count";
    }
  }
}

TEST_P(ImageOpsTest, AnUnflippedImageIsReturnedItself) {
  SLUICE_ASSERT_OK_AND_ASSIGN(
      DeviceTensor d, CopyToDevice(RandomTensor(DType::kUInt8, Shape{2, 2, 3}, 4), *stream_));
  int same = 0;
  for (uint64_t seed = 0; seed < 16; ++seed) {
    Rng rng(seed);
    SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor out, RandomFlipLeftRight(d, rng, *stream_));
    same += out.raw_data() == d.raw_data();
  }
  EXPECT_GT(same, 0);
  EXPECT_LT(same, 16);
}

TEST_P(ImageOpsTest, ResizeMatchesTheCpuKernel) {
  const ops::ImageSize kSizes[] = {{224, 224}, {3, 17}, {40, 9}, {1, 1}};
  for (DType dtype : kNumeric) {
    for (const Shape& shape : {Shape{37, 50, 3}, Shape{2, 9, 13, 4}, Shape{5, 300, 1}}) {
      const Tensor image = RandomTensor(dtype, shape, 5);
      for (ops::ResizeMethod method : {ops::ResizeMethod::kBilinear, ops::ResizeMethod::kNearest}) {
        if (dtype == DType::kBool && method != ops::ResizeMethod::kNearest) continue;
        for (ops::ImageSize size : kSizes) {
          const ops::ResizeOptions options{.method = method};
          ExpectTwin(
              image, ops::Resize(image, size, options),
              [&](const DeviceTensor& d, Stream& s) { return Resize(d, size, s, options); },
              std::string(ops::ResizeMethodName(method)) + " to " + std::to_string(size.height) +
                  "x" + std::to_string(size.width));
        }
      }
    }
  }
}

TEST_P(ImageOpsTest, ResizeKeepsTheCpuShortcutsAndOptions) {
  const Tensor image = RandomTensor(DType::kFloat32, Shape{2, 30, 40, 3}, 6);
  const ops::ResizeOptions keep{.preserve_aspect_ratio = true};
  ExpectTwin(
      image, ops::Resize(image, {100, 100}, keep),
      [&](const DeviceTensor& d, Stream& s) {
        return Resize(d, {100, 100}, s, keep);
      },
      "preserve_aspect_ratio");
  Tensor specials = RandomTensor(DType::kFloat64, Shape{30, 40, 3}, 7, /*specials=*/true);
  ExpectTwin(
      specials, ops::Resize(specials, {30, 40}),
      [&](const DeviceTensor& d, Stream& s) {
        return Resize(d, {30, 40}, s);
      },
      "same size (a cast to float32)");
  // A real photo's bytes through the CPU's vector paths (3 channels, uint8).
  const Tensor rgb = RandomTensor(DType::kUInt8, Shape{375, 500, 3}, 8);
  ExpectTwin(
      rgb, ops::Resize(rgb, {224, 224}),
      [&](const DeviceTensor& d, Stream& s) {
        return Resize(d, {224, 224}, s);
      },
      "uint8 RGB 500x375 to 224x224");
}

TEST_P(ImageOpsTest, NormalizeMatchesTheCpuKernel) {
  const std::vector<float> mean = {123.675f, 116.28f, 103.53f};
  const std::vector<float> sd = {58.395f, 57.12f, 57.375f};
  for (DType dtype : kNumeric) {
    const Tensor image = RandomTensor(dtype, Shape{2, 7, 5, 3}, 9, /*specials=*/true);
    ExpectTwin(
        image, ops::Normalize(image, mean, sd),
        [&](const DeviceTensor& d, Stream& s) { return Normalize(d, mean, sd, s); }, "per channel");
    ExpectTwin(
        image, ops::Normalize(image, {0.5f}, {0.25f}),
        [&](const DeviceTensor& d, Stream& s) { return Normalize(d, {0.5f}, {0.25f}, s); },
        "one value");
  }
  const Tensor wide = RandomTensor(DType::kFloat32, Shape{3, 70}, 10);
  const std::vector<float> one_sd = {3.0f};
  std::vector<float> means(70);
  for (int c = 0; c < 70; ++c) means[c] = static_cast<float>(c) * 0.75f;
  Result<DeviceTensor> wide_device = CopyToDevice(wide, *stream_);
  ASSERT_TRUE(wide_device.ok());
  EXPECT_THAT(Normalize(*wide_device, means, one_sd, *stream_).status().message(),
              HasSubstr("at most 64"));
  const std::vector<float> one_mean = {2.0f};
  ExpectTwin(
      wide, ops::Normalize(wide, one_mean, one_sd),
      [&](const DeviceTensor& d, Stream& s) { return Normalize(d, one_mean, one_sd, s); },
      "70 channels, one value");
}

TEST_P(ImageOpsTest, CastMatchesTheCpuKernelForEveryPair) {
  for (DType from : kNumeric) {
    const Tensor x = RandomTensor(from, Shape{4, 250}, 11, /*specials=*/true);
    for (DType to : kNumeric) {
      ExpectTwin(
          x, ops::Cast(x, to), [&](const DeviceTensor& d, Stream& s) { return Cast(d, to, s); },
          std::string("Cast to ") + std::string(DTypeName(to)));
    }
  }
}

TEST_P(ImageOpsTest, CastRoundsToHalfAsTheCpu) {
  // Every float16 value, and the float32 values just beside and halfway
  // between neighbours: the rounding and its ties, subnormals, overflow.
  std::vector<float> values;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = static_cast<float>(float16::FromBits(static_cast<uint16_t>(h)));
    const float g = static_cast<float>(float16::FromBits(static_cast<uint16_t>(h + 1)));
    values.push_back(f);
    values.push_back(std::nextafter(f, 0.0f));
    if (std::isfinite(f) && std::isfinite(g) && (h & 0x7fff) != 0x7bff && (h & 0x7fff) != 0x7fff) {
      values.push_back(f + (g - f) / 2);
    }
  }
  values.push_back(65520.0f);
  values.push_back(std::nextafter(65520.0f, 0.0f));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor x, Tensor::FromVector(values));
  for (DType to : {DType::kFloat16, DType::kBFloat16}) {
    ExpectTwin(
        x, ops::Cast(x, to), [&](const DeviceTensor& d, Stream& s) { return Cast(d, to, s); },
        std::string("float32 to ") + std::string(DTypeName(to)));
  }
}

TEST_P(ImageOpsTest, OpsChainOnOneStream) {
  // Decode-on-CPU batch in, the usual augmentation out; the intermediates
  // are dropped as soon as the next op is queued.
  const Tensor batch = RandomTensor(DType::kUInt8, Shape{8, 64, 48, 3}, 12);
  Rng cpu_rng(99), device_rng(99);
  Tensor want = ops::Crop(batch, {4, 2, 56, 40}).value();
  want = ops::Resize(want, {32, 32}).value();
  want = ops::RandomFlipLeftRight(want, cpu_rng).value();
  want = ops::Normalize(want, {127.5f}, {127.5f}).value();
  want = ops::Cast(want, DType::kBFloat16).value();
  ExpectTwin(
      batch, want,
      [&](const DeviceTensor& d, Stream& s) -> Result<DeviceTensor> {
        SLUICE_ASSIGN_OR_RETURN(DeviceTensor x, Crop(d, {4, 2, 56, 40}, s));
        SLUICE_ASSIGN_OR_RETURN(x, Resize(x, {32, 32}, s));
        SLUICE_ASSIGN_OR_RETURN(x, RandomFlipLeftRight(x, device_rng, s));
        SLUICE_ASSIGN_OR_RETURN(x, Normalize(x, {127.5f}, {127.5f}, s));
        return Cast(x, DType::kBFloat16, s);
      },
      "crop, resize, flip, normalize, cast");
}

TEST_P(ImageOpsTest, BadArgumentsAreInvalidArgumentBeforeAnythingRuns) {
  SLUICE_ASSERT_OK_AND_ASSIGN(
      DeviceTensor image, CopyToDevice(RandomTensor(DType::kUInt8, Shape{4, 5, 3}, 13), *stream_));
  Stream& s = *stream_;
  EXPECT_THAT(Crop(image, {3, 0, 2, 5}, s).status().message(), HasSubstr("lie inside the image"));
  EXPECT_THAT(Crop(image, {0, 0, 0, 5}, s).status().message(), HasSubstr("gpu::Crop"));
  const ops::ResizeOptions bicubic{.method = ops::ResizeMethod::kBicubic};
  EXPECT_THAT(Resize(image, {8, 8}, s, bicubic).status().message(),
              HasSubstr("bicubic runs on the host only"));
  const ops::ResizeOptions antialias{.antialias = true};
  EXPECT_THAT(Resize(image, {2, 2}, s, antialias).status().message(), HasSubstr("antialias"));
  EXPECT_EQ(Resize(image, {0, 8}, s).status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(Normalize(image, {1.0f, 2.0f}, {1.0f}, s).status().message(),
              HasSubstr("mean has 2 values, expected 1 or 3"));
  EXPECT_THAT(Normalize(image, {1.0f}, {0.0f}, s).status().message(),
              HasSubstr("finite and non-zero"));
  SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor flat,
                              CopyToDevice(RandomTensor(DType::kUInt8, Shape{12}, 14), s));
  EXPECT_THAT(FlipLeftRight(flat, s).status().message(), HasSubstr("FlipLeftRight"));
  SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor bools,
                              CopyToDevice(RandomTensor(DType::kBool, Shape{4, 5, 3}, 15), s));
  EXPECT_EQ(Resize(bools, {2, 2}, s).status().code(), StatusCode::kInvalidArgument);
  // The stream still works after the errors.
  SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor ok, FlipUpDown(image, s));
  EXPECT_TRUE(s.Synchronize().ok());
}

TEST_P(ImageOpsTest, ATensorOfAnotherDeviceIsRejected) {
  // A tensor labelled with the other device (host memory behind it).
  auto allocator = testing::HostAllocator();
  const Device other = device_.is_cpu() ? Device::Gpu(0) : Device::Cpu();
  SLUICE_ASSERT_OK_AND_ASSIGN(
      DeviceTensor t, AllocateDeviceTensor(*allocator, other, DType::kUInt8, Shape{2, 2, 3}));
  EXPECT_THAT(FlipLeftRight(t, *stream_).status().message(),
              HasSubstr("is not on the stream's device"));
  EXPECT_EQ(Cast(t, DType::kFloat32, *stream_).status().code(), StatusCode::kInvalidArgument);
}

// Every *Into form writes what its allocating form returns, bit for bit,
// and refuses an output of the wrong dtype, shape or device.
TEST_P(ImageOpsTest, IntoFormsWriteWhatTheAllocatingFormsReturn) {
  const Tensor host = RandomTensor(DType::kUInt8, Shape{2, 9, 7, 3}, 41);
  SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor in, CopyToDevice(host, *stream_));
  auto same = [&](const Result<DeviceTensor>& made, const DeviceTensor& into,
                  const std::string& what) {
    ASSERT_TRUE(made.ok()) << what << ": " << made.status();
    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor a, CopyToHost(*made, *stream_));
    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor b, CopyToHost(into, *stream_));
    ExpectSameBytes(a, b, what);
  };
  auto alloc = [&](DType dtype, const Shape& shape) {
    return AllocateDeviceTensor(device_, dtype, shape, stream_.get()).value();
  };
  {
    DeviceTensor out = alloc(DType::kUInt8, Shape{2, 4, 5, 3});
    SLUICE_ASSERT_OK(CropInto(in, {1, 2, 4, 5}, &out, *stream_));
    same(Crop(in, {1, 2, 4, 5}, *stream_), out, "CropInto");
  }
  {
    DeviceTensor lr = alloc(DType::kUInt8, host.shape()), ud = alloc(DType::kUInt8, host.shape());
    SLUICE_ASSERT_OK(FlipLeftRightInto(in, &lr, *stream_));
    SLUICE_ASSERT_OK(FlipUpDownInto(in, &ud, *stream_));
    same(FlipLeftRight(in, *stream_), lr, "FlipLeftRightInto");
    same(FlipUpDown(in, *stream_), ud, "FlipUpDownInto");
  }
  for (const ops::ResizeMethod m : {ops::ResizeMethod::kBilinear, ops::ResizeMethod::kNearest}) {
    const DType dtype = m == ops::ResizeMethod::kNearest ? DType::kUInt8 : DType::kFloat32;
    for (const Shape& shape : {Shape{2, 5, 11, 3}, Shape{2, 9, 7, 3}}) {  // also the same size
      DeviceTensor out = alloc(dtype, shape);
      SLUICE_ASSERT_OK(ResizeInto(in, &out, *stream_, {.method = m}));
      same(Resize(in, {shape.dim(1), shape.dim(2)}, *stream_, {.method = m}), out,
           "ResizeInto " + shape.ToString());
    }
  }
  {
    DeviceTensor out = alloc(DType::kFloat32, host.shape());
    SLUICE_ASSERT_OK(NormalizeInto(in, std::vector<float>{1, 2, 3}, std::vector<float>{2, 4, 8},
                                   &out, *stream_));
    same(Normalize(in, {1, 2, 3}, {2, 4, 8}, *stream_), out, "NormalizeInto");
  }
  for (const DType dtype : {DType::kFloat16, DType::kUInt8}) {  // also the same dtype: a copy
    DeviceTensor out = alloc(dtype, host.shape());
    SLUICE_ASSERT_OK(CastInto(in, &out, *stream_));
    same(Cast(in, dtype, *stream_), out, "CastInto " + std::string(DTypeName(dtype)));
  }
  // Wrong outputs are named, and nothing is queued.
  DeviceTensor wrong_shape = alloc(DType::kUInt8, Shape{2, 9, 7, 1});
  Status s = FlipLeftRightInto(in, &wrong_shape, *stream_);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("expected " + device_.ToString() + " uint8[2,9,7,3]"));
  DeviceTensor wrong_dtype = alloc(DType::kInt32, Shape{2, 4, 5, 3});
  EXPECT_EQ(CropInto(in, {1, 2, 4, 5}, &wrong_dtype, *stream_).code(),
            StatusCode::kInvalidArgument);
  DeviceTensor not_an_image = alloc(DType::kFloat32, Shape{4});
  EXPECT_EQ(ResizeInto(in, &not_an_image, *stream_).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CastInto(in, nullptr, *stream_).code(), StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Devices, ImageOpsTest, ::testing::Values("cpu:0", "gpu:0"),
                         DeviceTestName);

}  // namespace
}  // namespace sluice::gpu
