#include "sluice/core/element_codec.h"

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstring>
#include <limits>
#include <new>
#include <optional>
#include <utility>
#include <vector>

#include "sluice/core/buffer.h"
#include "sluice/core/tensor.h"

namespace sluice {
namespace {

namespace ec = element_codec;

// The dtype byte is the DType enum value; pin the values so that reordering
// the enum cannot silently change the format (docs/formats.md lists them).
static_assert(static_cast<int>(DType::kBool) == 0);
static_assert(static_cast<int>(DType::kUInt8) == 1);
static_assert(static_cast<int>(DType::kInt32) == 2);
static_assert(static_cast<int>(DType::kInt64) == 3);
static_assert(static_cast<int>(DType::kFloat16) == 4);
static_assert(static_cast<int>(DType::kBFloat16) == 5);
static_assert(static_cast<int>(DType::kFloat32) == 6);
static_assert(static_cast<int>(DType::kFloat64) == 7);
static_assert(static_cast<int>(DType::kString) == 8);
static_assert(kNumDTypes == 9);

// Fewest bytes a component can take: name length, dtype and rank.
constexpr size_t kMinComponentSize = ec::kNameLengthSize + ec::kDTypeSize + ec::kRankSize;

// Where decoded tensors start in their shared buffer: tensors of 64 bytes or
// more at a cache line, as Tensor::Allocate would place them, smaller ones
// (scalars, short vectors) at 8 bytes so that they pack densely.
constexpr size_t kLargeTensorAlignment = Buffer::kAlignment;
constexpr size_t kSmallTensorAlignment = 8;
static_assert(alignof(std::string_view) <= kSmallTensorAlignment);
static_assert(alignof(std::max_align_t) <= kLargeTensorAlignment);

constexpr bool kLittleEndian = std::endian::native == std::endian::little;

void PutFixed32(uint32_t v, std::string* out) {
  char b[4];
  for (int i = 0; i < 4; ++i) b[i] = static_cast<char>(v >> (8 * i));
  out->append(b, 4);
}

void PutFixed64(uint64_t v, std::string* out) {
  char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>(v >> (8 * i));
  out->append(b, 8);
}

uint64_t LoadLittleEndian(const char* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= uint64_t{static_cast<uint8_t>(p[i])} << (8 * i);
  return v;
}

// Appends `count` values of `size` bytes each from `src`, little-endian.
void AppendLittleEndian(const void* src, size_t count, size_t size, std::string* out) {
  const char* p = static_cast<const char*>(src);
  if (kLittleEndian || size == 1) {
    if (count > 0) out->append(p, count * size);
    return;
  }
  for (size_t i = 0; i < count; ++i, p += size) {
    for (size_t b = size; b-- > 0;) out->push_back(p[b]);
  }
}

// Copies `count` little-endian values of `size` bytes each into native order.
void CopyFromLittleEndian(const char* src, size_t count, size_t size, void* dst) {
  char* d = static_cast<char*>(dst);
  if (kLittleEndian || size == 1) {
    if (count > 0) std::memcpy(d, src, count * size);
    return;
  }
  for (size_t i = 0; i < count; ++i, src += size, d += size) {
    for (size_t b = 0; b < size; ++b) d[b] = src[size - 1 - b];
  }
}

std::string Hex(uint8_t b) {
  constexpr char kDigits[] = "0123456789abcdef";
  return std::string("0x") + kDigits[b >> 4] + kDigits[b & 15];
}

// The offset at or after `end` where a tensor of `size` bytes starts.
size_t PlaceTensor(size_t end, size_t size) {
  const size_t align =
      size >= kLargeTensorAlignment ? kLargeTensorAlignment : kSmallTensorAlignment;
  return (end + align - 1) / align * align;
}

std::string_view NameAt(const Element& e, size_t i) {
  const std::vector<std::string>& names = e.names();
  return i < names.size() ? std::string_view(names[i]) : std::string_view();
}

// One component as found by the validating pass, before any allocation.
struct ComponentLayout {
  std::string_view name;
  DType dtype = DType::kFloat32;
  Shape shape;
  size_t count = 0;       // elements
  size_t data_pos = 0;    // where its data starts in the input
  size_t out_offset = 0;  // where its bytes start in the output buffer
  size_t out_size = 0;    // bytes it takes there (views and string bytes for strings)
};

// Walks an encoding, checking every field against the bytes that remain.
class Parser {
 public:
  Parser(std::string_view in, std::string_view what) : in_(in), what_(what) {}

  // Fills `layouts` and returns the bytes the output buffer needs, or
  // DataLoss. Allocates nothing proportional to claimed sizes: the layouts
  // are bounded by the bytes actually present.
  Result<size_t> Parse(std::vector<ComponentLayout>* layouts);
  size_t consumed() const { return pos_; }

 private:
  size_t left() const { return in_.size() - pos_; }
  const char* here() const { return in_.data() + pos_; }
  // DataLoss at byte `at`, naming the current component if there is one.
  Status Corrupt(size_t at, std::string_view detail) const;
  // DataLoss unless `n` more bytes exist for `field`.
  Status Need(size_t n, std::string_view field) const;
  uint64_t Take(size_t n) {
    const uint64_t v = LoadLittleEndian(here(), n);
    pos_ += n;
    return v;
  }

  Status ParseComponent(ComponentLayout* c);
  Status ParseStrings(ComponentLayout* c, size_t* string_bytes);

  std::string_view in_;
  std::string_view what_;
  size_t pos_ = 0;
  std::optional<size_t> component_;  // index being parsed
  std::optional<std::string_view> component_name_;
};

Status Parser::Corrupt(size_t at, std::string_view detail) const {
  std::string msg = std::string(what_) + ": corrupt element encoding at byte " + std::to_string(at);
  if (component_) {
    msg += ", component " + std::to_string(*component_);
    if (component_name_) msg += " ('" + std::string(*component_name_) + "')";
  }
  msg += ": ";
  msg += detail;
  return Status::DataLoss(msg);
}

Status Parser::Need(size_t n, std::string_view field) const {
  if (n <= left()) return Status::OK();
  return Corrupt(pos_, "truncated: " + std::string(field) + " needs " + std::to_string(n) +
                           " bytes, " + std::to_string(left()) + " left");
}

Result<size_t> Parser::Parse(std::vector<ComponentLayout>* layouts) {
  SLUICE_RETURN_IF_ERROR(Need(1, "format byte"));
  const auto format = static_cast<uint8_t>(Take(1));
  if (format != ec::kFormatByte) {
    return Corrupt(0, "format byte is " + Hex(format) + ", expected " + Hex(ec::kFormatByte) +
                          " (element encoding version 1)");
  }
  SLUICE_RETURN_IF_ERROR(Need(ec::kComponentCountSize, "component count"));
  const size_t count_pos = pos_;
  const uint64_t count = Take(ec::kComponentCountSize);
  if (count > left() / kMinComponentSize) {
    return Corrupt(count_pos, "component count " + std::to_string(count) + " cannot fit in the " +
                                  std::to_string(left()) + " bytes left");
  }
  // Grows only as components are actually found, so a corrupt count costs
  // no more memory than the bytes that back it.
  layouts->reserve(std::min<uint64_t>(count, 64));
  size_t total = 0;
  for (size_t i = 0; i < count; ++i) {
    component_ = i;
    component_name_.reset();
    ComponentLayout& c = layouts->emplace_back();
    SLUICE_RETURN_IF_ERROR(ParseComponent(&c));
    c.out_offset = PlaceTensor(total, c.out_size);
    total = c.out_offset + c.out_size;
  }
  return total;
}

Status Parser::ParseComponent(ComponentLayout* c) {
  SLUICE_RETURN_IF_ERROR(Need(ec::kNameLengthSize, "name length"));
  const size_t name_pos = pos_;
  const uint64_t name_size = Take(ec::kNameLengthSize);
  if (name_size > left()) {
    return Corrupt(name_pos, "name length " + std::to_string(name_size) + " runs past the end (" +
                                 std::to_string(left()) + " bytes left)");
  }
  c->name = in_.substr(pos_, name_size);
  pos_ += name_size;
  component_name_ = c->name;

  SLUICE_RETURN_IF_ERROR(Need(ec::kDTypeSize + ec::kRankSize, "dtype and rank"));
  const size_t dtype_pos = pos_;
  const uint64_t dtype = Take(ec::kDTypeSize);
  if (dtype >= static_cast<uint64_t>(kNumDTypes)) {
    return Corrupt(dtype_pos, "unknown dtype " + std::to_string(dtype));
  }
  c->dtype = static_cast<DType>(dtype);
  const size_t rank_pos = pos_;
  const uint64_t rank = Take(ec::kRankSize);
  if (rank > static_cast<uint64_t>(ec::kMaxRank)) {
    return Corrupt(rank_pos, "rank " + std::to_string(rank) + " exceeds the maximum of " +
                                 std::to_string(ec::kMaxRank));
  }
  SLUICE_RETURN_IF_ERROR(Need(rank * ec::kDimSize, "dimensions"));
  int64_t dims[ec::kMaxRank];
  for (uint64_t d = 0; d < rank; ++d) {
    const size_t dim_pos = pos_;
    dims[d] = static_cast<int64_t>(Take(ec::kDimSize));
    if (dims[d] < 0) {
      return Corrupt(dim_pos, "dimension " + std::to_string(d) + " is " + std::to_string(dims[d]) +
                                  (dims[d] == Shape::kUnknownDim ? " (unknown)" : "") +
                                  "; an encoded tensor must have a fully defined shape");
    }
  }
  c->shape = Shape(std::span<const int64_t>(dims, rank));
  const std::optional<int64_t> n = c->shape.CheckedNumElements();
  if (!n) {
    return Corrupt(rank_pos, "the element count of shape " + c->shape.ToString() + " overflows");
  }
  c->count = static_cast<size_t>(*n);
  c->data_pos = pos_;

  if (c->dtype == DType::kString) {
    size_t string_bytes = 0;
    SLUICE_RETURN_IF_ERROR(ParseStrings(c, &string_bytes));
    // Bounded by the input: count <= left / 8 and string_bytes <= left.
    c->out_size = c->count * sizeof(std::string_view) + string_bytes;
    return Status::OK();
  }
  size_t bytes = 0;
  if (__builtin_mul_overflow(c->count, DTypeSize(c->dtype), &bytes) || bytes > left()) {
    return Corrupt(pos_, std::string(DTypeName(c->dtype)) + c->shape.ToString() + " data needs " +
                             std::to_string(*n) + " x " + std::to_string(DTypeSize(c->dtype)) +
                             " bytes, " + std::to_string(left()) + " left");
  }
  if (c->dtype == DType::kBool) {
    // Any byte but 0 or 1 is not a valid bool.
    for (size_t i = 0; i < bytes; ++i) {
      const auto b = static_cast<uint8_t>(in_[pos_ + i]);
      if (b > 1) {
        return Corrupt(pos_ + i, "bool element " + std::to_string(i) + " is " + std::to_string(b) +
                                     ", not 0 or 1");
      }
    }
  }
  pos_ += bytes;
  c->out_size = bytes;
  return Status::OK();
}

Status Parser::ParseStrings(ComponentLayout* c, size_t* string_bytes) {
  // Every string takes at least its length field: check the count first so
  // that a huge claimed shape fails before the loop.
  if (c->count > left() / ec::kStringLengthSize) {
    return Corrupt(pos_, "string" + c->shape.ToString() + " needs " + std::to_string(c->count) +
                             " string lengths of 8 bytes, " + std::to_string(left()) +
                             " bytes left");
  }
  *string_bytes = 0;
  for (size_t i = 0; i < c->count; ++i) {
    SLUICE_RETURN_IF_ERROR(Need(ec::kStringLengthSize, "string length"));
    const size_t len_pos = pos_;
    const uint64_t len = Take(ec::kStringLengthSize);
    if (len > left()) {
      return Corrupt(len_pos, "string " + std::to_string(i) + " of length " + std::to_string(len) +
                                  " runs past the end (" + std::to_string(left()) + " bytes left)");
    }
    pos_ += len;
    *string_bytes += len;
  }
  return Status::OK();
}

// Builds the tensor for `c` in `buffer`, copying its data from `in`.
Result<Tensor> Materialize(const ComponentLayout& c, std::string_view in, const Buffer& buffer) {
  uint8_t* out = buffer.data() + c.out_offset;
  if (c.dtype != DType::kString) {
    CopyFromLittleEndian(in.data() + c.data_pos, c.count, DTypeSize(c.dtype), out);
    return Tensor::FromBuffer(c.dtype, c.shape, buffer, c.out_offset);
  }
  auto* views = reinterpret_cast<std::string_view*>(out);
  char* bytes = reinterpret_cast<char*>(out + c.count * sizeof(std::string_view));
  const char* p = in.data() + c.data_pos;
  for (size_t i = 0; i < c.count; ++i) {
    const size_t len = LoadLittleEndian(p, ec::kStringLengthSize);
    p += ec::kStringLengthSize;
    if (len > 0) std::memcpy(bytes, p, len);
    new (&views[i]) std::string_view(len > 0 ? bytes : nullptr, len);
    p += len;
    bytes += len;
  }
  std::vector<Buffer> owners;
  if (c.count > 0) owners.push_back(buffer);
  return Tensor::FromStringViews(c.shape, buffer, std::move(owners), c.out_offset);
}

}  // namespace

size_t EncodedElementSize(const Element& e) {
  size_t size = 1 + ec::kComponentCountSize;
  for (size_t i = 0; i < e.size(); ++i) {
    const Tensor& t = e[i];
    size += ec::kNameLengthSize + NameAt(e, i).size() + ec::kDTypeSize + ec::kRankSize +
            ec::kDimSize * static_cast<size_t>(t.shape().rank());
    if (t.dtype() == DType::kString) {
      for (std::string_view s : t.flat<std::string_view>())
        size += ec::kStringLengthSize + s.size();
    } else {
      size += t.byte_size();
    }
  }
  return size;
}

Status EncodeElement(const Element& e, std::string* out) {
  if (e.size() > std::numeric_limits<uint32_t>::max()) {
    return Status::InvalidArgument("EncodeElement: " + std::to_string(e.size()) +
                                   " components; the encoding allows at most 2^32 - 1");
  }
  for (size_t i = 0; i < e.size(); ++i) {
    const std::string_view name = NameAt(e, i);
    if (e[i].shape().rank() > ec::kMaxRank) {
      return Status::InvalidArgument(
          "EncodeElement: component " + std::to_string(i) + " ('" + std::string(name) +
          "') has rank " + std::to_string(e[i].shape().rank()) + "; the encoding allows at most " +
          std::to_string(ec::kMaxRank));
    }
    if (name.size() > std::numeric_limits<uint32_t>::max()) {
      return Status::InvalidArgument("EncodeElement: the name of component " + std::to_string(i) +
                                     " is longer than 2^32 - 1 bytes");
    }
  }
  out->reserve(out->size() + EncodedElementSize(e));
  out->push_back(static_cast<char>(ec::kFormatByte));
  PutFixed32(static_cast<uint32_t>(e.size()), out);
  for (size_t i = 0; i < e.size(); ++i) {
    const Tensor& t = e[i];
    const std::string_view name = NameAt(e, i);
    PutFixed32(static_cast<uint32_t>(name.size()), out);
    out->append(name);
    out->push_back(static_cast<char>(t.dtype()));
    out->push_back(static_cast<char>(t.shape().rank()));
    for (int64_t d : t.shape().dims()) PutFixed64(static_cast<uint64_t>(d), out);
    if (t.dtype() == DType::kString) {
      for (std::string_view s : t.flat<std::string_view>()) {
        PutFixed64(s.size(), out);
        if (!s.empty()) out->append(s);
      }
    } else {
      AppendLittleEndian(t.raw_data(), static_cast<size_t>(t.num_elements()), DTypeSize(t.dtype()),
                         out);
    }
  }
  return Status::OK();
}

Result<Element> DecodeElement(std::string_view* in, std::string_view what) {
  Parser parser(*in, what);
  std::vector<ComponentLayout> layouts;
  SLUICE_ASSIGN_OR_RETURN(const size_t total, parser.Parse(&layouts));

  // One allocation for every component; none at all if they are all empty.
  Buffer buffer;
  if (total > 0) {
    Result<Buffer> b = Buffer::Allocate(total);
    if (!b.ok()) return b.status().WithContext(std::string(what) + ": decoding an element");
    buffer = std::move(b).value();
  }
  std::vector<Tensor> components;
  components.reserve(layouts.size());
  std::vector<std::string> names;
  names.reserve(layouts.size());
  bool named = false;
  for (size_t i = 0; i < layouts.size(); ++i) {
    Result<Tensor> t = Materialize(layouts[i], *in, buffer);
    if (!t.ok()) {
      return Status::Internal(std::string(what) + ": decoding element component " +
                              std::to_string(i) + ": " + t.status().ToString());
    }
    components.push_back(std::move(t).value());
    names.emplace_back(layouts[i].name);
    named = named || !layouts[i].name.empty();
  }
  in->remove_prefix(parser.consumed());
  if (components.empty()) return Element();
  if (!named) return Element(std::move(components));
  return Element(std::move(components), std::move(names));
}

}  // namespace sluice
