// Tensor: a typed, shaped, dense array over a shared Buffer.
//
// A Tensor is a cheap handle: copying one shares its bytes, and Slice(),
// Row() and Reshape() return views of the same bytes without copying. Writes
// through one handle are seen by every handle sharing the buffer; Clone()
// makes an independent copy.
//
// Numeric elements are stored row-major and contiguous. A string tensor
// stores one std::string_view per element; the bytes they point at live in
// other buffers (a record read buffer, say) that the tensor keeps alive as
// its "string owners", so parsed strings are never copied.
//
// Thread-safety: const methods may be called concurrently. Mutating the
// bytes concurrently with reading them is a data race, as for any memory.
#ifndef SLUICE_CORE_TENSOR_H_
#define SLUICE_CORE_TENSOR_H_

#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/core/buffer.h"
#include "sluice/core/dtype.h"
#include "sluice/core/result.h"
#include "sluice/core/shape.h"

namespace sluice {

class Tensor {
 public:
  // float32 of shape [0]: no elements, no buffer.
  Tensor();

  // Uninitialized numeric elements (strings start as empty views).
  // InvalidArgument if `shape` is not fully defined or overflows;
  // ResourceExhausted if the bytes cannot be allocated.
  static Result<Tensor> Allocate(DType dtype, const Shape& shape);
  // As Allocate(), with every element zero (empty for strings).
  static Result<Tensor> Zeros(DType dtype, const Shape& shape);
  // Views `buffer` from `offset` as a numeric tensor. InvalidArgument if the
  // buffer is too small or dtype is kString.
  static Result<Tensor> FromBuffer(DType dtype, const Shape& shape, Buffer buffer,
                                   size_t offset = 0);

  // Copies `values` into a new tensor; their count must equal the shape's.
  template <typename T>
  static Result<Tensor> FromVector(std::span<const T> values, const Shape& shape);
  template <typename T>
  static Result<Tensor> FromVector(const std::vector<T>& values) {
    return FromVector<T>(std::span<const T>(values), Shape{static_cast<int64_t>(values.size())});
  }
  // Copies the strings' bytes into one buffer the tensor owns.
  // bool values (std::vector<bool> packs its bits: it has no span).
  static Result<Tensor> FromVector(const std::vector<bool>& values);
  static Result<Tensor> FromStrings(std::span<const std::string_view> values, const Shape& shape);
  static Result<Tensor> FromStrings(const std::vector<std::string>& values);

  // Rank-0 tensors. Small fixed allocations: like operator new, these abort
  // only if the process is out of memory.
  template <typename T>
  static Tensor Scalar(T value);
  static Tensor StringScalar(std::string_view value);

  // A string tensor whose elements are the string_views stored in `views`
  // (num_elements of them from `views_offset`), pointing into memory kept
  // alive by `owners`. REQUIRES: every view points into an owner, or into
  // memory that outlives the tensor.
  static Result<Tensor> FromStringViews(const Shape& shape, Buffer views,
                                        std::vector<Buffer> owners, size_t views_offset = 0);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t num_elements() const { return num_elements_; }
  // Bytes of element storage (string_views for kString).
  size_t byte_size() const { return static_cast<size_t>(num_elements_) * DTypeSize(dtype_); }

  // The elements in row-major order. REQUIRES: T matches dtype() (checked;
  // a mismatch aborts naming both types).
  template <typename T>
  std::span<T> flat() {
    CheckType(kDTypeOf<T>);
    return {reinterpret_cast<T*>(raw_data()), static_cast<size_t>(num_elements_)};
  }
  template <typename T>
  std::span<const T> flat() const {
    CheckType(kDTypeOf<T>);
    return {reinterpret_cast<const T*>(raw_data()), static_cast<size_t>(num_elements_)};
  }
  // REQUIRES: T matches dtype() and num_elements() == 1.
  template <typename T>
  T scalar() const {
    return flat<T>()[0];
  }

  void* raw_data() { return buffer_.data() + offset_; }
  const void* raw_data() const { return buffer_.data() + offset_; }
  const Buffer& buffer() const { return buffer_; }
  // Where the bytes live (Buffer::device): cpu:0 but for device memory,
  // which host code must not read.
  Device device() const { return buffer_.device(); }
  size_t buffer_offset() const { return offset_; }

  // Rows [begin, end) along dimension 0, sharing this tensor's bytes.
  // InvalidArgument for a scalar, OutOfRange unless 0 <= begin <= end <= dim(0).
  Result<Tensor> Slice(int64_t begin, int64_t end) const;
  // Row `i` along dimension 0, with rank one less, sharing bytes.
  Result<Tensor> Row(int64_t i) const;
  // The same elements with another shape of equal element count.
  Result<Tensor> Reshape(const Shape& shape) const;
  // An independent deep copy (string bytes are copied into one new buffer).
  Result<Tensor> Clone() const;

  // Buffers keeping string bytes alive (empty for numeric tensors).
  std::span<const Buffer> string_owners() const;
  // The string owner whose bytes hold all of `bytes` (a view this tensor
  // holds), or a null Buffer if none does.
  Buffer StringOwnerOf(std::string_view bytes) const;
  // Adds `owner` to the buffers kept alive, unless it is already the last
  // one added. For writers filling a string tensor with views.
  void AddStringOwner(const Buffer& owner);

  // "int64[2,3] {1, 2, 3, 4, 5, 6}", eliding after `max_entries` elements.
  std::string DebugString(int max_entries = 10) const;

 private:
  Tensor(DType dtype, Shape shape, Buffer buffer, size_t offset);
  void CheckType(DType requested) const;

  DType dtype_;
  Shape shape_;
  int64_t num_elements_;
  Buffer buffer_;
  size_t offset_ = 0;
  std::shared_ptr<std::vector<Buffer>> string_owners_;
};

// Same dtype, shape and elements. Floats compare by bit pattern (so NaN
// equals the same NaN and 0.0 differs from -0.0); strings by content.
bool Identical(const Tensor& a, const Tensor& b);

// ---------------------------------------------------------------------------
// Template definitions.

template <typename T>
Result<Tensor> Tensor::FromVector(std::span<const T> values, const Shape& shape) {
  static_assert(!std::is_same_v<T, std::string_view>, "use FromStrings for strings");
  Result<Tensor> t = Allocate(kDTypeOf<T>, shape);
  if (!t.ok()) return t;
  if (static_cast<int64_t>(values.size()) != t->num_elements()) {
    return Status::InvalidArgument("FromVector: " + std::to_string(values.size()) +
                                   " values cannot fill shape " + shape.ToString());
  }
  if (!values.empty()) std::memcpy(t->raw_data(), values.data(), values.size_bytes());
  return t;
}

template <typename T>
Tensor Tensor::Scalar(T value) {
  static_assert(!std::is_same_v<T, std::string_view>, "use StringScalar for strings");
  Result<Tensor> t = Allocate(kDTypeOf<T>, Shape{});
  t->template flat<T>()[0] = value;
  return std::move(t).value();
}

}  // namespace sluice

#endif  // SLUICE_CORE_TENSOR_H_
