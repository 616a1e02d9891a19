#include "sluice/records/npy.h"

#include <fmt/format.h>

#include <cstring>
#include <optional>

namespace sluice {
namespace {

constexpr size_t kPrefix1 = 10;  // magic, version, 2-byte length
constexpr size_t kPrefix2 = 12;  // magic, version, 4-byte length

// A cursor over the header's dict literal; errors name the byte offset.
class DictParser {
 public:
  DictParser(std::string_view text, const std::string& name, uint64_t text_offset)
      : s_(text), name_(name), base_(text_offset) {}

  Status Error(std::string_view what) const {
    return Status::DataLoss(fmt::format("{}: offset {}: malformed .npy header: {} (header: {})",
                                        name_, base_ + pos_, what, Excerpt()));
  }
  void SkipSpace() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool Eat(char c) {
    SkipSpace();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool Peek(char c) {
    SkipSpace();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  bool EatWord(std::string_view w) {
    SkipSpace();
    if (s_.substr(pos_, w.size()) != w) return false;
    pos_ += w.size();
    return true;
  }
  Result<std::string> String() {
    SkipSpace();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) {
      return Error("expected a quoted string");
    }
    const char quote = s_[pos_++];
    const size_t end = s_.find(quote, pos_);
    if (end == std::string_view::npos) return Error("unterminated string");
    std::string out(s_.substr(pos_, end - pos_));
    if (out.find('\\') != std::string::npos) return Error("escapes in strings are not supported");
    pos_ = end + 1;
    return out;
  }
  Result<int64_t> Integer() {
    SkipSpace();
    const size_t start = pos_;
    int64_t v = 0;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, s_[pos_] - '0', &v)) {
        return Error("a dimension overflows int64");
      }
      ++pos_;
    }
    if (pos_ == start) return Error("expected a non-negative integer");
    if (pos_ < s_.size() && s_[pos_] == 'L') ++pos_;  // Python 2's long literals
    return v;
  }
  bool AtEnd() {
    SkipSpace();
    return pos_ == s_.size();
  }

 private:
  std::string Excerpt() const {
    std::string e(s_.substr(0, 120));
    for (char& c : e) {
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
    }
    return "\"" + e + (s_.size() > 120 ? "...\"" : "\"");
  }
  std::string_view s_;
  const std::string& name_;
  uint64_t base_;
  size_t pos_ = 0;
};

// "<f4" -> {'f', 4, little}. Errors name what is not supported.
Result<NpyDType> ParseDescr(const std::string& descr, const std::string& where) {
  auto unsupported = [&](std::string_view why) {
    return Status::InvalidArgument(
        fmt::format("{}: .npy dtype '{}' is not supported: {}", where, descr, why));
  };
  if (descr.size() < 2) return unsupported("not a simple dtype");
  NpyDType d;
  size_t i = 0;
  switch (descr[0]) {
    case '<':
    case '|':
    case '=': i = 1; break;  // '=' is native: little-endian here
    case '>':
      d.big_endian = true;
      i = 1;
      break;
    default: break;
  }
  if (i >= descr.size()) return unsupported("not a simple dtype");
  d.kind = descr[i];
  const std::string_view digits = std::string_view(descr).substr(i + 1);
  if (digits.empty() || digits.size() > 2) {
    if (d.kind == 'O') return unsupported("object arrays (pickled Python objects) cannot be read");
    return unsupported("not a simple dtype");
  }
  for (char c : digits) {
    if (c < '0' || c > '9') return unsupported("not a simple dtype");
  }
  d.size = std::stoi(std::string(digits));
  switch (d.kind) {
    case 'O': return unsupported("object arrays (pickled Python objects) cannot be read");
    case 'c': return unsupported("complex numbers have no sluice dtype");
    case 'S':
    case 'U':
    case 'a':
    case 'V': return unsupported("byte-string, unicode and void arrays are not supported");
    case 'M':
    case 'm': return unsupported("datetime arrays are not supported");
    case 'b':
    case 'i':
    case 'u':
    case 'f': break;
    default: return unsupported("unknown type character");
  }
  if (d.size == 1) d.big_endian = false;
  bool widened = false;
  Result<DType> dt = NpyValueDType(d, &widened);
  if (!dt.ok()) return unsupported(dt.status().message());
  return d;
}

}  // namespace

Result<DType> NpyValueDType(const NpyDType& d, bool* widened) {
  *widened = false;
  switch (d.kind) {
    case 'b':
      if (d.size == 1) return DType::kBool;
      break;
    case 'u':
      if (d.size == 1) return DType::kUInt8;
      *widened = true;
      if (d.size == 2) return DType::kInt32;
      if (d.size == 4) return DType::kInt64;
      *widened = false;
      break;
    case 'i':
      if (d.size == 4) return DType::kInt32;
      if (d.size == 8) return DType::kInt64;
      *widened = true;
      if (d.size == 1 || d.size == 2) return DType::kInt32;
      *widened = false;
      break;
    case 'f':
      if (d.size == 2) return DType::kFloat16;
      if (d.size == 4) return DType::kFloat32;
      if (d.size == 8) return DType::kFloat64;
      break;
    default: break;
  }
  return Status::InvalidArgument(fmt::format(
      "{} bytes of kind '{}' have no sluice dtype (supported: bool, int8, int16, int32, int64, "
      "uint8, uint16, uint32, float16, float32, float64)",
      d.size, d.kind));
}

Result<NpyHeader> ParseNpyHeader(std::string_view head, uint64_t size, const std::string& name,
                                 uint64_t base) {
  auto loss = [&](uint64_t offset, std::string_view what) {
    return Status::DataLoss(fmt::format("{}: offset {}: {}", name, base + offset, what));
  };
  if (size < kPrefix1 || head.size() < kPrefix1) {
    return loss(0, fmt::format("not an .npy file: {} bytes, shorter than the {}-byte prefix", size,
                               kPrefix1));
  }
  if (head.substr(0, kNpyMagic.size()) != kNpyMagic) {
    return loss(0, "not an .npy file: the magic \"\\x93NUMPY\" is missing");
  }
  NpyHeader h;
  h.major_version = static_cast<uint8_t>(head[6]);
  h.minor_version = static_cast<uint8_t>(head[7]);
  if (h.minor_version != 0 || h.major_version < 1 || h.major_version > 3) {
    return loss(6, fmt::format(".npy format version {}.{} is not supported (1.0, 2.0, 3.0 are)",
                               h.major_version, h.minor_version));
  }
  const auto* u = reinterpret_cast<const uint8_t*>(head.data());
  uint64_t header_len = 0;
  size_t prefix = kPrefix1;
  if (h.major_version == 1) {
    header_len = u[8] | (uint32_t{u[9]} << 8);
  } else {
    prefix = kPrefix2;
    if (size < kPrefix2 || head.size() < kPrefix2) {
      return loss(
          0, fmt::format("truncated: {} bytes, shorter than the {}-byte prefix", size, kPrefix2));
    }
    header_len = u[8] | (uint32_t{u[9]} << 8) | (uint32_t{u[10]} << 16) | (uint32_t{u[11]} << 24);
  }
  if (header_len > size - prefix) {
    return loss(8, fmt::format("the header length {} runs past the end of the file ({} bytes)",
                               header_len, size));
  }
  if (header_len > kMaxNpyHeaderBytes) {
    return loss(8, fmt::format("the header length {} exceeds the limit of {} bytes", header_len,
                               kMaxNpyHeaderBytes));
  }
  if (head.size() < prefix + header_len) {
    return loss(prefix, fmt::format("truncated: the header needs {} bytes, {} were given",
                                    prefix + header_len, head.size()));
  }
  h.data_offset = prefix + header_len;
  DictParser p(head.substr(prefix, header_len), name, base + prefix);

  if (!p.Eat('{')) return p.Error("expected '{'");
  bool have_descr = false, have_order = false, have_shape = false;
  while (!p.Eat('}')) {
    SLUICE_ASSIGN_OR_RETURN(std::string key, p.String());
    if (!p.Eat(':')) return p.Error("expected ':' after a key");
    if (key == "descr") {
      if (p.Peek('[')) {
        return Status::InvalidArgument(fmt::format(
            "{}: .npy arrays of structured dtypes (records with fields) are not supported", name));
      }
      SLUICE_ASSIGN_OR_RETURN(h.descr, p.String());
      have_descr = true;
    } else if (key == "fortran_order") {
      if (p.EatWord("True")) {
        return Status::InvalidArgument(fmt::format(
            "{}: the array is stored in Fortran order (fortran_order: True), which is not "
            "supported; save it with np.save(np.ascontiguousarray(a))",
            name));
      }
      if (!p.EatWord("False")) return p.Error("fortran_order must be True or False");
      have_order = true;
    } else if (key == "shape") {
      if (!p.Eat('(')) return p.Error("shape must be a tuple");
      while (!p.Eat(')')) {
        if (h.shape.size() >= kMaxNpyRank) return p.Error("more than 64 dimensions");
        SLUICE_ASSIGN_OR_RETURN(int64_t dim, p.Integer());
        h.shape.push_back(dim);
        if (!p.Eat(',') && !p.Peek(')')) return p.Error("expected ',' or ')' in the shape");
      }
      have_shape = true;
    } else {
      return p.Error(fmt::format("unexpected key '{}'", key));
    }
    if (!p.Eat(',') && !p.Peek('}')) return p.Error("expected ',' or '}'");
  }
  if (!p.AtEnd()) return p.Error("unexpected bytes after the dict");
  if (!have_descr || !have_order || !have_shape) {
    return p.Error("the dict needs the keys 'descr', 'fortran_order' and 'shape'");
  }
  SLUICE_ASSIGN_OR_RETURN(h.dtype, ParseDescr(h.descr, name));

  uint64_t bytes = static_cast<uint64_t>(h.dtype.size);
  for (int64_t d : h.shape) {
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes)) {
      return loss(prefix, fmt::format("the shape's byte size overflows (descr '{}', {} dims)",
                                      h.descr, h.shape.size()));
    }
  }
  if (bytes > size - h.data_offset) {
    return loss(h.data_offset,
                fmt::format("truncated: the array ('{}', {} dims) needs {} bytes but the file has "
                            "{} after the header",
                            h.descr, h.shape.size(), bytes, size - h.data_offset));
  }
  h.data_bytes = bytes;
  return h;
}

Result<NpyHeader> ReadNpyHeader(ReadableFile& file, uint64_t base, uint64_t size) {
  char prefix[kPrefix2] = {};
  SLUICE_ASSIGN_OR_RETURN(size_t got,
                          file.ReadAt(base, prefix, std::min<uint64_t>(size, kPrefix2)));
  // The prefix alone reports what is wrong with it (and checks the length).
  Result<NpyHeader> first = ParseNpyHeader(std::string_view(prefix, got), size, file.name(), base);
  if (first.ok()) return first;
  const bool v1 = got >= kPrefix1 && prefix[6] == 1;
  if (got < (v1 ? kPrefix1 : kPrefix2)) return first;
  const auto* u = reinterpret_cast<const uint8_t*>(prefix);
  const uint64_t len =
      v1 ? (u[8] | (uint32_t{u[9]} << 8))
         : (u[8] | (uint32_t{u[9]} << 8) | (uint32_t{u[10]} << 16) | (uint32_t{u[11]} << 24));
  const size_t pre = v1 ? kPrefix1 : kPrefix2;
  // Only past the checks on the length: it fits the file and the limit.
  if (len > size - pre || len > kMaxNpyHeaderBytes) return first;
  std::string head(pre + len, '\0');
  SLUICE_ASSIGN_OR_RETURN(got, file.ReadAt(base, head.data(), head.size()));
  head.resize(got);
  return ParseNpyHeader(head, size, file.name(), base);
}

}  // namespace sluice
