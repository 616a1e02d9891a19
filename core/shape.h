// Shape: the dimensions of a Tensor, or a partially known shape in a spec.
//
// A dimension may be kUnknownDim (-1) and the rank itself may be unknown; a
// Tensor's shape is always fully defined. Ranks up to kInlineRank are stored
// inline without a heap allocation. Value type; thread-safety of any value.
#ifndef SLUICE_CORE_SHAPE_H_
#define SLUICE_CORE_SHAPE_H_

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace sluice {

class Shape {
 public:
  static constexpr int64_t kUnknownDim = -1;
  static constexpr int kInlineRank = 6;

  // A scalar: rank 0, one element.
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : Shape(std::span<const int64_t>(dims)) {}
  explicit Shape(std::span<const int64_t> dims);
  explicit Shape(const std::vector<int64_t>& dims) : Shape(std::span<const int64_t>(dims)) {}

  // A shape of unknown rank (only meaningful in specs).
  static Shape UnknownRank();

  Shape(const Shape& other) : Shape(other.dims()) { unknown_rank_ = other.unknown_rank_; }
  Shape& operator=(const Shape& other);
  Shape(Shape&& other) noexcept;
  Shape& operator=(Shape&& other) noexcept;
  ~Shape() = default;

  bool unknown_rank() const { return unknown_rank_; }
  // REQUIRES: !unknown_rank().
  int rank() const { return static_cast<int>(rank_); }
  int64_t dim(int i) const { return data()[i]; }
  std::span<const int64_t> dims() const { return {data(), rank_}; }
  void set_dim(int i, int64_t value) { data()[i] = value; }

  // Known rank and no unknown dimension.
  bool IsFullyDefined() const;
  // Product of the dimensions; 1 for a scalar. REQUIRES: IsFullyDefined().
  int64_t num_elements() const;
  // As num_elements(), or nullopt if undefined or if the product overflows
  // int64 (a hostile header can claim any dims; check before allocating).
  std::optional<int64_t> CheckedNumElements() const;

  // Same rank and every known dimension equal (unknown matches anything).
  bool IsCompatibleWith(const Shape& other) const;

  // [d, dims...]
  Shape Prepend(int64_t d) const;
  // dims[begin, end)
  Shape Subshape(int begin, int end) const;
  Shape Subshape(int begin) const { return Subshape(begin, rank()); }
  void AppendDim(int64_t d);

  // "[2,3]", "[?,3]", "[]" for a scalar, "<unknown>" for unknown rank.
  std::string ToString() const;

  friend bool operator==(const Shape& a, const Shape& b);

 private:
  const int64_t* data() const { return heap_.empty() ? inline_ : heap_.data(); }
  int64_t* data() { return heap_.empty() ? inline_ : heap_.data(); }

  size_t rank_ = 0;
  bool unknown_rank_ = false;
  int64_t inline_[kInlineRank] = {};
  std::vector<int64_t> heap_;  // used when rank_ > kInlineRank
};

}  // namespace sluice

#endif  // SLUICE_CORE_SHAPE_H_
