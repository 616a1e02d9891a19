#include "sluice/core/status.h"

#include <cstdio>
#include <cstdlib>
#include <ostream>

namespace sluice {

struct Status::Rep {
  StatusCode code;
  std::string message;
};

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kCancelled: return "Cancelled";
    case StatusCode::kInvalidArgument: return "InvalidArgument";
    case StatusCode::kNotFound: return "NotFound";
    case StatusCode::kResourceExhausted: return "ResourceExhausted";
    case StatusCode::kFailedPrecondition: return "FailedPrecondition";
    case StatusCode::kOutOfRange: return "OutOfRange";
    case StatusCode::kInternal: return "Internal";
    case StatusCode::kUnavailable: return "Unavailable";
    case StatusCode::kDataLoss: return "DataLoss";
  }
  return "Unknown";
}

Status::Status(StatusCode code, std::string_view message) {
  if (code == StatusCode::kOk) {
    // A programming error; keep it visible rather than silently OK.
    rep_ = std::make_shared<Rep>(
        Rep{StatusCode::kInternal,
            "Status constructed with code OK and message: " + std::string(message)});
    return;
  }
  rep_ = std::make_shared<Rep>(Rep{code, std::string(message)});
}

StatusCode Status::code() const { return rep_ ? rep_->code : StatusCode::kOk; }

std::string_view Status::message() const {
  return rep_ ? std::string_view(rep_->message) : std::string_view();
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out(StatusCodeName(rep_->code));
  out += ": ";
  out += rep_->message;
  return out;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string msg(context);
  msg += ": ";
  msg += rep_->message;
  return Status(rep_->code, msg);
}

bool operator==(const Status& a, const Status& b) {
  return a.code() == b.code() && a.message() == b.message();
}

std::ostream& operator<<(std::ostream& os, const Status& status) { return os << status.ToString(); }

}  // namespace sluice

namespace sluice::internal {
void DieOnBadResultAccess(const Status& status) {
  std::fprintf(stderr, "sluice: Result::value() called on an error: %s\n",
               status.ToString().c_str());
  std::abort();
}
}  // namespace sluice::internal
