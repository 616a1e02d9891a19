#include "sluice/core/shape.h"

#include <algorithm>

namespace sluice {

Shape::Shape(std::span<const int64_t> dims) : rank_(dims.size()) {
  if (rank_ > kInlineRank) {
    heap_.assign(dims.begin(), dims.end());
  } else {
    std::copy(dims.begin(), dims.end(), inline_);
  }
}

Shape Shape::UnknownRank() {
  Shape s;
  s.unknown_rank_ = true;
  return s;
}

Shape& Shape::operator=(const Shape& other) {
  if (this == &other) return *this;
  rank_ = other.rank_;
  unknown_rank_ = other.unknown_rank_;
  if (rank_ > kInlineRank) {
    heap_.assign(other.dims().begin(), other.dims().end());
  } else {
    heap_.clear();
    std::copy(other.dims().begin(), other.dims().end(), inline_);
  }
  return *this;
}

Shape::Shape(Shape&& other) noexcept
    : rank_(other.rank_), unknown_rank_(other.unknown_rank_), heap_(std::move(other.heap_)) {
  if (heap_.empty()) std::copy(other.inline_, other.inline_ + rank_, inline_);
  other.heap_.clear();
}

Shape& Shape::operator=(Shape&& other) noexcept {
  if (this == &other) return *this;
  rank_ = other.rank_;
  unknown_rank_ = other.unknown_rank_;
  heap_ = std::move(other.heap_);
  other.heap_.clear();
  if (heap_.empty()) std::copy(other.inline_, other.inline_ + rank_, inline_);
  return *this;
}

bool Shape::IsFullyDefined() const {
  if (unknown_rank_) return false;
  for (int64_t d : dims()) {
    if (d < 0) return false;
  }
  return true;
}

int64_t Shape::num_elements() const {
  int64_t n = 1;
  for (int64_t d : dims()) n *= d;
  return n;
}

std::optional<int64_t> Shape::CheckedNumElements() const {
  if (!IsFullyDefined()) return std::nullopt;
  int64_t n = 1;
  for (int64_t d : dims()) {
    if (__builtin_mul_overflow(n, d, &n)) return std::nullopt;
  }
  return n;
}

bool Shape::IsCompatibleWith(const Shape& other) const {
  if (unknown_rank_ || other.unknown_rank_) return true;
  if (rank_ != other.rank_) return false;
  for (int i = 0; i < rank(); ++i) {
    const int64_t a = dim(i), b = other.dim(i);
    if (a >= 0 && b >= 0 && a != b) return false;
  }
  return true;
}

Shape Shape::Prepend(int64_t d) const {
  std::vector<int64_t> v;
  v.reserve(rank_ + 1);
  v.push_back(d);
  v.insert(v.end(), dims().begin(), dims().end());
  return Shape(v);
}

Shape Shape::Subshape(int begin, int end) const {
  begin = std::clamp(begin, 0, rank());
  end = std::clamp(end, begin, rank());
  return Shape(dims().subspan(begin, end - begin));
}

void Shape::AppendDim(int64_t d) {
  if (rank_ < kInlineRank) {
    inline_[rank_++] = d;
    return;
  }
  if (rank_ == kInlineRank) heap_.assign(inline_, inline_ + kInlineRank);
  heap_.push_back(d);
  ++rank_;
}

std::string Shape::ToString() const {
  if (unknown_rank_) return "<unknown>";
  std::string out = "[";
  for (int i = 0; i < rank(); ++i) {
    if (i) out += ",";
    out += dim(i) < 0 ? "?" : std::to_string(dim(i));
  }
  out += "]";
  return out;
}

bool operator==(const Shape& a, const Shape& b) {
  if (a.unknown_rank_ != b.unknown_rank_) return false;
  return std::equal(a.dims().begin(), a.dims().end(), b.dims().begin(), b.dims().end());
}

}  // namespace sluice
