#include "sluice/records/npz.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

namespace sluice {
namespace {

constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr uint32_t kZip64EndSig = 0x06064b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kLocalSig = 0x04034b50;
constexpr size_t kEndSize = 22;
constexpr size_t kZip64LocatorSize = 20;
constexpr size_t kZip64EndSize = 56;
constexpr size_t kCentralSize = 46;
constexpr size_t kLocalSize = 30;
constexpr size_t kMaxComment = 65535;
// Deflate cannot expand data more than about 1032:1.
constexpr uint64_t kMaxDeflateRatio = 1032;

uint16_t U16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t U32(const uint8_t* p) {
  return p[0] | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}
uint64_t U64(const uint8_t* p) { return U32(p) | (uint64_t{U32(p + 4)} << 32); }

Status Loss(const std::string& name, uint64_t offset, std::string_view what) {
  return Status::DataLoss(fmt::format("{}: offset {}: {}", name, offset, what));
}

Result<std::string> ReadExactly(ReadableFile& file, uint64_t offset, size_t n,
                                std::string_view what) {
  std::string out(n, '\0');
  SLUICE_ASSIGN_OR_RETURN(size_t got, file.ReadAt(offset, out.data(), n));
  if (got < n) return Loss(file.name(), offset, fmt::format("truncated {}", what));
  return out;
}

struct Directory {
  uint64_t entries = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
};

Result<Directory> FindDirectory(ReadableFile& file, uint64_t file_size) {
  const std::string& name = file.name();
  if (file_size < kEndSize) {
    return Loss(name, 0, fmt::format("not a zip (.npz) archive: {} bytes", file_size));
  }
  const uint64_t tail_len = std::min<uint64_t>(file_size, kEndSize + kMaxComment);
  const uint64_t tail_at = file_size - tail_len;
  SLUICE_ASSIGN_OR_RETURN(std::string tail,
                          ReadExactly(file, tail_at, tail_len, "end of the archive"));
  const auto* t = reinterpret_cast<const uint8_t*>(tail.data());
  size_t end = std::string::npos;
  for (size_t i = tail_len - kEndSize + 1; i-- > 0;) {
    if (U32(t + i) == kEndSig && i + kEndSize + U16(t + i + 20) == tail_len) {
      end = i;
      break;
    }
  }
  if (end == std::string::npos) {
    return Loss(name, file_size, "not a zip (.npz) archive: no end-of-central-directory record");
  }
  const uint8_t* e = t + end;
  if (U16(e + 4) != 0 || U16(e + 6) != 0) {
    return Status::InvalidArgument(
        fmt::format("{}: split (multi-disk) zip archives are not supported", name));
  }
  Directory d{U16(e + 10), U32(e + 16), U32(e + 12)};
  const uint64_t end_at = tail_at + end;
  if (d.entries == 0xFFFF || d.offset == 0xFFFFFFFF || d.size == 0xFFFFFFFF) {
    if (end_at < kZip64LocatorSize) return Loss(name, end_at, "zip64 locator missing");
    SLUICE_ASSIGN_OR_RETURN(std::string loc, ReadExactly(file, end_at - kZip64LocatorSize,
                                                         kZip64LocatorSize, "zip64 locator"));
    const auto* l = reinterpret_cast<const uint8_t*>(loc.data());
    if (U32(l) != kZip64LocatorSig) {
      return Loss(name, end_at - kZip64LocatorSize, "zip64 locator missing");
    }
    const uint64_t z64_at = U64(l + 8);
    if (z64_at > file_size - kZip64EndSize) {
      return Loss(name, end_at - kZip64LocatorSize, "the zip64 end record lies past the file");
    }
    SLUICE_ASSIGN_OR_RETURN(std::string z,
                            ReadExactly(file, z64_at, kZip64EndSize, "zip64 end record"));
    const auto* zp = reinterpret_cast<const uint8_t*>(z.data());
    if (U32(zp) != kZip64EndSig) return Loss(name, z64_at, "bad zip64 end record signature");
    d = Directory{U64(zp + 32), U64(zp + 48), U64(zp + 40)};
  }
  if (d.offset > file_size || d.size > file_size - d.offset) {
    return Loss(name, end_at,
                fmt::format("the central directory ({} bytes at {}) lies past the "
                            "file's {} bytes",
                            d.size, d.offset, file_size));
  }
  if (d.size > kMaxZipDirectoryBytes || d.entries > d.size / kCentralSize) {
    return Loss(
        name, end_at,
        fmt::format("{} entries cannot fit a central directory of {} bytes", d.entries, d.size));
  }
  return d;
}

}  // namespace

Result<std::vector<NpzMember>> ListNpzMembers(ReadableFile& file) {
  const std::string& name = file.name();
  SLUICE_ASSIGN_OR_RETURN(uint64_t file_size, file.Size());
  SLUICE_ASSIGN_OR_RETURN(Directory dir, FindDirectory(file, file_size));
  SLUICE_ASSIGN_OR_RETURN(
      std::string cd,
      ReadExactly(file, dir.offset, static_cast<size_t>(dir.size), "central directory"));
  const auto* p = reinterpret_cast<const uint8_t*>(cd.data());
  std::vector<NpzMember> members;
  size_t pos = 0;
  for (uint64_t i = 0; i < dir.entries; ++i) {
    const uint64_t at = dir.offset + pos;
    if (cd.size() - pos < kCentralSize || U32(p + pos) != kCentralSig) {
      return Loss(name, at, fmt::format("central directory entry {} is malformed", i));
    }
    const uint8_t* h = p + pos;
    const size_t name_len = U16(h + 28), extra_len = U16(h + 30), comment_len = U16(h + 32);
    if (cd.size() - pos - kCentralSize < name_len + extra_len + comment_len) {
      return Loss(name, at, fmt::format("central directory entry {} runs past the directory", i));
    }
    NpzMember m;
    m.name.assign(reinterpret_cast<const char*>(h + kCentralSize), name_len);
    const uint16_t flags = U16(h + 8), method = U16(h + 10);
    m.crc32 = U32(h + 16);
    m.compressed_size = U32(h + 20);
    m.size = U32(h + 24);
    m.local_header_offset = U32(h + 42);
    // The zip64 extra field holds the 64-bit values whose 32-bit fields are
    // all ones, in this order.
    const uint8_t* x = h + kCentralSize + name_len;
    for (size_t k = 0; k + 4 <= extra_len;) {
      const uint16_t id = U16(x + k), len = U16(x + k + 2);
      if (k + 4 + len > extra_len) break;
      if (id == 0x0001) {
        const uint8_t* v = x + k + 4;
        size_t left = len;
        for (uint64_t* field : {&m.size, &m.compressed_size, &m.local_header_offset}) {
          if (*field != 0xFFFFFFFF) continue;
          if (left < 8) return Loss(name, at, fmt::format("entry {}: short zip64 field", i));
          *field = U64(v);
          v += 8;
          left -= 8;
        }
      }
      k += 4 + len;
    }
    if (flags & 1) {
      return Status::InvalidArgument(
          fmt::format("{}: member '{}' is encrypted, which is not supported", name, m.name));
    }
    if (method != 0 && method != 8) {
      return Status::InvalidArgument(fmt::format(
          "{}: member '{}' uses zip compression method {}; only stored (0) and deflated (8) "
          "members are supported",
          name, m.name, method));
    }
    m.deflated = method == 8;
    if (m.local_header_offset > file_size ||
        m.compressed_size > file_size - m.local_header_offset) {
      return Loss(name, at,
                  fmt::format("member '{}' ({} bytes at {}) lies past the file's {} bytes", m.name,
                              m.compressed_size, m.local_header_offset, file_size));
    }
    if (!m.deflated && m.size != m.compressed_size) {
      return Loss(name, at,
                  fmt::format("stored member '{}' has size {} but {} stored bytes", m.name, m.size,
                              m.compressed_size));
    }
    if (m.name.size() > 4 && m.name.ends_with(".npy")) m.name.resize(m.name.size() - 4);
    members.push_back(std::move(m));
    pos += kCentralSize + name_len + extra_len + comment_len;
  }
  return members;
}

Result<NpzMemberData> OpenNpzMember(std::shared_ptr<ReadableFile> archive, const NpzMember& member,
                                    uint64_t max_inflated_bytes) {
  const std::string& name = archive->name();
  SLUICE_ASSIGN_OR_RETURN(uint64_t file_size, archive->Size());
  const uint64_t lh = member.local_header_offset;
  if (lh > file_size || file_size - lh < kLocalSize) {
    return Loss(name, lh, fmt::format("member '{}': local header past the file", member.name));
  }
  SLUICE_ASSIGN_OR_RETURN(std::string local, ReadExactly(*archive, lh, kLocalSize, "local header"));
  const auto* l = reinterpret_cast<const uint8_t*>(local.data());
  if (U32(l) != kLocalSig) {
    return Loss(name, lh, fmt::format("member '{}': bad local header signature", member.name));
  }
  const uint64_t data_at = lh + kLocalSize + U16(l + 26) + U16(l + 28);
  if (data_at > file_size || member.compressed_size > file_size - data_at) {
    return Loss(name, lh,
                fmt::format("member '{}': {} bytes at {} run past the file's {} bytes", member.name,
                            member.compressed_size, data_at, file_size));
  }
  NpzMemberData out;
  out.name = fmt::format("{}:{}.npy", name, member.name);
  if (!member.deflated) {
    out.file = std::move(archive);
    out.offset = data_at;
    out.size = member.size;
    return out;
  }
  if (member.size > max_inflated_bytes) {
    return Status::ResourceExhausted(fmt::format(
        "{}: member '{}' inflates to {} bytes, over the limit of {} (raise max_inflated_bytes, or "
        "save it uncompressed with np.savez)",
        name, member.name, member.size, max_inflated_bytes));
  }
  if (member.size / kMaxDeflateRatio > member.compressed_size + 64) {
    return Loss(name, data_at,
                fmt::format("member '{}' claims {} bytes from {} deflated bytes", member.name,
                            member.size, member.compressed_size));
  }
  // One byte more than declared: a member that inflates past its size is
  // caught without growing the buffer.
  std::string inflated(static_cast<size_t>(member.size) + 1, '\0');
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) {
    return Status::ResourceExhausted("cannot initialize zlib to read " + name);
  }
  std::string in(64 << 10, '\0');
  uint64_t read = 0;
  z.next_out = reinterpret_cast<Bytef*>(inflated.data());
  z.avail_out = static_cast<uInt>(std::min<uint64_t>(inflated.size(), 1u << 30));
  int rc = Z_OK;
  Status status;
  while (rc != Z_STREAM_END) {
    if (z.avail_in == 0 && read < member.compressed_size) {
      const size_t n =
          static_cast<size_t>(std::min<uint64_t>(in.size(), member.compressed_size - read));
      Result<size_t> got = archive->ReadAt(data_at + read, in.data(), n);
      if (!got.ok()) {
        status = got.status();
        break;
      }
      if (*got < n) {
        status = Loss(name, data_at + read, "truncated deflated member");
        break;
      }
      read += n;
      z.next_in = reinterpret_cast<Bytef*>(in.data());
      z.avail_in = static_cast<uInt>(n);
    }
    if (z.avail_out == 0) {
      const uint64_t done = z.total_out;
      if (done >= member.size + 1) {
        status = Loss(name, data_at,
                      fmt::format("member '{}' inflates past its declared {} bytes", member.name,
                                  member.size));
        break;
      }
      z.avail_out = static_cast<uInt>(std::min<uint64_t>(inflated.size() - done, 1u << 30));
    }
    const uInt before_in = z.avail_in, before_out = z.avail_out;
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) break;
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      status = Loss(name, data_at + read - z.avail_in,
                    fmt::format("member '{}': corrupt deflate data ({})", member.name,
                                z.msg ? z.msg : "zlib error"));
      break;
    }
    if (z.avail_in == before_in && z.avail_out == before_out && read >= member.compressed_size) {
      status = Loss(name, data_at + read,
                    fmt::format("member '{}': deflate data ends early", member.name));
      break;
    }
  }
  const uint64_t produced = z.total_out;
  inflateEnd(&z);
  SLUICE_RETURN_IF_ERROR(status);
  if (produced != member.size) {
    return Loss(name, data_at,
                fmt::format("member '{}' inflates to {} bytes, not the declared {}", member.name,
                            produced, member.size));
  }
  const uint32_t crc = static_cast<uint32_t>(
      crc32_z(0, reinterpret_cast<const Bytef*>(inflated.data()), member.size));
  if (crc != member.crc32) {
    return Loss(name, data_at,
                fmt::format("member '{}': CRC-32 mismatch (stored 0x{:08x}, "
                            "computed 0x{:08x})",
                            member.name, member.crc32, crc));
  }
  inflated.resize(static_cast<size_t>(member.size));
  out.file = NewMemoryFile(out.name, std::move(inflated));
  out.offset = 0;
  out.size = member.size;
  return out;
}

}  // namespace sluice
