#include "sluice/core/element_codec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <vector>

#include "sluice/core/rng.h"
#include "test_util.h"

namespace sluice {
namespace {

void ExpectSameElement(const Element& a, const Element& b) {
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(a.names(), b.names());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(Identical(a[i], b[i]))
        << "component " << i << ": " << a[i].DebugString() << " vs " << b[i].DebugString();
  }
}

std::string Encode(const Element& e) {
  std::string out;
  const Status s = EncodeElement(e, &out);
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(out.size(), EncodedElementSize(e));
  return out;
}

// Encodes, decodes and checks the whole input was consumed.
Result<Element> RoundTrip(const Element& e) {
  const std::string bytes = Encode(e);
  std::string_view in = bytes;
  Result<Element> d = DecodeElement(&in, "test");
  if (d.ok()) {
    EXPECT_TRUE(in.empty()) << in.size() << " bytes left";
  }
  return d;
}

template <typename T>
Tensor Iota(const Shape& shape) {
  Tensor t = Tensor::Allocate(kDTypeOf<T>, shape).value();
  auto v = t.flat<T>();
  for (size_t i = 0; i < v.size(); ++i) {
    if constexpr (std::is_same_v<T, bool>) {
      v[i] = i % 3 == 0;
    } else if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
      v[i] = T(static_cast<float>(i) * 0.5f - 1.0f);
    } else {
      v[i] = static_cast<T>(i * 37 + 5);
    }
  }
  return t;
}

// One element holding every dtype, some scalars, zero-element tensors and
// strings: the seed for the corruption tests.
Element Everything() {
  std::vector<Tensor> c = {
      Iota<bool>(Shape{5}),
      Iota<uint8_t>(Shape{2, 3}),
      Iota<int32_t>(Shape{4}),
      Tensor::Scalar<int64_t>(-9),
      Iota<float16>(Shape{3}),
      Iota<bfloat16>(Shape{1, 2}),
      Iota<float>(Shape{2, 2}),
      Tensor::Scalar<double>(3.25),
      Tensor::FromStrings({"", "cat", std::string("n\0ul", 4), ""}).value(),
      Tensor::Allocate(DType::kFloat32, Shape{3, 0}).value(),
      Tensor::StringScalar("only"),
  };
  return Element(std::move(c),
                 {"b", "u8", "i32", "i64", "", "bf", "f32", "f64", "s", "empty", "x"});
}

TEST(ElementCodecTest, RoundTripsEveryNumericDType) {
  const Tensor tensors[] = {Iota<bool>(Shape{2, 3}),    Iota<uint8_t>(Shape{2, 3}),
                            Iota<int32_t>(Shape{2, 3}), Iota<int64_t>(Shape{2, 3}),
                            Iota<float16>(Shape{2, 3}), Iota<bfloat16>(Shape{2, 3}),
                            Iota<float>(Shape{2, 3}),   Iota<double>(Shape{2, 3})};
  for (const Tensor& t : tensors) {
    SCOPED_TRACE(DTypeName(t.dtype()));
    const Element e({t}, {"v"});
    SLUICE_ASSERT_OK_AND_ASSIGN(Element d, RoundTrip(e));
    ExpectSameElement(e, d);
  }
}

TEST(ElementCodecTest, RoundTripsScalarsOfEveryDType) {
  const Element e({Tensor::Scalar<bool>(true), Tensor::Scalar<uint8_t>(255),
                   Tensor::Scalar<int32_t>(std::numeric_limits<int32_t>::min()),
                   Tensor::Scalar<int64_t>(std::numeric_limits<int64_t>::max()),
                   Tensor::Scalar<float16>(float16(-2.5f)),
                   Tensor::Scalar<bfloat16>(bfloat16(7.0f)), Tensor::Scalar<float>(-0.0f),
                   Tensor::Scalar<double>(std::numeric_limits<double>::quiet_NaN()),
                   Tensor::StringScalar("scalar")});
  SLUICE_ASSERT_OK_AND_ASSIGN(Element d, RoundTrip(e));
  ExpectSameElement(e, d);  // bit patterns: -0.0 and NaN survive
  EXPECT_TRUE(std::signbit(d[6].scalar<float>()));
  EXPECT_TRUE(std::isnan(d[7].scalar<double>()));
  EXPECT_EQ(d[8].scalar<std::string_view>(), "scalar");
  for (const Tensor& t : d.components()) EXPECT_EQ(t.shape().rank(), 0);
}

TEST(ElementCodecTest, RoundTripsStrings) {
  const std::string binary("\0\xff\x01 bytes", 9);
  const Element e({Tensor::FromStrings({"", "", "a", binary, std::string(1000, 'z'), ""}).value(),
                   Tensor::FromStrings(std::vector<std::string>{}).value()},
                  {"s", "none"});
  SLUICE_ASSERT_OK_AND_ASSIGN(Element d, RoundTrip(e));
  ExpectSameElement(e, d);
  EXPECT_EQ(d[0].flat<std::string_view>()[3], binary);
}

TEST(ElementCodecTest, RoundTripsStringViewsIntoOtherBuffers) {
  // A tensor whose views point into a "read buffer" it keeps alive, as the
  // Example parser makes, and a row sliced out of a bigger string tensor.
  const std::string_view record = "headerAPPLEpadBANANAtrailer";
  Buffer owner = Buffer::Allocate(record.size()).value();
  std::memcpy(owner.data(), record.data(), record.size());
  const char* base = reinterpret_cast<const char*>(owner.data());
  Buffer views = Buffer::Allocate(3 * sizeof(std::string_view)).value();
  auto* v = reinterpret_cast<std::string_view*>(views.data());
  new (&v[0]) std::string_view(base + 6, 5);
  new (&v[1]) std::string_view(base + 14, 6);
  new (&v[2]) std::string_view(base, 0);
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor viewing, Tensor::FromStringViews(Shape{3}, views, {owner}));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor big, Tensor::FromStrings({"r0a", "r0b", "r1a", "r1b"}));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor grid, big.Reshape(Shape{2, 2}));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor row, grid.Row(1));

  const Element e({viewing, row}, {"fruit", "row"});
  std::string bytes = Encode(e);
  std::string_view in = bytes;
  SLUICE_ASSERT_OK_AND_ASSIGN(Element d, DecodeElement(&in, "test"));
  bytes.assign(bytes.size(), '#');  // the decoded element owns copies
  EXPECT_EQ(d[0].flat<std::string_view>()[0], "APPLE");
  EXPECT_EQ(d[0].flat<std::string_view>()[1], "BANANA");
  EXPECT_EQ(d[0].flat<std::string_view>()[2], "");
  EXPECT_EQ(d[1].shape(), Shape{2});
  EXPECT_EQ(d[1].flat<std::string_view>()[0], "r1a");
  EXPECT_EQ(d[1].flat<std::string_view>()[1], "r1b");
  ASSERT_EQ(d[0].string_owners().size(), 1u);
}

TEST(ElementCodecTest, RoundTripsZeroElementTensors) {
  const Element e({Tensor::Allocate(DType::kFloat32, Shape{0}).value(),
                   Tensor::Allocate(DType::kInt64, Shape{4, 0, 2}).value(),
                   Tensor::Allocate(DType::kString, Shape{0, 3}).value(),
                   Tensor::Allocate(DType::kUInt8, Shape{0, int64_t{1} << 40}).value(), Tensor()});
  SLUICE_ASSERT_OK_AND_ASSIGN(Element d, RoundTrip(e));
  ExpectSameElement(e, d);
  EXPECT_EQ(d[3].shape(), (Shape{0, int64_t{1} << 40}));
}

TEST(ElementCodecTest, RoundTripsEverythingAtOnce) {
  const Element e = Everything();
  SLUICE_ASSERT_OK_AND_ASSIGN(Element d, RoundTrip(e));
  ExpectSameElement(e, d);
  EXPECT_EQ(d.get("f64")->scalar<double>(), 3.25);
  // Tensors of 64 bytes or more land 64-byte aligned, like Tensor::Allocate's;
  // smaller ones 8-byte aligned.
  const Element big({Iota<float>(Shape{16}), Tensor::Scalar<uint8_t>(1), Iota<int64_t>(Shape{9}),
                     Tensor::Scalar<uint8_t>(2), Tensor::FromStrings({"a", "b", "c", "d"}).value(),
                     Tensor::Scalar<int32_t>(3)});
  SLUICE_ASSERT_OK_AND_ASSIGN(Element b, RoundTrip(big));
  ExpectSameElement(big, b);
  for (const Element* x : {&d, &b}) {
    for (const Tensor& t : x->components()) {
      if (t.num_elements() == 0) continue;
      EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % (t.byte_size() >= 64 ? 64 : 8), 0u)
          << t.DebugString();
    }
  }
}

TEST(ElementCodecTest, NamedUnnamedAndEmptyElements) {
  const Element unnamed({Tensor::Scalar<int32_t>(1), Tensor::Scalar<int32_t>(2)});
  SLUICE_ASSERT_OK_AND_ASSIGN(Element d, RoundTrip(unnamed));
  ExpectSameElement(unnamed, d);
  EXPECT_EQ(d.names(), (std::vector<std::string>{"", ""}));

  const Element partly({Tensor::Scalar<int32_t>(1), Tensor::Scalar<int32_t>(2)}, {"", "second"});
  SLUICE_ASSERT_OK_AND_ASSIGN(Element p, RoundTrip(partly));
  ExpectSameElement(partly, p);
  EXPECT_EQ(p.get("second")->scalar<int32_t>(), 2);

  const Element named({Tensor::Scalar<int32_t>(1)}, {std::string("na\0me", 5)});
  SLUICE_ASSERT_OK_AND_ASSIGN(Element n, RoundTrip(named));
  ExpectSameElement(named, n);

  const Element empty;
  EXPECT_EQ(EncodedElementSize(empty), 5u);
  SLUICE_ASSERT_OK_AND_ASSIGN(Element z, RoundTrip(empty));
  EXPECT_TRUE(z.empty());
}

TEST(ElementCodecTest, DecodesConcatenatedElementsInOrder) {
  const Element a({Tensor::Scalar<int64_t>(1)}, {"id"});
  const Element b;
  const Element c = Everything();
  std::string bytes = "prefix";  // EncodeElement appends
  for (const Element* e : {&a, &b, &c, &a}) SLUICE_ASSERT_OK(EncodeElement(*e, &bytes));
  ASSERT_EQ(bytes.size(),
            6 + 2 * EncodedElementSize(a) + EncodedElementSize(b) + EncodedElementSize(c));
  std::string_view in = bytes;
  in.remove_prefix(6);
  for (const Element* want : {&a, &b, &c, &a}) {
    SLUICE_ASSERT_OK_AND_ASSIGN(Element got, DecodeElement(&in, "concat"));
    ExpectSameElement(*want, got);
  }
  EXPECT_TRUE(in.empty());
  SLUICE_EXPECT_ERROR(DecodeElement(&in, "concat"), StatusCode::kDataLoss, "concat");
}

TEST(ElementCodecTest, GoldenBytes) {
  const Element e({Tensor::Scalar<int32_t>(0x01020304), Tensor::FromStrings({"ab"}).value()},
                  {"n", ""});
  const std::string want = std::string(
      "\xe1"              // format byte
      "\x02\x00\x00\x00"  // 2 components
      // component 0: "n", int32, rank 0, 4 bytes
      "\x01\x00\x00\x00"
      "n"
      "\x02"
      "\x00"
      "\x04\x03\x02\x01"
      // component 1: "", string, rank 1, dim 1
      "\x00\x00\x00\x00"
      "\x08"
      "\x01"
      "\x01\x00\x00\x00\x00\x00\x00\x00"
      "\x02\x00\x00\x00\x00\x00\x00\x00"
      "ab",
      40);
  EXPECT_EQ(Encode(e), want);
}

TEST(ElementCodecTest, EncodeRejectsRankAboveMaximum) {
  std::vector<int64_t> dims(element_codec::kMaxRank + 1, 1);
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor t, Tensor::Zeros(DType::kUInt8, Shape(dims)));
  std::string out = "keep";
  SLUICE_EXPECT_ERROR(EncodeElement(Element({t}, {"deep"}), &out), StatusCode::kInvalidArgument,
                      "component 0 ('deep') has rank 33");
  EXPECT_EQ(out, "keep");
  dims.pop_back();
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor max, Tensor::Zeros(DType::kUInt8, Shape(dims)));
  SLUICE_ASSERT_OK_AND_ASSIGN(Element d, RoundTrip(Element({max})));
  EXPECT_EQ(d[0].shape().rank(), element_codec::kMaxRank);
}

TEST(ElementCodecTest, EveryTruncationIsDataLoss) {
  const std::string bytes = Encode(Everything());
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::string_view in(bytes.data(), n);
    const Result<Element> d = DecodeElement(&in, "cut.bin");
    ASSERT_FALSE(d.ok()) << "decoded a prefix of " << n << " bytes";
    ASSERT_EQ(d.status().code(), StatusCode::kDataLoss) << d.status();
    ASSERT_NE(d.status().message().find("cut.bin: corrupt element encoding at byte "),
              std::string::npos)
        << d.status();
    ASSERT_EQ(in.size(), n) << "input advanced on error";
  }
}

// Hand-made hostile encodings. Each starts from a valid one-component
// element and breaks one field.
class ElementCodecHostileTest : public ::testing::Test {
 protected:
  // 0xE1, 1 component, name "img", `dtype`, rank and dims, then `data`.
  static std::string Header(uint8_t dtype, std::vector<int64_t> dims, std::string data = "") {
    std::string s = "\xe1";
    s += std::string("\x01\x00\x00\x00", 4);
    s += std::string("\x03\x00\x00\x00img", 7);
    s += static_cast<char>(dtype);
    s += static_cast<char>(dims.size());
    for (int64_t d : dims) {
      for (int i = 0; i < 8; ++i) s += static_cast<char>(static_cast<uint64_t>(d) >> (8 * i));
    }
    return s + data;
  }
  static Status Decode(std::string_view bytes) {
    std::string_view in = bytes;
    const Result<Element> r = DecodeElement(&in, "hostile.bin@100");
    if (!r.ok()) {
      EXPECT_EQ(in.size(), bytes.size());
    }
    return r.status();
  }
};

TEST_F(ElementCodecHostileTest, BaselineDecodes) {
  SLUICE_ASSERT_OK(Decode(Header(/*uint8*/ 1, {2}, "\x07\x08")));
}

TEST_F(ElementCodecHostileTest, BadFormatByte) {
  std::string s = Header(1, {2}, "ab");
  s[0] = '\xe2';
  SLUICE_EXPECT_ERROR(Decode(s), StatusCode::kDataLoss,
                      "hostile.bin@100: corrupt element encoding at byte 0: format byte is 0xe2");
  SLUICE_EXPECT_ERROR(Decode(""), StatusCode::kDataLoss, "byte 0: truncated: format byte");
}

TEST_F(ElementCodecHostileTest, ComponentCountBeyondTheBytes) {
  std::string s = Header(1, {2}, "ab");
  s[4] = '\x7f';  // 0x7f000001 components
  SLUICE_EXPECT_ERROR(Decode(s), StatusCode::kDataLoss, "at byte 1: component count 2130706433");
}

TEST_F(ElementCodecHostileTest, NameLengthPastTheEnd) {
  std::string s = Header(1, {2}, "ab");
  s[5] = '\x40';
  SLUICE_EXPECT_ERROR(Decode(s), StatusCode::kDataLoss,
                      "at byte 5, component 0: name length 64 runs past the end");
}

TEST_F(ElementCodecHostileTest, UnknownDType) {
  SLUICE_EXPECT_ERROR(Decode(Header(9, {2}, "ab")), StatusCode::kDataLoss,
                      "at byte 12, component 0 ('img'): unknown dtype 9");
  SLUICE_EXPECT_ERROR(Decode(Header(255, {2}, "ab")), StatusCode::kDataLoss, "unknown dtype 255");
}

TEST_F(ElementCodecHostileTest, RankAboveMaximum) {
  std::string s = Header(1, {}, std::string(33 * 8, '\0'));
  s[13] = 33;
  SLUICE_EXPECT_ERROR(Decode(s), StatusCode::kDataLoss,
                      "at byte 13, component 0 ('img'): rank 33 exceeds the maximum of 32");
}

TEST_F(ElementCodecHostileTest, NegativeAndUnknownDims) {
  SLUICE_EXPECT_ERROR(Decode(Header(1, {2, -1}, "ab")), StatusCode::kDataLoss,
                      "at byte 22, component 0 ('img'): dimension 1 is -1 (unknown)");
  SLUICE_EXPECT_ERROR(Decode(Header(1, {std::numeric_limits<int64_t>::min()})),
                      StatusCode::kDataLoss, "at byte 14, component 0 ('img'): dimension 0 is -");
}

TEST_F(ElementCodecHostileTest, ElementCountOverflow) {
  const int64_t big = int64_t{1} << 32;
  SLUICE_EXPECT_ERROR(Decode(Header(1, {big, big})), StatusCode::kDataLoss,
                      "component 0 ('img'): the element count of shape [4294967296,4294967296] "
                      "overflows");
}

TEST_F(ElementCodecHostileTest, NumericDataPastTheEnd) {
  SLUICE_EXPECT_ERROR(Decode(Header(/*int64*/ 3, {int64_t{1} << 61})), StatusCode::kDataLoss,
                      "at byte 22, component 0 ('img'): int64[2305843009213693952] data needs");
  SLUICE_EXPECT_ERROR(Decode(Header(/*float32*/ 6, {3}, std::string(11, 'x'))),
                      StatusCode::kDataLoss, "float32[3] data needs 3 x 4 bytes, 11 left");
}

TEST_F(ElementCodecHostileTest, InvalidBool) {
  SLUICE_EXPECT_ERROR(Decode(Header(/*bool*/ 0, {3}, std::string("\x01\x00\x02", 3))),
                      StatusCode::kDataLoss,
                      "at byte 24, component 0 ('img'): bool element 2 is 2");
}

TEST_F(ElementCodecHostileTest, StringCountAndLengths) {
  SLUICE_EXPECT_ERROR(Decode(Header(/*string*/ 8, {int64_t{1} << 40})), StatusCode::kDataLoss,
                      "at byte 22, component 0 ('img'): string[1099511627776] needs");
  std::string len(8, '\0');
  len[0] = 5;
  std::string huge(8, '\xff');
  SLUICE_EXPECT_ERROR(Decode(Header(8, {2}, len + "hello" + huge)), StatusCode::kDataLoss,
                      "at byte 35, component 0 ('img'): string 1 of length 18446744073709551615 "
                      "runs past the end (0 bytes left)");
  SLUICE_EXPECT_ERROR(Decode(Header(8, {2}, len + "hello" + std::string(3, '\0'))),
                      StatusCode::kDataLoss, "at byte 35, component 0 ('img'): truncated");
}

TEST_F(ElementCodecHostileTest, LaterComponentIsNamed) {
  std::string s = Encode(Element({Tensor::Scalar<int32_t>(1)}, {"ok"}));
  s[1] = 2;  // claim a second component and append a broken one
  s += std::string("\x04\x00\x00\x00", 4) + "next" + "\x0c";
  SLUICE_EXPECT_ERROR(Decode(s), StatusCode::kDataLoss,
                      "at byte 25, component 1 ('next'): truncated: dtype and rank needs 2 bytes");
}

// Random corruptions of valid encodings never crash; every outcome is an
// element whose re-encoding is the bytes it consumed, or DataLoss.
TEST(ElementCodecTest, RandomByteFlipsNeverCrash) {
  const std::vector<std::string> seeds = {
      Encode(Everything()),
      Encode(Element({Tensor::FromStrings({"a", "", "bcd"}).value()}, {"s"})),
      Encode(Element({Iota<int64_t>(Shape{2, 2}), Iota<bool>(Shape{3})})),
  };
  Rng rng(2024);
  int decoded = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::string bytes = seeds[iter % seeds.size()];
    const int flips = 1 + static_cast<int>(rng.UniformInt(4));
    for (int f = 0; f < flips; ++f) {
      const size_t at = rng.UniformInt(bytes.size());
      if (rng.UniformInt(2) == 0) {
        bytes[at] = static_cast<char>(rng.NextU32());
      } else {
        bytes[at] = static_cast<char>(bytes[at] ^ (1 << rng.UniformInt(8)));
      }
    }
    if (rng.UniformInt(8) == 0) bytes.resize(rng.UniformInt(bytes.size() + 1));
    std::string_view in = bytes;
    const Result<Element> d = DecodeElement(&in, "flip");
    if (!d.ok()) {
      ASSERT_EQ(d.status().code(), StatusCode::kDataLoss) << d.status();
      ASSERT_NE(d.status().message().find("flip: corrupt element encoding at byte"),
                std::string::npos);
      ASSERT_EQ(in.size(), bytes.size());
      continue;
    }
    ++decoded;
    const size_t consumed = bytes.size() - in.size();
    std::string again;
    SLUICE_ASSERT_OK(EncodeElement(*d, &again));
    ASSERT_EQ(again, bytes.substr(0, consumed));
    ASSERT_EQ(EncodedElementSize(*d), consumed);
  }
  EXPECT_GT(decoded, 0);  // some flips land in data bytes and stay valid
}

TEST(ElementCodecTest, RandomGarbageNeverCrashes) {
  Rng rng(7);
  for (int iter = 0; iter < 20000; ++iter) {
    std::string bytes(rng.UniformInt(64), '\0');
    for (char& c : bytes) c = static_cast<char>(rng.NextU32());
    if (!bytes.empty() && rng.UniformInt(2) == 0) bytes[0] = '\xe1';
    std::string_view in = bytes;
    const Result<Element> d = DecodeElement(&in, "garbage");
    if (!d.ok()) {
      ASSERT_EQ(d.status().code(), StatusCode::kDataLoss) << d.status();
    }
  }
}

}  // namespace
}  // namespace sluice
