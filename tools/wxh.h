// ParseWxH: the "WxH" size argument of the commands (`convert images
// --resize 224x224`, `bench --crop 200x200`, a bench spec's "crop": "WxH").
// Each side is a whole decimal number in 1..65500 (JPEG's limit on a side),
// the separator a lowercase 'x'; nothing else is accepted ("16X16", "0x4",
// "4x", " 4x4", "+4x4" and sides that overflow are malformed). Pure function.
#ifndef SLUICE_TOOLS_WXH_H_
#define SLUICE_TOOLS_WXH_H_

#include <cstdint>
#include <string_view>

namespace sluice::tools {

// The largest side ParseWxH accepts.
inline constexpr int64_t kMaxWxHSide = 65500;

// "WxH" -> *width, *height; false (and both left alone) if malformed.
bool ParseWxH(std::string_view s, int64_t* width, int64_t* height);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_WXH_H_
