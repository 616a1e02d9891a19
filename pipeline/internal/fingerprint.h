// GraphFingerprint: a 64-bit hash of a dataset graph's structure, which the
// file-backed stages (cache(filename), snapshot) use to refuse or set apart
// files made from another pipeline.
//
// It covers each stage's kind, description (parameters, file names, the
// user's stage name), element spec and cardinality, recursively over the
// inputs. User functions are opaque: a changed map function with the same
// name is not seen. Pure function: thread-safe; the same graph gives the
// same value on any machine.
#ifndef SLUICE_PIPELINE_INTERNAL_FINGERPRINT_H_
#define SLUICE_PIPELINE_INTERNAL_FINGERPRINT_H_

#include <cstdint>
#include <string>

#include "sluice/pipeline/internal/node.h"

namespace sluice::pipeline_internal {

uint64_t GraphFingerprint(const DatasetNode& node);

// The fingerprint as 16 lower-case hex digits.
std::string FingerprintHex(uint64_t fingerprint);

}  // namespace sluice::pipeline_internal

#endif  // SLUICE_PIPELINE_INTERNAL_FINGERPRINT_H_
