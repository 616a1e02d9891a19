#include "idx_file.h"

#include <zlib.h>

#include <fmt/format.h>

#include "sluice/ops/read_file.h"

namespace sluice::tools {
namespace {

// Largest rows x cols of one IDX image.
constexpr uint64_t kMaxIdxImagePixels = uint64_t{1} << 24;
// Deflate expands at most about 1032:1.
constexpr uint64_t kMaxDeflateRatio = 1032;

uint32_t BigEndian32(std::string_view b, size_t at) {
  return static_cast<uint32_t>(static_cast<uint8_t>(b[at])) << 24 |
         static_cast<uint32_t>(static_cast<uint8_t>(b[at + 1])) << 16 |
         static_cast<uint32_t>(static_cast<uint8_t>(b[at + 2])) << 8 |
         static_cast<uint32_t>(static_cast<uint8_t>(b[at + 3]));
}

// Inflates the gzip stream(s) of `in` into at most `limit` bytes (stopping
// there: the caller compares sizes).
Result<std::string> Gunzip(std::string_view in, uint64_t limit, const std::string& name) {
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
    return Status::Internal(name + ": cannot start zlib inflate");
  }
  std::string out;
  out.resize(static_cast<size_t>(std::min<uint64_t>(limit, 1 << 20)));
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  size_t produced = 0;
  Status status;
  while (produced < limit) {
    if (produced == out.size()) {
      out.resize(static_cast<size_t>(std::min<uint64_t>(limit, out.size() * 2)));
    }
    z.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
    z.avail_out = static_cast<uInt>(std::min<size_t>(out.size() - produced, 1u << 30));
    const uInt before = z.avail_out;
    const int rc = inflate(&z, Z_NO_FLUSH);
    produced += before - z.avail_out;
    if (rc == Z_STREAM_END) {
      if (z.avail_in == 0) break;
      inflateReset(&z);  // another gzip member follows
      continue;
    }
    if (rc == Z_BUF_ERROR && z.avail_in == 0) {
      status = Status::DataLoss(
          fmt::format("{}: the gzip stream is cut short after {} bytes", name, z.total_in));
      break;
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      status = Status::DataLoss(fmt::format("{}: corrupt gzip data near byte {}: {}", name,
                                            z.total_in, z.msg ? z.msg : zError(rc)));
      break;
    }
  }
  inflateEnd(&z);
  if (!status.ok()) return status;
  out.resize(produced);
  return out;
}

bool IsGzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<uint8_t>(bytes[0]) == 0x1f &&
         static_cast<uint8_t>(bytes[1]) == 0x8b;
}

struct IdxHeader {
  std::vector<int64_t> dims;
  uint64_t header_bytes = 0;
  uint64_t data_bytes = 0;
};

// Checks everything but the file's length.
Result<IdxHeader> ParseHeader(std::string_view b, int rank, const std::string& name) {
  const char* what = rank == 3 ? "images" : "labels";
  const uint32_t magic = 0x800 | static_cast<uint32_t>(rank);
  if (b.size() < 4) {
    return Status::DataLoss(fmt::format(
        "{}: {} bytes is too short for an IDX header (4 bytes at offset 0)", name, b.size()));
  }
  if (b[0] != 0 || b[1] != 0 || static_cast<uint8_t>(b[2]) != 0x08 ||
      static_cast<uint8_t>(b[3]) != rank) {
    std::string why;
    if (b[0] != 0 || b[1] != 0)
      why = "not an IDX file";
    else if (static_cast<uint8_t>(b[2]) != 0x08)
      why = fmt::format("element type 0x{:02x} at offset 2 is not 0x08 (unsigned byte)",
                        static_cast<uint8_t>(b[2]));
    else
      why = fmt::format("{} dimensions at offset 3, expected {} for {}", static_cast<uint8_t>(b[3]),
                        rank, what);
    return Status::DataLoss(
        fmt::format("{}: bad IDX magic 0x{:08x} at offset 0 ({}); {} files "
                    "start with 0x{:08x}",
                    name, BigEndian32(b, 0), why, what, magic));
  }
  IdxHeader h;
  h.header_bytes = 4 + 4 * static_cast<uint64_t>(rank);
  if (b.size() < h.header_bytes) {
    return Status::DataLoss(
        fmt::format("{}: the IDX header is cut short: {} bytes, the {} "
                    "dimensions need {}",
                    name, b.size(), rank, h.header_bytes));
  }
  uint64_t elements = 1, pixels = 1;
  for (int i = 0; i < rank; ++i) {
    const uint32_t d = BigEndian32(b, 4 + 4 * i);
    h.dims.push_back(d);
    if (i > 0) {
      if (d == 0) {
        return Status::DataLoss(
            fmt::format("{}: image dimension {} at offset {} is 0", name, i, 4 + 4 * i));
      }
      pixels *= d;
      if (pixels > kMaxIdxImagePixels) {
        return Status::DataLoss(
            fmt::format("{}: images of {} pixels (dimensions at offset 8) are "
                        "over the limit of {}",
                        name, pixels, kMaxIdxImagePixels));
      }
    }
    elements *= d;  // < 2^32 * 2^24: no overflow
  }
  h.data_bytes = elements;
  return h;
}

}  // namespace

Result<IdxArray> ParseIdx(std::string_view b, int rank, const std::string& name) {
  SLUICE_ASSIGN_OR_RETURN(IdxHeader h, ParseHeader(b, rank, name));
  const uint64_t have = b.size() - h.header_bytes;
  if (have != h.data_bytes) {
    std::string shape = fmt::format("{}", h.dims[0]);
    for (size_t i = 1; i < h.dims.size(); ++i) shape += fmt::format("x{}", h.dims[i]);
    return Status::DataLoss(fmt::format(
        "{}: the header claims {} elements ({} bytes from offset {}) but the file has {} bytes "
        "there ({})",
        name, shape, h.data_bytes, h.header_bytes, have,
        have < h.data_bytes ? "truncated"
                            : fmt::format("{} extra bytes at offset {}", have - h.data_bytes,
                                          h.header_bytes + h.data_bytes)));
  }
  IdxArray a;
  a.dims = std::move(h.dims);
  a.data.assign(b.substr(h.header_bytes));
  return a;
}

Result<IdxArray> ReadIdxFile(const std::string& path, int rank) {
  SLUICE_ASSIGN_OR_RETURN(Tensor file, ops::ReadFile(path));
  const std::string_view bytes = file.scalar<std::string_view>();
  if (!IsGzip(bytes)) return ParseIdx(bytes, rank, path);
  const std::string name = path + " (inflated)";
  // The header first, to bound what the whole may claim.
  SLUICE_ASSIGN_OR_RETURN(std::string head, Gunzip(bytes, 4 + 4 * rank, path));
  SLUICE_ASSIGN_OR_RETURN(IdxHeader h, ParseHeader(head, rank, name));
  const uint64_t claimed = h.header_bytes + h.data_bytes;
  const uint64_t most = bytes.size() * kMaxDeflateRatio + 1024;
  if (claimed > most) {
    return Status::DataLoss(
        fmt::format("{}: the header claims {} bytes, but {} bytes of gzip "
                    "inflate to at most {}",
                    name, claimed, bytes.size(), most));
  }
  SLUICE_ASSIGN_OR_RETURN(std::string all, Gunzip(bytes, claimed + 1, path));
  return ParseIdx(all, rank, name);
}

}  // namespace sluice::tools
