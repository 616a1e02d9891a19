// Error: the one exception sluice throws, carrying a Status.
//
// Errors are values everywhere in sluice (Status, Result<T>). The single
// documented exception is the range-for convenience over a Dataset, whose
// iterator cannot return a Result from operator++: it throws Error, and
// `error.status()` is the Status that next() would have returned.
// Immutable; safe to copy and read from several threads.
#ifndef SLUICE_CORE_ERROR_H_
#define SLUICE_CORE_ERROR_H_

#include <stdexcept>
#include <string>

#include "sluice/core/status.h"

namespace sluice {

class Error : public std::runtime_error {
 public:
  // REQUIRES: !status.ok().
  explicit Error(Status status)
      : std::runtime_error(status.ToString()), status_(std::move(status)) {}
  const Status& status() const { return status_; }

 private:
  Status status_;
};

}  // namespace sluice

#endif  // SLUICE_CORE_ERROR_H_
