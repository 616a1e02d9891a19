// Status: the outcome of an operation that can fail, as a value.
//
// An OK status carries nothing; an error carries a canonical code and a
// message that names what failed and where (file, byte offset, record number,
// feature name, stage name). Status is cheap to copy (an error shares its
// message), immutable, and safe to read from several threads at once.
//
// Which code to use:
//   InvalidArgument     the caller passed something wrong (bad spec, bad shape,
//                       malformed user JSON), independent of any file state.
//   NotFound            a named file, feature or component does not exist.
//   DataLoss            stored bytes are corrupt or truncated (CRC mismatch,
//                       record cut short, malformed proto in a record).
//   OutOfRange          an index or seek target past the end of what exists.
//   ResourceExhausted   a memory or size budget would be exceeded.
//   FailedPrecondition  the system is not in a state for this call (reading a
//                       closed writer, a stale index).
//   Unavailable         a transient failure; retrying may succeed.
//   Internal            an invariant of sluice itself broke: a bug.
//   Cancelled           the operation was cancelled by its caller.
#ifndef SLUICE_CORE_STATUS_H_
#define SLUICE_CORE_STATUS_H_

#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>

namespace sluice {

// Values match the canonical codes of gRPC/Abseil/TensorFlow.
enum class StatusCode : int {
  kOk = 0,
  kCancelled = 1,
  kInvalidArgument = 3,
  kNotFound = 5,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kOutOfRange = 11,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
};

// "InvalidArgument", "DataLoss", ...
std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  // OK.
  Status() = default;
  // REQUIRES: code != kOk (use Status() for OK).
  Status(StatusCode code, std::string_view message);

  static Status OK() { return Status(); }
  static Status Cancelled(std::string_view msg) { return {StatusCode::kCancelled, msg}; }
  static Status InvalidArgument(std::string_view msg) {
    return {StatusCode::kInvalidArgument, msg};
  }
  static Status NotFound(std::string_view msg) { return {StatusCode::kNotFound, msg}; }
  static Status ResourceExhausted(std::string_view msg) {
    return {StatusCode::kResourceExhausted, msg};
  }
  static Status FailedPrecondition(std::string_view msg) {
    return {StatusCode::kFailedPrecondition, msg};
  }
  static Status OutOfRange(std::string_view msg) { return {StatusCode::kOutOfRange, msg}; }
  static Status Internal(std::string_view msg) { return {StatusCode::kInternal, msg}; }
  static Status Unavailable(std::string_view msg) { return {StatusCode::kUnavailable, msg}; }
  static Status DataLoss(std::string_view msg) { return {StatusCode::kDataLoss, msg}; }

  bool ok() const { return rep_ == nullptr; }
  StatusCode code() const;
  // Empty for OK.
  std::string_view message() const;
  // "OK" or "<CodeName>: <message>".
  std::string ToString() const;

  // The same code with "<context>: " in front of the message; OK stays OK.
  Status WithContext(std::string_view context) const;

  friend bool operator==(const Status& a, const Status& b);

 private:
  struct Rep;
  std::shared_ptr<const Rep> rep_;
};

std::ostream& operator<<(std::ostream& os, const Status& status);

namespace internal {
inline const Status& AsStatus(const Status& s) { return s; }
}  // namespace internal

}  // namespace sluice

// Returns from the enclosing function if `expr` (a Status or Result<T>) is
// not OK.
#define SLUICE_RETURN_IF_ERROR(expr)                                        \
  do {                                                                      \
    ::sluice::Status sluice_status_ = ::sluice::internal::AsStatus((expr)); \
    if (!sluice_status_.ok()) return sluice_status_;                        \
  } while (0)

#endif  // SLUICE_CORE_STATUS_H_
