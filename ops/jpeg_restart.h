// Lossless JPEG transcoding that adds restart markers (as `jpegtran
// -restart N` does): the DCT coefficients, quantization tables and sampling
// are copied, only the entropy coding is redone, so the decoded pixels are
// bit-identical to the input's. With a restart marker every N MCUs, every
// segment of the scan decodes on its own (the DC predictors reset), and
// since N is adjusted to the MCU rows (JpegRestartInterval), every MCU row
// starts a segment: a crop decode can then read only the segments its
// window covers (DecodeAndCropJpeg). See docs/ops.md, "Restart markers",
// for what it costs in bytes and time.
//
// Ownership: `bytes` is read only during the call; the result owns its
// bytes.
//
// Errors: data that is not a JPEG, corrupt, truncated (even when a decoder
// could make up the rest), 12-bit, or with more than 500 scans is
// InvalidArgument, and so are bad options; an
// image over `max_pixels` (checked from the header, before any allocation)
// or needing more memory than that implies is ResourceExhausted. Every
// message names the op and `name` (or the input size when no name is given).
//
// Thread-safety: all functions may run concurrently on any threads; each
// call uses its own libjpeg objects.
#ifndef SLUICE_OPS_JPEG_RESTART_H_
#define SLUICE_OPS_JPEG_RESTART_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "sluice/core/result.h"
#include "sluice/ops/image_limits.h"

namespace sluice::ops {

struct JpegRestartOptions {
  // Wanted MCUs per restart segment, 1..65535, adjusted by
  // JpegRestartInterval so that segments never straddle two MCU rows.
  int interval = 1;
  // Optimal Huffman tables for the re-encoded data: they win back much of
  // what the markers cost, but libjpeg's extra statistics pass over the
  // coefficients more than doubles the time. false: the standard tables of
  // the JPEG specification (Annex K).
  bool optimize_huffman = true;
  // Keep the APPn (EXIF, ICC profile, XMP, Adobe...) and COM markers, in
  // their order, after the JFIF APP0 or Adobe APP14 marker the encoder
  // writes itself (a source copy of that one is not duplicated).
  bool copy_markers = true;
  // Largest width x height accepted.
  int64_t max_pixels = kDefaultMaxImagePixels;
  // For error messages (a file name, a record key). Not copied.
  std::string_view name;
};

// Re-encodes `bytes` (a baseline, extended, progressive or arithmetic-coded
// 8-bit JPEG) as a sequential Huffman-coded JPEG, one interleaved scan, with
// a restart marker every JpegRestartInterval(mcus_per_row, interval) MCUs.
// DecodeJpeg() of the result equals DecodeJpeg() of `bytes`, pixel for
// pixel, with the same options (channels, DCT method and scale, upsampling),
// and so do crops. The output is deterministic (same bytes for the
// same input and options).
//
// Stricter than DecodeJpeg: truncated data (a missing EOI included) and
// corruption that libjpeg would paper over (bad Huffman codes, a segment
// that ends early, lost restart markers, an inconsistent progression, a
// component no scan codes, coefficients outside 8-bit JPEG's range) are
// errors, so made-up pixels never become valid-looking data. A progressive file whose scans leave
// low-frequency coefficients incomplete (libjpeg smooths those blocks when decoding, which no
// re-encoded file can reproduce) is an error too. Harmless oddities (extra bytes between markers,
// an unknown JFIF version or Adobe transform) are accepted.
Result<std::string> AddJpegRestartMarkers(std::string_view bytes,
                                          const JpegRestartOptions& options = {});

// Whether crops of `bytes` read only their window's segments
// (DecodeAndCropJpeg): a complete sequential Huffman-coded JPEG with a
// single scan holding every component, whose restart interval is > 0 and
// divides its MCUs per row (or is a multiple of it), every RST marker in
// place. Then AddJpegRestartMarkers is not needed. Reads the markers and
// scans the entropy-coded data for RST markers (no decoding). Errors as
// ReadJpegHeader (InvalidArgument if the bytes are not a decodable JPEG).
Result<bool> HasRowAlignedRestarts(std::string_view bytes, std::string_view name = {});

}  // namespace sluice::ops

#endif  // SLUICE_OPS_JPEG_RESTART_H_
