// SummaryPng: a uint8 image as the PNG bytes a TensorBoard image summary
// holds. 8-bit gray, gray+alpha, RGB or RGBA, the "Up" filter on every row
// and zlib's default level: what summaries need, no more (ops::EncodePng,
// on libspng, is the general encoder; records/ cannot use ops/). Internal
// to records; thread-safe (no shared state).
#ifndef SLUICE_RECORDS_INTERNAL_SUMMARY_PNG_H_
#define SLUICE_RECORDS_INTERNAL_SUMMARY_PNG_H_

#include <cstdint>
#include <string>

#include "sluice/core/result.h"

namespace sluice::records_internal {

// `pixels` holds height rows of width * channels bytes. InvalidArgument for
// sides outside 1..2^31-1 or channels outside 1..4.
Result<std::string> SummaryPng(const uint8_t* pixels, int64_t height, int64_t width,
                               int64_t channels);

}  // namespace sluice::records_internal

#endif  // SLUICE_RECORDS_INTERNAL_SUMMARY_PNG_H_
