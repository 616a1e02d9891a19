// JPEG decoding and encoding against TensorFlow's golden outputs, crops
// against full decodes, headers, options and preallocated outputs. Bad input
// is in jpeg_corruption_test.cc.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "codec_golden.h"
#include "sluice/ops/jpeg.h"
#include "test_util.h"

namespace sluice::ops {
namespace {

using testing::CodecCase;
using testing::CodecGolden;
using testing::MaxAbsDiff;

// Measured max difference between DecodeAndCropJpeg and TF's
// decode_and_crop_jpeg (TF 2.21) on the golden windows.
constexpr int kMaxCropDiffVsTensorFlow = 7;

DecodeJpegOptions OptionsOf(const CodecCase& c) {
  DecodeJpegOptions o;
  o.channels = static_cast<int>(c.Int("channels"));
  o.dct_method = c.Get("dct") == "INTEGER_ACCURATE" ? JpegDctMethod::kIntegerAccurate
                                                    : JpegDctMethod::kIntegerFast;
  if (!c.Get("ratio").empty()) o.ratio = static_cast<int>(c.Int("ratio"));
  if (!c.Get("fancy").empty()) o.fancy_upscaling = c.Int("fancy") != 0;
  if (!c.Get("recover").empty()) o.try_recover_truncated = c.Int("recover") != 0;
  if (!c.Get("fraction").empty()) o.acceptable_fraction = std::stof(c.Get("fraction"));
  return o;
}

Tensor CropOf(const Tensor& image, const JpegCropWindow& w) {
  return testing::CropOf(image, w.y, w.x, w.height, w.width);
}

TEST(DecodeJpeg, EqualsTensorFlowExactly) {
  const auto cases = CodecGolden::Get().Cases("decode_jpeg");
  ASSERT_GT(cases.size(), 60u);
  for (const CodecCase& c : cases) {
    if (c.Get("recover") == "1") continue;  // see the next test
    std::string bytes = CodecGolden::Read(c.Get("input"));
    bytes.resize(static_cast<size_t>(c.Int("truncate")));
    Result<Tensor> got = DecodeJpeg(bytes, OptionsOf(c));
    ASSERT_TRUE(got.ok()) << c.Describe() << got.status();
    EXPECT_EQ(MaxAbsDiff(*got, c), 0) << c.Describe();
  }
}

TEST(DecodeJpeg, RecoveredTruncationEqualsTensorFlowWhereThereIsData) {
  // try_recover_truncated: the rows decoded from real data equal TF's (as
  // many as TF's own partial decode, acceptable_fraction < 1, returns); the
  // made-up rest differs: TF's libjpeg-turbo 2.1.4 keeps decoding zero bits
  // there, Debian's 2.1.5 leaves the missing blocks gray.
  const auto cases = CodecGolden::Get().Cases("decode_jpeg");
  int checked = 0;
  for (const CodecCase& recovered : cases) {
    if (recovered.Get("recover") != "1") continue;
    int64_t real_rows = -1;
    for (const CodecCase& partial : cases) {
      if (partial.Get("recover") != "0" || partial.Get("fraction") == "1" ||
          partial.Get("input") != recovered.Get("input") ||
          partial.Get("truncate") != recovered.Get("truncate")) {
        continue;
      }
      const size_t row = partial.expected.size() / partial.shape[0];
      real_rows = partial.shape[0];
      while (real_rows > 0 &&
             partial.expected.substr((real_rows - 1) * row, row) == std::string(row, '\0')) {
        --real_rows;
      }
    }
    ASSERT_GT(real_rows, 0) << recovered.Describe();
    std::string bytes = CodecGolden::Read(recovered.Get("input"));
    bytes.resize(static_cast<size_t>(recovered.Int("truncate")));
    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor got, DecodeJpeg(bytes, OptionsOf(recovered)));
    ASSERT_EQ(got.byte_size(), recovered.expected.size());
    const size_t real_bytes = got.byte_size() / recovered.shape[0] * real_rows;
    EXPECT_EQ(std::string_view(static_cast<const char*>(got.raw_data()), real_bytes),
              std::string_view(recovered.expected).substr(0, real_bytes));
    ++checked;
  }
  EXPECT_EQ(checked, 1);
}

TEST(DecodeJpeg, OutputShapeMatchesDecode) {
  for (const CodecCase& c : CodecGolden::Get().Cases("decode_jpeg")) {
    if (c.Get("recover") == "1" || c.Get("fraction") != "1") continue;
    const std::string bytes = CodecGolden::Read(c.Get("input"));
    Result<Shape> shape = JpegOutputShape(bytes, OptionsOf(c));
    ASSERT_TRUE(shape.ok()) << shape.status();
    EXPECT_EQ(std::vector<int64_t>(shape->dims().begin(), shape->dims().end()), c.shape)
        << c.Describe();
  }
}

TEST(DecodeJpeg, IntoPreallocatedTensorAndItsChecks) {
  const std::string bytes = CodecGolden::Read("rgb420_q90.jpg");
  DecodeJpegOptions o;
  o.ratio = 2;
  SLUICE_ASSERT_OK_AND_ASSIGN(Shape shape, JpegOutputShape(bytes, o));
  EXPECT_EQ(shape, (Shape{12, 19, 3}));
  // Decode into row 1 of a batch of 2.
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor batch, Tensor::Zeros(DType::kUInt8, Shape{2, 12, 19, 3}));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor slot, batch.Row(1));
  SLUICE_ASSERT_OK(DecodeJpegInto(bytes, o, &slot));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor alone, DecodeJpeg(bytes, o));
  EXPECT_TRUE(Identical(slot, alone));
  Tensor wrong = Tensor::Allocate(DType::kUInt8, Shape{12, 19, 1}).value();
  SLUICE_EXPECT_ERROR(DecodeJpegInto(bytes, o, &wrong), StatusCode::kInvalidArgument,
                      "the image needs uint8[12,19,3]");
  Tensor floats = Tensor::Allocate(DType::kFloat32, Shape{12, 19, 3}).value();
  SLUICE_EXPECT_ERROR(DecodeJpegInto(bytes, o, &floats), StatusCode::kInvalidArgument, "float32");
}

TEST(DecodeJpeg, MinSizePicksTheSmallestLargeEnoughScale) {
  EXPECT_EQ(JpegScaleDenominator(640, 480, 224, 224), 2);
  EXPECT_EQ(JpegScaleDenominator(640, 480, 100, 60), 4);
  EXPECT_EQ(JpegScaleDenominator(640, 480, 80, 60), 8);
  EXPECT_EQ(JpegScaleDenominator(640, 480, 641, 1), 1);
  EXPECT_EQ(JpegScaleDenominator(37, 23, 5, 3), 8);  // ceil(37/8) = 5, ceil(23/8) = 3
  EXPECT_EQ(JpegScaleDenominator(37, 23, 5, 4), 4);
  EXPECT_EQ(JpegScaledSize(37, 8), 5);
  const std::string bytes = CodecGolden::Read("rgb420_q90.jpg");
  DecodeJpegOptions by_size;
  by_size.min_width = 10;
  by_size.min_height = 6;
  DecodeJpegOptions by_ratio;
  by_ratio.ratio = 4;
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor a, DecodeJpeg(bytes, by_size));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor b, DecodeJpeg(bytes, by_ratio));
  EXPECT_TRUE(Identical(a, b));
  by_size.ratio = 2;
  SLUICE_EXPECT_ERROR(DecodeJpeg(bytes, by_size), StatusCode::kInvalidArgument, "not both");
}

TEST(DecodeAndCropJpeg, EqualsCropOfFullDecodeEverywhere) {
  // Every window position on a grid, for every file, channel count, scale
  // and upsampling mode: bit-exact with the crop of a full decode.
  int checked = 0;
  for (const char* file :
       {"big420_q85.jpg", "rgb420_q90.jpg", "rgb444_q90.jpg", "gray_q90.jpg", "rgb420_prog.jpg",
        "ycck_adobe.jpg", "cmyk_plain.jpg", "rgb422.jpg", "rgb440.jpg", "rgb411.jpg"}) {
    const std::string bytes = CodecGolden::Read(file);
    for (int channels : {1, 3}) {
      for (int ratio : {1, 2, 8}) {
        for (bool fancy : {true, false}) {
          DecodeJpegOptions o;
          o.channels = channels;
          o.ratio = ratio;
          o.fancy_upscaling = fancy;
          SLUICE_ASSERT_OK_AND_ASSIGN(Tensor full, DecodeJpeg(bytes, o));
          const int64_t H = full.shape().dim(0), W = full.shape().dim(1);
          for (int64_t y = 0; y < H; y += std::max<int64_t>(1, H / 5)) {
            for (int64_t x = 0; x < W; x += std::max<int64_t>(1, W / 7)) {
              for (int64_t h : {int64_t{1}, H / 3 + 1, H - y}) {
                for (int64_t w : {int64_t{1}, W / 2 + 1, W - x}) {
                  const JpegCropWindow win{y, x, std::min(h, H - y), std::min(w, W - x)};
                  Result<Tensor> crop = DecodeAndCropJpeg(bytes, win, o);
                  ASSERT_TRUE(crop.ok()) << crop.status();
                  ASSERT_EQ(MaxAbsDiff(*crop, CropOf(full, win)), 0)
                      << file << " channels=" << channels << " ratio=" << ratio
                      << " fancy=" << fancy << " window y=" << win.y << " x=" << win.x
                      << " h=" << win.height << " w=" << win.width;
                  ++checked;
                }
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 5000);
}

TEST(DecodeAndCropJpeg, EqualsCropOfFullDecodeForAProgressiveFileEndingEarly) {
  // Only the first two scans, then EOI: libjpeg smooths the blocks whose
  // coefficients are missing using their neighbors, so the crop must decode
  // whole rows (jpeg_decode_fuzz found the difference; its input is in the
  // corpus as regression-incomplete-progressive-crop).
  const std::string bytes = CodecGolden::Read("rgb420_prog.jpg");
  size_t cut = 0;
  int scans = 0;
  for (size_t i = 0; i + 1 < bytes.size(); ++i) {
    if (static_cast<uint8_t>(bytes[i]) == 0xFF && static_cast<uint8_t>(bytes[i + 1]) == 0xDA &&
        ++scans == 3) {
      cut = i;
      break;
    }
  }
  ASSERT_GT(cut, 0u);
  const std::string early = bytes.substr(0, cut) + "\xFF\xD9";
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor full, DecodeJpeg(early, {.strict = true}));
  const int64_t H = full.shape().dim(0), W = full.shape().dim(1);
  for (int64_t y = 0; y < H; y += std::max<int64_t>(1, H / 6)) {
    for (int64_t x = 0; x < W; x += std::max<int64_t>(1, W / 6)) {
      const JpegCropWindow win{y, x, std::min<int64_t>(3, H - y), std::min<int64_t>(5, W - x)};
      SLUICE_ASSERT_OK_AND_ASSIGN(Tensor crop, DecodeAndCropJpeg(early, win, {.strict = true}));
      ASSERT_EQ(MaxAbsDiff(crop, CropOf(full, win)), 0) << "window y=" << y << " x=" << x;
    }
  }
}

TEST(DecodeAndCropJpeg, CloseToTensorFlowsDecodeAndCrop) {
  // TF crops without a margin, so its upsampler replicates edge samples at
  // the window's iMCU-aligned borders; sluice's crop equals the full decode
  // there. Interior pixels agree exactly.
  int worst = 0;
  for (const CodecCase& c : CodecGolden::Get().Cases("decode_and_crop_jpeg")) {
    const std::string bytes = CodecGolden::Read(c.Get("input"));
    int64_t y, x, h, w;
    ASSERT_EQ(std::sscanf(c.Get("crop").c_str(), "%ld,%ld,%ld,%ld", &y, &x, &h, &w), 4);
    DecodeJpegOptions o = OptionsOf(c);
    Result<Tensor> got = DecodeAndCropJpeg(bytes, {y, x, h, w}, o);
    ASSERT_TRUE(got.ok()) << got.status();
    const int64_t diff = MaxAbsDiff(*got, c);
    ASSERT_GE(diff, 0) << c.Describe();
    worst = std::max<int>(worst, static_cast<int>(diff));
  }
  RecordProperty("max_abs_diff_vs_tf_decode_and_crop", worst);
  EXPECT_LE(worst, kMaxCropDiffVsTensorFlow);
}

TEST(DecodeAndCropJpeg, RejectsWindowsOutsideTheImage) {
  const std::string bytes = CodecGolden::Read("rgb420_q90.jpg");  // 37x23
  DecodeJpegOptions o;
  o.name = "photo.jpg";
  for (JpegCropWindow w :
       {JpegCropWindow{0, 0, 0, 5}, JpegCropWindow{0, 0, 5, 0}, JpegCropWindow{-1, 0, 5, 5},
        JpegCropWindow{0, 33, 5, 5}, JpegCropWindow{19, 0, 5, 5}, JpegCropWindow{0, 0, 24, 37}}) {
    SLUICE_EXPECT_ERROR(DecodeAndCropJpeg(bytes, w, o), StatusCode::kInvalidArgument,
                        "photo.jpg: crop window");
  }
  o.ratio = 2;  // 19x12: windows are in scaled coordinates
  SLUICE_EXPECT_OK(DecodeAndCropJpeg(bytes, {0, 0, 12, 19}, o));
  SLUICE_EXPECT_ERROR(DecodeAndCropJpeg(bytes, {0, 0, 13, 19}, o), StatusCode::kInvalidArgument,
                      "19x12");
}

TEST(ReadJpegHeader, DescribesTheFiles) {
  struct Expect {
    const char* file;
    int64_t w, h;
    int components;
    JpegColorSpace space;
    JpegSubsampling sub;
    bool progressive;
  };
  for (const Expect& e : {
           Expect{"rgb420_q90.jpg", 37, 23, 3, JpegColorSpace::kYCbCr, JpegSubsampling::k420,
                  false},
           Expect{"rgb444_q90.jpg", 37, 23, 3, JpegColorSpace::kYCbCr, JpegSubsampling::k444,
                  false},
           Expect{"gray_q90.jpg", 37, 23, 1, JpegColorSpace::kGrayscale, JpegSubsampling::kGray,
                  false},
           Expect{"rgb420_prog.jpg", 37, 23, 3, JpegColorSpace::kYCbCr, JpegSubsampling::k420,
                  true},
           Expect{"cmyk_adobe.jpg", 24, 16, 4, JpegColorSpace::kCMYK, JpegSubsampling::kOther,
                  false},
           Expect{"ycck_adobe.jpg", 24, 16, 4, JpegColorSpace::kYCCK, JpegSubsampling::kOther,
                  false},
       }) {
    SLUICE_ASSERT_OK_AND_ASSIGN(JpegHeader h, ReadJpegHeader(CodecGolden::Read(e.file)));
    EXPECT_EQ(h.width, e.w) << e.file;
    EXPECT_EQ(h.height, e.h) << e.file;
    EXPECT_EQ(h.components, e.components) << e.file;
    EXPECT_EQ(h.color_space, e.space) << e.file;
    EXPECT_EQ(h.subsampling, e.sub) << e.file;
    EXPECT_EQ(h.progressive, e.progressive) << e.file;
    EXPECT_FALSE(h.arithmetic);
  }
}

TEST(EncodeJpeg, BytesEqualTensorFlows) {
  const auto cases = CodecGolden::Get().Cases("encode_jpeg");
  ASSERT_EQ(cases.size(), 6u);
  for (const CodecCase& c : cases) {
    const std::vector<int64_t>& s = c.shape;
    Tensor image = Tensor::Allocate(DType::kUInt8, Shape{s[0], s[1], s[2]}).value();
    std::memcpy(image.raw_data(), c.expected.data(), c.expected.size());
    EncodeJpegOptions o;
    o.quality = static_cast<int>(c.Int("quality"));
    o.chroma_downsampling = c.Int("chroma") == 420;
    o.progressive = c.Int("progressive") != 0;
    SLUICE_ASSERT_OK_AND_ASSIGN(std::string jpeg, EncodeJpeg(image, o));
    EXPECT_EQ(jpeg, CodecGolden::Read(c.Get("output"))) << c.Describe();
  }
}

TEST(EncodeJpeg, RoundTripsClosely) {
  // A smooth image survives quality 95 within a few levels.
  Tensor image = Tensor::Allocate(DType::kUInt8, Shape{40, 50, 3}).value();
  auto px = image.flat<uint8_t>();
  for (int y = 0; y < 40; ++y) {
    for (int x = 0; x < 50; ++x) {
      px[(y * 50 + x) * 3 + 0] = static_cast<uint8_t>(x * 5);
      px[(y * 50 + x) * 3 + 1] = static_cast<uint8_t>(y * 6);
      px[(y * 50 + x) * 3 + 2] = static_cast<uint8_t>(128);
    }
  }
  for (bool chroma : {true, false}) {
    for (bool progressive : {false, true}) {
      for (bool optimize : {false, true}) {
        EncodeJpegOptions o;
        o.chroma_downsampling = chroma;
        o.progressive = progressive;
        o.optimize_size = optimize;
        SLUICE_ASSERT_OK_AND_ASSIGN(std::string jpeg, EncodeJpeg(image, o));
        SLUICE_ASSERT_OK_AND_ASSIGN(JpegHeader h, ReadJpegHeader(jpeg));
        EXPECT_EQ(h.subsampling, chroma ? JpegSubsampling::k420 : JpegSubsampling::k444);
        EXPECT_EQ(h.progressive, progressive);
        DecodeJpegOptions d;
        d.dct_method = JpegDctMethod::kIntegerAccurate;
        SLUICE_ASSERT_OK_AND_ASSIGN(Tensor back, DecodeJpeg(jpeg, d));
        EXPECT_LE(MaxAbsDiff(back, image), 6) << chroma << progressive << optimize;
      }
    }
  }
  Tensor gray = Tensor::Zeros(DType::kUInt8, Shape{1, 1, 1}).value();
  SLUICE_ASSERT_OK_AND_ASSIGN(std::string jpeg, EncodeJpeg(gray));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor back, DecodeJpeg(jpeg));
  EXPECT_EQ(back.shape(), (Shape{1, 1, 1}));
  EXPECT_LE(back.flat<uint8_t>()[0], 1);
}

TEST(EncodeJpeg, RejectsBadImagesAndOptions) {
  SLUICE_EXPECT_ERROR(EncodeJpeg(Tensor::Zeros(DType::kFloat32, Shape{2, 2, 3}).value()),
                      StatusCode::kInvalidArgument, "uint8");
  SLUICE_EXPECT_ERROR(EncodeJpeg(Tensor::Zeros(DType::kUInt8, Shape{2, 2, 4}).value()),
                      StatusCode::kInvalidArgument, "1 or 3");
  SLUICE_EXPECT_ERROR(EncodeJpeg(Tensor::Zeros(DType::kUInt8, Shape{2, 2}).value()),
                      StatusCode::kInvalidArgument, "[height, width, 1 or 3]");
  SLUICE_EXPECT_ERROR(EncodeJpeg(Tensor::Zeros(DType::kUInt8, Shape{0, 2, 3}).value()),
                      StatusCode::kInvalidArgument, "sides");
  SLUICE_EXPECT_ERROR(EncodeJpeg(Tensor::Zeros(DType::kUInt8, Shape{1, 70000, 1}).value()),
                      StatusCode::kInvalidArgument, "65500");
  EncodeJpegOptions o;
  o.quality = 101;
  SLUICE_EXPECT_ERROR(EncodeJpeg(Tensor::Zeros(DType::kUInt8, Shape{2, 2, 3}).value(), o),
                      StatusCode::kInvalidArgument, "quality");
}

TEST(DecodeJpeg, ThreadsShareNothing) {
  const std::string a = CodecGolden::Read("big420_q85.jpg");
  const std::string b = CodecGolden::Read("cmyk_adobe.jpg");
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor want_a, DecodeJpeg(a));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor want_b, DecodeJpeg(b));
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        // Alternate files, crops and garbage on the same per-thread decoder.
        Result<Tensor> x = DecodeJpeg(i % 2 ? a : b);
        if (!x.ok() || !Identical(*x, i % 2 ? want_a : want_b)) ++failures[t];
        if (DecodeJpeg(a.substr(0, 100)).ok()) ++failures[t];
        if (!DecodeAndCropJpeg(a, {3, 5, 7, 9}).ok()) ++failures[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
}

}  // namespace
}  // namespace sluice::ops
