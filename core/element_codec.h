// Element codec: a self-describing binary encoding of one Element (names,
// dtypes, shapes and bytes of its components), used by pipeline iterator
// checkpoints and the on-disk dataset cache. The byte layout is documented
// in docs/formats.md ("Element encoding"); its constants are below.
//
// The encoding carries no checksum: the container it is stored in (a
// TFRecord, a checkpoint bundle) guards integrity. Decoding still treats its
// input as hostile: every length is checked against the bytes that remain
// before anything is allocated, and corrupt or truncated input is DataLoss,
// never a crash.
//
// A decoded Element owns its bytes (copied out of the input into fresh
// Buffers), so the input may be freed right after decoding. Pure functions:
// thread-safe.
#ifndef SLUICE_CORE_ELEMENT_CODEC_H_
#define SLUICE_CORE_ELEMENT_CODEC_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "sluice/core/element.h"
#include "sluice/core/result.h"
#include "sluice/core/status.h"

namespace sluice {

namespace element_codec {
// First byte of every encoded element: 0xE in the high nibble marks an
// element, the low nibble is the format version (1).
inline constexpr uint8_t kFormatByte = 0xE1;
// Largest rank an encoded tensor may have (numpy's limit).
inline constexpr int kMaxRank = 32;
// Fixed-width little-endian field sizes.
inline constexpr size_t kComponentCountSize = 4;  // uint32
inline constexpr size_t kNameLengthSize = 4;      // uint32
inline constexpr size_t kDTypeSize = 1;           // uint8, the DType enum value
inline constexpr size_t kRankSize = 1;            // uint8
inline constexpr size_t kDimSize = 8;             // int64
inline constexpr size_t kStringLengthSize = 8;    // uint64
}  // namespace element_codec

// Appends the encoding of `e` to `out`. InvalidArgument (and nothing
// appended) if a component has rank above element_codec::kMaxRank or a name
// longer than 4 GiB. REQUIRES: out != nullptr.
Status EncodeElement(const Element& e, std::string* out);

// Decodes one element from the front of `*in` and advances `*in` past it.
// `what` names the source (a file name and offset, say) for messages. On
// error `*in` is unchanged and the status is DataLoss, naming `what`, the
// byte offset within `*in` where the problem is and the component (index and
// name); or ResourceExhausted if the bytes (under 3x the input's) cannot be
// allocated. Components named "" throughout decode as an unnamed Element;
// the Element's origin is not encoded and decodes unset.
// REQUIRES: in != nullptr.
Result<Element> DecodeElement(std::string_view* in, std::string_view what);

// The number of bytes EncodeElement(e, ...) appends, without encoding.
size_t EncodedElementSize(const Element& e);

}  // namespace sluice

#endif  // SLUICE_CORE_ELEMENT_CODEC_H_
