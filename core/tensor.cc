#include "sluice/core/tensor.h"

#include <cstdio>
#include <cstdlib>
#include <new>
#include <sstream>

namespace sluice {
namespace {

std::string ShapeError(std::string_view what, const Shape& shape) {
  return std::string(what) + ": shape " + shape.ToString() +
         " must be fully defined with a representable element count";
}

}  // namespace

Tensor::Tensor() : dtype_(DType::kFloat32), shape_{0}, num_elements_(0) {}

Tensor::Tensor(DType dtype, Shape shape, Buffer buffer, size_t offset)
    : dtype_(dtype),
      shape_(std::move(shape)),
      num_elements_(shape_.num_elements()),
      buffer_(std::move(buffer)),
      offset_(offset) {}

Result<Tensor> Tensor::Allocate(DType dtype, const Shape& shape) {
  const std::optional<int64_t> n = shape.CheckedNumElements();
  size_t bytes = 0;
  if (!n || __builtin_mul_overflow(static_cast<size_t>(*n), DTypeSize(dtype), &bytes)) {
    return Status::InvalidArgument(ShapeError("Tensor::Allocate", shape));
  }
  Result<Buffer> buf = Buffer::Allocate(bytes);
  if (!buf.ok()) {
    return buf.status().WithContext("allocating " + std::string(DTypeName(dtype)) +
                                    shape.ToString() + " tensor");
  }
  Tensor t(dtype, shape, std::move(buf).value(), 0);
  if (dtype == DType::kString) {
    auto* views = reinterpret_cast<std::string_view*>(t.raw_data());
    for (int64_t i = 0; i < *n; ++i) new (&views[i]) std::string_view();
    t.string_owners_ = std::make_shared<std::vector<Buffer>>();
  }
  return t;
}

Result<Tensor> Tensor::Zeros(DType dtype, const Shape& shape) {
  Result<Tensor> t = Allocate(dtype, shape);
  if (t.ok() && dtype != DType::kString && t->byte_size() > 0) {
    std::memset(t->raw_data(), 0, t->byte_size());
  }
  return t;
}

Result<Tensor> Tensor::FromBuffer(DType dtype, const Shape& shape, Buffer buffer, size_t offset) {
  if (dtype == DType::kString) {
    return Status::InvalidArgument(
        "Tensor::FromBuffer cannot view a string tensor; use "
        "FromStringViews");
  }
  const std::optional<int64_t> n = shape.CheckedNumElements();
  size_t bytes = 0;
  if (!n || __builtin_mul_overflow(static_cast<size_t>(*n), DTypeSize(dtype), &bytes)) {
    return Status::InvalidArgument(ShapeError("Tensor::FromBuffer", shape));
  }
  if (offset > buffer.size() || bytes > buffer.size() - offset) {
    return Status::InvalidArgument("Tensor::FromBuffer: " + std::string(DTypeName(dtype)) +
                                   shape.ToString() + " needs " + std::to_string(bytes) +
                                   " bytes at offset " + std::to_string(offset) +
                                   " but the buffer has " + std::to_string(buffer.size()));
  }
  return Tensor(dtype, shape, std::move(buffer), offset);
}

Result<Tensor> Tensor::FromStrings(std::span<const std::string_view> values, const Shape& shape) {
  Result<Tensor> t = Allocate(DType::kString, shape);
  if (!t.ok()) return t;
  if (static_cast<int64_t>(values.size()) != t->num_elements()) {
    return Status::InvalidArgument("FromStrings: " + std::to_string(values.size()) +
                                   " values cannot fill shape " + shape.ToString());
  }
  size_t total = 0;
  for (std::string_view v : values) total += v.size();
  Result<Buffer> bytes = Buffer::Allocate(total);
  if (!bytes.ok()) return bytes.status();
  auto* views = reinterpret_cast<std::string_view*>(t->raw_data());
  char* out = reinterpret_cast<char*>(bytes->data());
  for (size_t i = 0; i < values.size(); ++i) {
    if (!values[i].empty()) std::memcpy(out, values[i].data(), values[i].size());
    views[i] = std::string_view(out, values[i].size());
    out += values[i].size();
  }
  t->AddStringOwner(*bytes);
  return t;
}

Result<Tensor> Tensor::FromStrings(const std::vector<std::string>& values) {
  std::vector<std::string_view> views(values.begin(), values.end());
  return FromStrings(views, Shape{static_cast<int64_t>(values.size())});
}

Tensor Tensor::StringScalar(std::string_view value) {
  return FromStrings(std::span<const std::string_view>(&value, 1), Shape{}).value();
}

Result<Tensor> Tensor::FromStringViews(const Shape& shape, Buffer views, std::vector<Buffer> owners,
                                       size_t views_offset) {
  const std::optional<int64_t> n = shape.CheckedNumElements();
  size_t bytes = 0;
  if (!n || __builtin_mul_overflow(static_cast<size_t>(*n), sizeof(std::string_view), &bytes)) {
    return Status::InvalidArgument(ShapeError("Tensor::FromStringViews", shape));
  }
  if (views_offset > views.size() || bytes > views.size() - views_offset ||
      views_offset % alignof(std::string_view) != 0) {
    return Status::InvalidArgument(
        "Tensor::FromStringViews: views buffer too small or misaligned "
        "for shape " +
        shape.ToString());
  }
  Tensor t(DType::kString, shape, std::move(views), views_offset);
  t.string_owners_ = std::make_shared<std::vector<Buffer>>(std::move(owners));
  return t;
}

Result<Tensor> Tensor::FromVector(const std::vector<bool>& values) {
  SLUICE_ASSIGN_OR_RETURN(Tensor t,
                          Allocate(DType::kBool, Shape{static_cast<int64_t>(values.size())}));
  bool* out = t.flat<bool>().data();
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return t;
}

Result<Tensor> Tensor::Slice(int64_t begin, int64_t end) const {
  if (shape_.rank() == 0) return Status::InvalidArgument("Tensor::Slice: cannot slice a scalar");
  const int64_t rows = shape_.dim(0);
  if (begin < 0 || begin > end || end > rows) {
    return Status::OutOfRange("Tensor::Slice: rows [" + std::to_string(begin) + ", " +
                              std::to_string(end) + ") outside a tensor of shape " +
                              shape_.ToString());
  }
  const size_t row_bytes = rows == 0 ? 0 : byte_size() / static_cast<size_t>(rows);
  Shape s = shape_;
  s.set_dim(0, end - begin);
  Tensor t(dtype_, std::move(s), buffer_, offset_ + static_cast<size_t>(begin) * row_bytes);
  t.string_owners_ = string_owners_;
  return t;
}

Result<Tensor> Tensor::Row(int64_t i) const {
  Result<Tensor> s = Slice(i, i + 1);
  if (!s.ok()) return s;
  s->shape_ = shape_.Subshape(1);
  return s;
}

Result<Tensor> Tensor::Reshape(const Shape& shape) const {
  const std::optional<int64_t> n = shape.CheckedNumElements();
  if (!n || *n != num_elements_) {
    return Status::InvalidArgument("Tensor::Reshape: cannot reshape " + shape_.ToString() + " (" +
                                   std::to_string(num_elements_) + " elements) to " +
                                   shape.ToString());
  }
  Tensor t = *this;
  t.shape_ = shape;
  return t;
}

Result<Tensor> Tensor::Clone() const {
  if (dtype_ == DType::kString) {
    std::span<const std::string_view> v = flat<std::string_view>();
    return FromStrings(v, shape_);
  }
  Result<Tensor> t = Allocate(dtype_, shape_);
  if (t.ok() && byte_size() > 0) std::memcpy(t->raw_data(), raw_data(), byte_size());
  return t;
}

Buffer Tensor::StringOwnerOf(std::string_view bytes) const {
  for (const Buffer& b : string_owners()) {
    const char* begin = reinterpret_cast<const char*>(b.data());
    if (bytes.data() >= begin && bytes.data() + bytes.size() <= begin + b.size()) return b;
  }
  return Buffer();
}

std::span<const Buffer> Tensor::string_owners() const {
  if (!string_owners_) return {};
  return *string_owners_;
}

void Tensor::AddStringOwner(const Buffer& owner) {
  if (!owner) return;
  if (!string_owners_) {
    string_owners_ = std::make_shared<std::vector<Buffer>>();
  } else if (!string_owners_->empty() && string_owners_->back().data() == owner.data()) {
    return;
  } else if (string_owners_.use_count() > 1) {
    // Copy on write: other handles (slices) keep their own owner list.
    string_owners_ = std::make_shared<std::vector<Buffer>>(*string_owners_);
  }
  string_owners_->push_back(owner);
}

void Tensor::CheckType(DType requested) const {
  if (requested != dtype_) {
    std::fprintf(stderr, "sluice: Tensor of dtype %s accessed as %s\n",
                 std::string(DTypeName(dtype_)).c_str(), std::string(DTypeName(requested)).c_str());
    std::abort();
  }
}

std::string Tensor::DebugString(int max_entries) const {
  std::ostringstream os;
  os << DTypeName(dtype_) << shape_.ToString() << " {";
  const int64_t n = std::min<int64_t>(num_elements_, max_entries);
  VisitDType(dtype_, [&](auto zero) {
    using T = decltype(zero);
    const auto* p = reinterpret_cast<const T*>(raw_data());
    for (int64_t i = 0; i < n; ++i) {
      if (i) os << ", ";
      if constexpr (std::is_same_v<T, std::string_view>) {
        os << '"' << p[i] << '"';
      } else if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
        os << static_cast<float>(p[i]);
      } else if constexpr (std::is_same_v<T, uint8_t>) {
        os << static_cast<int>(p[i]);
      } else {
        os << p[i];
      }
    }
  });
  if (num_elements_ > n) os << ", ...";
  os << "}";
  return os.str();
}

bool Identical(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || !(a.shape() == b.shape())) return false;
  if (a.dtype() == DType::kString) {
    auto x = a.flat<std::string_view>(), y = b.flat<std::string_view>();
    return std::equal(x.begin(), x.end(), y.begin(), y.end());
  }
  return a.byte_size() == 0 || std::memcmp(a.raw_data(), b.raw_data(), a.byte_size()) == 0;
}

}  // namespace sluice
