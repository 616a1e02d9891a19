// The streamed unfused path of DecodeRandomCropResize (fused = false) and
// its mirror / normalize finishing: bit-identical to the chain of separate
// ops (DecodeJpeg -> RandomResizedCrop -> RandomFlipLeftRight -> Normalize)
// on every JPEG flavour of the golden set, with the same Rng draws and the
// same errors. Also BilinearRowStream against ResizeBilinear.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "codec_golden.h"
#include "sluice/ops/decode_crop_resize.h"
#include "sluice/ops/decode_image.h"
#include "sluice/ops/internal/resize_kernels.h"
#include "sluice/ops/internal/resize_taps.h"
#include "sluice/ops/jpeg.h"

namespace sluice::ops {
namespace {

using testing::CodecGolden;

constexpr float kMean[3] = {123.675f, 116.28f, 103.53f};
constexpr float kStd[3] = {58.395f, 57.12f, 57.375f};

// Bitwise equality of two tensors (same dtype and shape).
void ExpectSameBits(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  EXPECT_EQ(std::memcmp(got.raw_data(), want.raw_data(), got.byte_size()), 0) << what;
}

const char* const kJpegs[] = {"rgb420_q90.jpg",  "rgb420_q95.jpg", "rgb444_q90.jpg",
                              "rgb422.jpg",      "rgb440.jpg",     "rgb411.jpg",
                              "rgb420_prog.jpg", "gray_q90.jpg",   "cmyk_adobe.jpg",
                              "cmyk_plain.jpg",  "ycck_adobe.jpg", "big420_q85.jpg"};

TEST(DecodeCropResizeStream, EqualsTheSeparateOpsOnEveryJpegFlavour) {
  int cases = 0;
  for (const char* name : kJpegs) {
    const std::string jpeg = CodecGolden::Read(name);
    for (int channels : {3, 1}) {
      Tensor full = DecodeJpeg(jpeg, {.channels = channels}).value();
      const int64_t h = full.shape().dim(0), w = full.shape().dim(1);
      // Outputs smaller and larger than most windows, and odd sizes.
      for (ImageSize size : {ImageSize{224, 224}, ImageSize{17, 33}, ImageSize{h, w}}) {
        for (uint64_t seed = 0; seed < 12; ++seed) {
          const std::string what = std::string(name) + " channels " + std::to_string(channels) +
                                   " size " + std::to_string(size.height) + "x" +
                                   std::to_string(size.width) + " seed " + std::to_string(seed);
          Rng a(seed), b(seed);
          Tensor got =
              DecodeRandomCropResize(jpeg, a, {.size = size, .channels = channels, .fused = false})
                  .value();
          Tensor want = RandomResizedCrop(full, size, b).value();
          ExpectSameBits(got, want, what);
          ++cases;
        }
      }
    }
  }
  EXPECT_EQ(cases, 12 * 2 * 3 * 12);
}

TEST(DecodeCropResizeStream, MirrorAndNormalizeEqualTheSeparateOps) {
  const std::string jpeg = CodecGolden::Read("big420_q85.jpg");
  const Tensor full = DecodeJpeg(jpeg, {.channels = 3}).value();
  int mirrored = 0;
  for (bool fused : {false, true}) {
    for (uint64_t seed = 0; seed < 24; ++seed) {
      const std::string what =
          std::string(fused ? "fused" : "streamed") + " seed " + std::to_string(seed);
      DecodeCropResizeOptions o{.size = {96, 128},
                                .fused = fused,
                                .mirror = Mirror::kRandom,
                                .mean = {kMean[0], kMean[1], kMean[2]},
                                .stddev = {kStd[0], kStd[1], kStd[2]}};
      Rng a(seed), b(seed);
      Tensor got = DecodeRandomCropResize(jpeg, a, o).value();
      // The reference: the same op without finishing, then the separate
      // flip (drawing from the same Rng next) and normalize.
      DecodeCropResizeOptions plain = o;
      plain.mirror = Mirror::kNever;
      plain.mean.clear();
      plain.stddev.clear();
      Tensor want = DecodeRandomCropResize(jpeg, b, plain).value();
      if (!fused) {
        Rng c(seed);
        ExpectSameBits(want, RandomResizedCrop(full, {96, 128}, c).value(), what);
      }
      Rng flip_probe = b;
      mirrored += flip_probe.UniformFloat() < 0.5f;
      want = RandomFlipLeftRight(std::move(want), b).value();
      want = Normalize(std::move(want), kMean, kStd).value();
      ExpectSameBits(got, want, what);
      // Both consumed the same draws.
      EXPECT_EQ(a.UniformDouble(), b.UniformDouble()) << what;
    }
  }
  EXPECT_GT(mirrored, 8);  // both branches ran
  EXPECT_LT(mirrored, 40);
}

TEST(DecodeCropResizeStream, FixedWindowMirrorAndOneValueStats) {
  const std::string jpeg = CodecGolden::Read("rgb444_q90.jpg");
  const Tensor full = DecodeJpeg(jpeg, {.channels = 3}).value();
  const CropWindow win{3, 5, full.shape().dim(0) - 9, full.shape().dim(1) - 7};
  for (bool fused : {false, true}) {
    Tensor got = DecodeCropResize(jpeg, win,
                                  {.size = {40, 50},
                                   .fused = fused,
                                   .mirror = Mirror::kAlways,
                                   .mean = {127.5f},
                                   .stddev = {64.0f}})
                     .value();
    Tensor want = DecodeCropResize(jpeg, win, {.size = {40, 50}, .fused = fused}).value();
    want = Normalize(FlipLeftRight(want).value(), {127.5f}, {64.0f}).value();
    ExpectSameBits(got, want, fused ? "fused" : "streamed");
  }
  // kNearest keeps uint8: mirroring applies, normalizing is refused.
  Tensor nearest = DecodeCropResize(jpeg, win,
                                    {.size = {40, 50},
                                     .method = ResizeMethod::kNearest,
                                     .fused = false,
                                     .mirror = Mirror::kAlways})
                       .value();
  Tensor want =
      Resize(Crop(full, win).value(), {40, 50}, {.method = ResizeMethod::kNearest}).value();
  ExpectSameBits(nearest, FlipLeftRight(want).value(), "nearest");
}

TEST(DecodeCropResizeStream, BadOptionsAreInvalidArgument) {
  const std::string jpeg = CodecGolden::Read("rgb420_q90.jpg");
  Rng rng(1);
  auto code = [&](const DecodeCropResizeOptions& o) {
    return DecodeRandomCropResize(jpeg, rng, o).status();
  };
  EXPECT_EQ(code({.mean = {1, 2, 3}}).code(), StatusCode::kInvalidArgument);  // no stddev
  EXPECT_EQ(code({.mean = {1, 2}, .stddev = {1, 2}}).code(), StatusCode::kInvalidArgument);
  Status zero = code({.mean = {0}, .stddev = {0}, .name = "z.jpg"});
  EXPECT_EQ(zero.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(zero.message().find("z.jpg"), std::string::npos);
  EXPECT_EQ(code({.method = ResizeMethod::kNearest, .mean = {0}, .stddev = {1}}).code(),
            StatusCode::kInvalidArgument);
  Status random = DecodeCropResize(jpeg, {0, 0, 8, 8}, {.mirror = Mirror::kRandom}).status();
  EXPECT_EQ(random.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(random.message().find("Rng"), std::string::npos);
}

TEST(DecodeCropResizeStream, TruncatedAndCorruptFilesFailAsTheWholeDecodeDoes) {
  const std::string jpeg = CodecGolden::Read("big420_q85.jpg");
  int failed = 0, past_header = 0;
  // Cuts through the entropy-coded data (the header stays whole), and a
  // byte flipped in it.
  for (size_t keep : {jpeg.size() / 3, jpeg.size() / 2, jpeg.size() - 40, jpeg.size() - 2}) {
    const std::string_view cut = std::string_view(jpeg).substr(0, keep);
    Rng rng(5);
    auto got = DecodeRandomCropResize(cut, rng, {.fused = false, .name = "cut.jpg"});
    auto whole = DecodeJpeg(cut, {.channels = 3, .name = "cut.jpg"});
    ASSERT_EQ(got.ok(), whole.ok()) << keep;
    if (!got.ok()) {
      ++failed;
      EXPECT_EQ(got.status().code(), whole.status().code()) << keep;
      EXPECT_NE(got.status().message().find("cut.jpg"), std::string::npos) << keep;
      // Past the header (read first, to draw the window), the same words.
      if (JpegOutputShape(cut).ok()) {
        EXPECT_EQ(got.status().ToString(), whole.status().ToString()) << keep;
        ++past_header;
      }
    }
  }
  EXPECT_GE(failed, 3);
  EXPECT_GE(past_header, 2);
  std::string flipped = jpeg;
  flipped[jpeg.size() / 2] ^= 0x5a;
  Rng a(5), b(5);
  auto got = DecodeRandomCropResize(flipped, a, {.fused = false});
  auto whole = DecodeJpeg(flipped, {.channels = 3});
  ASSERT_EQ(got.ok(), whole.ok());
  if (got.ok()) {
    ExpectSameBits(*got, RandomResizedCrop(*whole, {224, 224}, b).value(), "flipped byte");
  }
}

// Random uint8 pixels, h x w x c.
Tensor Noise(int64_t h, int64_t w, int64_t c, uint32_t seed) {
  Tensor t = Tensor::Allocate(DType::kUInt8, Shape{h, w, c}).value();
  for (uint8_t& v : t.flat<uint8_t>()) {
    seed = seed * 1664525u + 1013904223u;
    v = static_cast<uint8_t>(seed >> 24);
  }
  return t;
}

TEST(BilinearRowStream, EqualsResizeBilinearRowForRow) {
  struct Case {
    int64_t in_h, in_w, out_h, out_w, c;
  };
  for (const Case& k : {Case{1, 1, 5, 7, 3}, Case{37, 51, 224, 224, 3}, Case{375, 500, 224, 224, 3},
                        Case{300, 9, 7, 300, 1}, Case{2, 300, 300, 2, 3}, Case{64, 64, 64, 64, 1},
                        Case{5, 640, 1, 1, 3}}) {
    const Tensor in = Noise(k.in_h, k.in_w, k.c, static_cast<uint32_t>(k.in_h * 31 + k.out_w));
    ops_internal::ImageView v;
    v.data = in.raw_data();
    v.height = k.in_h;
    v.width = k.in_w;
    v.channels = k.c;
    v.row_stride = k.in_w * k.c;
    v.image_stride = k.in_h * v.row_stride;
    const ops_internal::LerpTaps ys = ops_internal::BilinearTaps(k.in_h, k.out_h);
    const ops_internal::LerpTaps xs = ops_internal::BilinearTaps(k.in_w, k.out_w);
    std::vector<float> want(static_cast<size_t>(k.out_h * k.out_w * k.c));
    ops_internal::ResizeBilinear(v, ys, xs, want.data());
    ops_internal::BilinearRowStream stream(k.in_w, k.c, ys, xs);
    std::vector<float> got(want.size(), -1.0f);
    for (int64_t r = 0; r < k.in_h; ++r) {
      stream.Push(r, in.flat<uint8_t>().data() + r * k.in_w * k.c);
      while (stream.Ready()) {
        const int64_t y = stream.taken();
        EXPECT_EQ(stream.Take(got.data() + y * stream.row_floats()), y);
      }
    }
    EXPECT_EQ(stream.taken(), k.out_h);
    EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0)
        << k.in_h << "x" << k.in_w << " -> " << k.out_h << "x" << k.out_w;
  }
}

}  // namespace
}  // namespace sluice::ops
