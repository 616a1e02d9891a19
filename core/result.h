// Result<T>: either a value of type T or a non-OK Status.
//
// Returned by every fallible function that produces a value. Move-only if T
// is. Not synchronized: treat like a T.
//
//   Result<Tensor> t = Tensor::Allocate(DType::kFloat32, {2, 3});
//   if (!t.ok()) return t.status();
//   use(*t);
//
// Or with the macros at the bottom of this file:
//   SLUICE_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(DType::kFloat32, {2, 3}));
#ifndef SLUICE_CORE_RESULT_H_
#define SLUICE_CORE_RESULT_H_

#include <optional>
#include <type_traits>
#include <utility>

#include "sluice/core/status.h"

namespace sluice {

namespace internal {
// Prints the status and aborts: value() on an error is a caller bug.
[[noreturn]] void DieOnBadResultAccess(const Status& status);
}  // namespace internal

template <typename T>
class [[nodiscard]] Result {
 public:
  // REQUIRES: !status.ok(). An OK status becomes an Internal error.
  Result(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    if (status_.ok()) status_ = Status::Internal("Result<T> constructed from an OK Status");
  }
  Result(const T& value) : value_(value) {}        // NOLINT
  Result(T&& value) : value_(std::move(value)) {}  // NOLINT
  template <typename U>
  requires(std::is_constructible_v<T, U&&> && !std::is_same_v<std::decay_t<U>, T> &&
           !std::is_same_v<std::decay_t<U>, Status> && !std::is_same_v<std::decay_t<U>, Result<T>>)
      Result(U&& value)
      : value_(std::forward<U>(value)) {}  // NOLINT

  bool ok() const { return value_.has_value(); }
  // OK when a value is held.
  const Status& status() const { return status_; }

  // REQUIRES: ok().
  T& value() & {
    Check();
    return *value_;
  }
  const T& value() const& {
    Check();
    return *value_;
  }
  T&& value() && {
    Check();
    return std::move(*value_);
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  template <typename U>
  T value_or(U&& fallback) const& {
    return ok() ? *value_ : static_cast<T>(std::forward<U>(fallback));
  }

 private:
  void Check() const {
    if (!value_.has_value()) internal::DieOnBadResultAccess(status_);
  }
  Status status_;
  std::optional<T> value_;
};

namespace internal {
template <typename T>
const Status& AsStatus(const Result<T>& r) {
  return r.status();
}
}  // namespace internal

}  // namespace sluice

#define SLUICE_CONCAT_INNER_(a, b) a##b
#define SLUICE_CONCAT_(a, b) SLUICE_CONCAT_INNER_(a, b)

// Evaluates `rexpr` (a Result<T>); on error returns its status from the
// enclosing function, else moves the value into `lhs` (which may declare a
// variable: SLUICE_ASSIGN_OR_RETURN(auto x, F());).
#define SLUICE_ASSIGN_OR_RETURN(lhs, rexpr) \
  SLUICE_ASSIGN_OR_RETURN_IMPL_(SLUICE_CONCAT_(sluice_result_, __LINE__), lhs, rexpr)
#define SLUICE_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                                  \
  if (!tmp.ok()) return tmp.status();                  \
  lhs = std::move(tmp).value()

#endif  // SLUICE_CORE_RESULT_H_
