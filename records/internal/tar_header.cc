#include "sluice/records/internal/tar_header.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "sluice/records/tar_format.h"

namespace sluice::records_internal {
namespace {

const uint8_t* U8(std::string_view s) { return reinterpret_cast<const uint8_t*>(s.data()); }

// A NUL-terminated field (the whole field when it has no NUL).
std::string_view Field(const uint8_t* header, size_t offset, size_t size) {
  const char* p = reinterpret_cast<const char*>(header) + offset;
  return std::string_view(p, strnlen(p, size));
}

// A numeric field: octal digits between spaces / NULs, or GNU's base-256
// (first byte 0x80 positive, 0xff negative: refused). nullopt if malformed.
std::optional<uint64_t> Number(const uint8_t* header, size_t offset, size_t size) {
  const uint8_t* p = header + offset;
  if (p[0] == 0x80) {
    uint64_t v = 0;
    for (size_t i = 1; i < size; ++i) {
      if (v >> 56) return std::nullopt;  // more than 64 bits
      v = (v << 8) | p[i];
    }
    return v;
  }
  if (p[0] == 0xff) return std::nullopt;
  std::string_view s = Field(header, offset, size);
  while (!s.empty() && (s.front() == ' ')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ')) s.remove_suffix(1);
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '7' || (v >> 60)) return std::nullopt;
    v = v * 8 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

bool ChecksumOk(const uint8_t* h, uint64_t stored) {
  // Sums of all bytes (a loop the compiler vectorizes), then the checksum
  // field counted as spaces; tar readers accept the signed sum too.
  uint64_t unsigned_sum = 0;
  int64_t signed_sum = 0;
  for (size_t i = 0; i < tar::kBlockSize; ++i) {
    unsigned_sum += h[i];
    signed_sum += static_cast<int8_t>(h[i]);
  }
  for (size_t i = tar::kChecksumOffset; i < tar::kChecksumOffset + tar::kChecksumSize; ++i) {
    unsigned_sum -= h[i];
    signed_sum -= static_cast<int8_t>(h[i]);
  }
  unsigned_sum += tar::kChecksumSize * ' ';
  signed_sum += tar::kChecksumSize * ' ';
  return stored == unsigned_sum || static_cast<int64_t>(stored) == signed_sum;
}

bool IsZero(const uint8_t* p) {
  for (size_t i = 0; i < tar::kBlockSize; ++i) {
    if (p[i] != 0) return false;
  }
  return true;
}

// The pax records "<len> <key>=<value>\n" of `data`: path and size. False
// if malformed.
bool ParsePax(std::string_view data, std::optional<std::string_view>* path,
              std::optional<uint64_t>* size) {
  while (!data.empty() && data.front() != '\0') {
    size_t i = 0;
    uint64_t len = 0;
    while (i < data.size() && data[i] >= '0' && data[i] <= '9' && i < 20) {
      len = len * 10 + static_cast<uint64_t>(data[i] - '0');
      ++i;
    }
    if (i == 0 || i >= data.size() || data[i] != ' ' || len <= i + 1 || len > data.size() ||
        data[len - 1] != '\n') {
      return false;
    }
    const std::string_view record = data.substr(i + 1, len - i - 2);
    const size_t eq = record.find('=');
    if (eq == std::string_view::npos || eq == 0) return false;
    const std::string_view key = record.substr(0, eq), value = record.substr(eq + 1);
    if (key == "path") {
      *path = value;
    } else if (key == "size") {
      uint64_t v = 0;
      if (value.empty() || value.size() > 19) return false;
      for (char c : value) {
        if (c < '0' || c > '9') return false;
        v = v * 10 + static_cast<uint64_t>(c - '0');
      }
      *size = v;
    }
    data.remove_prefix(len);
  }
  return true;
}

}  // namespace

bool IsTarHeaderBlock(std::string_view block) {
  if (block.size() < tar::kBlockSize) return false;
  const uint8_t* h = U8(block);
  if (IsZero(h)) return true;
  const std::optional<uint64_t> checksum = Number(h, tar::kChecksumOffset, tar::kChecksumSize);
  return checksum && ChecksumOk(h, *checksum);
}

Result<TarParse> ParseTarEntry(std::string_view bytes, uint64_t offset, uint64_t max_meta_size,
                               const std::string& filename, std::string* scratch) {
  std::optional<std::string_view> long_name;
  std::optional<uint64_t> pax_size;
  uint64_t p = 0;  // the header being parsed, from bytes[0]
  TarParse out;
  const auto fail = [&](const std::string& what) {
    return Status::DataLoss(
        fmt::format("{}: corrupt tar header at offset {}: {}", filename, offset + p, what));
  };
  while (true) {
    if (bytes.size() < p + tar::kBlockSize) {
      out.kind = TarParse::kNeedMore;
      out.need = p + tar::kBlockSize;
      return out;
    }
    const uint8_t* h = U8(bytes) + p;
    if (IsZero(h)) {
      if (p == 0) {
        out.kind = TarParse::kEnd;
        return out;
      }
      return fail("an extended header is followed by the end of the archive");
    }
    const std::optional<uint64_t> checksum = Number(h, tar::kChecksumOffset, tar::kChecksumSize);
    if (!checksum || !ChecksumOk(h, *checksum)) {
      return fail("the header checksum does not match (the file is damaged or is not a tar file)");
    }
    std::optional<uint64_t> size = Number(h, tar::kSizeOffset, tar::kSizeSize);
    if (!size) return fail("malformed size field");
    const char type = static_cast<char>(h[tar::kTypeOffset]);
    if (type == tar::kPaxHeader || type == tar::kSolarisPax || type == tar::kGnuLongName ||
        type == tar::kGnuLongLink) {
      if (*size > max_meta_size) {
        return fail(fmt::format("an extended header of {} bytes (the limit is {})", *size,
                                max_meta_size));
      }
      const uint64_t data_end = p + tar::kBlockSize + *size;
      if (bytes.size() < data_end) {
        out.kind = TarParse::kNeedMore;
        out.need = data_end;
        return out;
      }
      const std::string_view data = bytes.substr(p + tar::kBlockSize, *size);
      if (type == tar::kGnuLongName) {
        long_name = data.substr(0, strnlen(data.data(), data.size()));
      } else if (type != tar::kGnuLongLink) {
        std::optional<std::string_view> path;
        if (!ParsePax(data, &path, &pax_size)) return fail("malformed pax extended header");
        if (path) long_name = path;
      }
      p += tar::kBlockSize + tar::Padded(*size);
      continue;
    }
    if (pax_size) size = pax_size;
    if (*size > (uint64_t{1} << 62)) return fail(fmt::format("impossible size {}", *size));
    TarEntry& e = out.entry;
    e.type = type;
    e.size = *size;
    e.data_start = p + tar::kBlockSize;
    if (long_name) {
      e.name = *long_name;
    } else {
      const std::string_view name = Field(h, tar::kNameOffset, tar::kNameSize);
      const std::string_view prefix = Field(h, tar::kPrefixOffset, tar::kPrefixSize);
      const bool ustar = std::memcmp(h + tar::kMagicOffset, "ustar\0", 6) == 0;
      if (ustar && !prefix.empty()) {
        scratch->assign(prefix);
        scratch->push_back('/');
        scratch->append(name);
        e.name = *scratch;
      } else {
        e.name = name;
      }
    }
    const bool old_dir = type == tar::kRegularOld && e.name.ends_with('/');
    e.regular = !old_dir && (type == tar::kRegular || type == tar::kRegularOld ||
                             type == tar::kContiguous);
    // As Python's tarfile: links, devices, folders and fifos have no payload
    // whatever their size field says; any other type's payload is skipped.
    const bool no_payload = old_dir || type == tar::kHardLink || type == tar::kSymLink ||
                            type == tar::kCharDevice || type == tar::kBlockDevice ||
                            type == tar::kDirectory || type == tar::kFifo;
    e.length = e.data_start + (no_payload ? 0 : tar::Padded(e.size));
    if (no_payload) e.size = 0;
    out.kind = TarParse::kEntry;
    return out;
  }
}

bool SplitTarName(std::string_view name, std::string_view* key, std::string_view* extension) {
  const size_t slash = name.rfind('/');
  const size_t base = slash == std::string_view::npos ? 0 : slash + 1;
  const size_t dot = name.find('.', base);
  if (dot == std::string_view::npos) return false;
  if (dot == base) {
    // ".jpg" has no key; "dir/.jpg" does ("dir/") when the folder before it
    // has no dot: webdataset's regular expression backtracks that far.
    if (slash == std::string_view::npos) return false;
    const size_t prev = name.rfind('/', slash == 0 ? std::string_view::npos : slash - 1);
    const size_t seg = (prev == std::string_view::npos || slash == 0) ? 0 : prev + 1;
    if (slash > 0 && name.substr(seg, slash - seg).find('.') != std::string_view::npos) {
      return false;
    }
  }
  *key = name.substr(0, dot);
  *extension = name.substr(dot + 1);
  return true;
}

bool IsTarMetaName(std::string_view name) {
  // webdataset: "__x__" without a folder, and names matching ^__[^/]*__($|/).
  if (name.find('/') == std::string_view::npos && name.starts_with("__") &&
      name.ends_with("__")) {
    return true;
  }
  if (!name.starts_with("__")) return false;
  const size_t slash = name.find('/');
  const std::string_view first = name.substr(0, slash);
  return first.size() >= 4 && first.ends_with("__");
}

}  // namespace sluice::records_internal
