// ReadFile: a whole file's bytes as a string scalar tensor (tf.io.read_file).
//
// The bytes live in one aligned buffer owned by the returned tensor (read by
// core/file.h's ReadWholeFile); the decoders take their input as a view
// into it, so nothing is copied again.
// Thread-safe (no shared state).
#ifndef SLUICE_OPS_READ_FILE_H_
#define SLUICE_OPS_READ_FILE_H_

#include <cstdint>
#include <string>

#include "sluice/core/file.h"
#include "sluice/core/result.h"
#include "sluice/core/tensor.h"

namespace sluice::ops {

// Largest file ReadFile() accepts unless told otherwise: 2 GiB, tf.string's
// practical limit. Larger files are ResourceExhausted, never a huge read.
inline constexpr int64_t kMaxReadFileBytes = kMaxWholeFileBytes;

// A kString scalar holding the bytes of `path`. NotFound if it does not
// exist, InvalidArgument if it is a directory, ResourceExhausted above
// `max_bytes`; every message names the path.
Result<Tensor> ReadFile(const std::string& path, int64_t max_bytes = kMaxReadFileBytes);

}  // namespace sluice::ops

#endif  // SLUICE_OPS_READ_FILE_H_
