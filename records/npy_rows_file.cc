#include "sluice/records/npy_rows_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace sluice {
namespace {

constexpr size_t kPieceAlign = 8;
// Rows of zero bytes: how many a run takes at most.
constexpr uint64_t kMaxEmptyRowsPerRun = 4096;

void SwapToLittle(uint8_t* p, uint64_t bytes, int size) {
  switch (size) {
    case 2:
      for (uint64_t i = 0; i + 2 <= bytes; i += 2) std::swap(p[i], p[i + 1]);
      break;
    case 4:
      for (uint64_t i = 0; i + 4 <= bytes; i += 4) {
        uint32_t v;
        std::memcpy(&v, p + i, 4);
        v = __builtin_bswap32(v);
        std::memcpy(p + i, &v, 4);
      }
      break;
    case 8:
      for (uint64_t i = 0; i + 8 <= bytes; i += 8) {
        uint64_t v;
        std::memcpy(&v, p + i, 8);
        v = __builtin_bswap64(v);
        std::memcpy(p + i, &v, 8);
      }
      break;
    default: break;
  }
}

uint64_t RowBytes(const NpyHeader& h) {
  // Checked at parse time: the whole array's bytes fit in uint64.
  uint64_t b = static_cast<uint64_t>(h.dtype.size);
  for (size_t k = 1; k < h.shape.size(); ++k) b *= static_cast<uint64_t>(h.shape[k]);
  return b;
}

}  // namespace

Result<NpyArray> ReadNpyArray(std::shared_ptr<ReadableFile> file, uint64_t base, uint64_t size,
                              std::string key) {
  NpyArray a;
  SLUICE_ASSIGN_OR_RETURN(a.header, ReadNpyHeader(*file, base, size));
  a.key = std::move(key);
  a.file = std::move(file);
  a.base = base;
  return a;
}

Result<std::vector<NpyArray>> OpenNpyArrays(const std::string& path,
                                            const std::vector<std::string>& keys,
                                            uint64_t max_inflated_bytes) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> opened, OpenReadableFile(path));
  std::shared_ptr<ReadableFile> file = std::move(opened);
  SLUICE_ASSIGN_OR_RETURN(uint64_t size, file->Size());
  char magic[4] = {};
  SLUICE_ASSIGN_OR_RETURN(size_t got, file->ReadAt(0, magic, sizeof(magic)));
  std::vector<NpyArray> arrays;
  if (got < 4 || std::memcmp(magic, "PK\x03\x04", 4) != 0) {
    if (!keys.empty()) {
      return Status::InvalidArgument(
          fmt::format("{}: keys were given but the file is not an .npz archive", path));
    }
    SLUICE_ASSIGN_OR_RETURN(NpyArray a, ReadNpyArray(file, 0, size));
    arrays.push_back(std::move(a));
    return arrays;
  }
  SLUICE_ASSIGN_OR_RETURN(std::vector<NpzMember> members, ListNpzMembers(*file));
  std::vector<const NpzMember*> chosen;
  if (keys.empty()) {
    for (const NpzMember& m : members) chosen.push_back(&m);
  } else {
    for (const std::string& k : keys) {
      auto it = std::find_if(members.begin(), members.end(),
                             [&](const NpzMember& m) { return m.name == k; });
      if (it == members.end()) {
        std::string have;
        for (const NpzMember& m : members) have += (have.empty() ? "" : ", ") + m.name;
        return Status::NotFound(
            fmt::format("{}: no member '{}' in the archive (it has: {})", path, k, have));
      }
      chosen.push_back(&*it);
    }
  }
  for (const NpzMember* m : chosen) {
    SLUICE_ASSIGN_OR_RETURN(NpzMemberData d, OpenNpzMember(file, *m, max_inflated_bytes));
    SLUICE_ASSIGN_OR_RETURN(NpyArray a, ReadNpyArray(d.file, d.offset, d.size, m->name));
    arrays.push_back(std::move(a));
  }
  return arrays;
}

Result<std::shared_ptr<const NpyRowsFile>> NpyRowsFile::Make(std::string path,
                                                             std::vector<NpyArray> arrays,
                                                             int64_t sequence_length) {
  auto invalid = [&](std::string_view what) {
    return Status::InvalidArgument(fmt::format("{}: {}", path, what));
  };
  if (arrays.empty()) return invalid("no arrays to read");
  for (const NpyArray& a : arrays) {
    if (a.header.shape.empty()) {
      return invalid(fmt::format("array{} is 0-dimensional: it has no rows",
                                 a.key.empty() ? "" : " '" + a.key + "'"));
    }
    if (a.header.shape[0] != arrays[0].header.shape[0]) {
      return invalid(fmt::format("arrays '{}' and '{}' have {} and {} rows; read them separately",
                                 arrays[0].key, a.key, arrays[0].header.shape[0],
                                 a.header.shape[0]));
    }
  }
  std::shared_ptr<NpyRowsFile> f(new NpyRowsFile());
  f->path_ = std::move(path);
  f->sequence_length_ = sequence_length;
  const NpyHeader& h0 = arrays[0].header;
  if (sequence_length < 0) return invalid("sequence_length must be >= 0");
  if (sequence_length > 0) {
    if (arrays.size() != 1 || h0.shape.size() != 1) {
      return invalid("sequence_length windows need one 1-D array of tokens");
    }
    const uint64_t n = static_cast<uint64_t>(h0.shape[0]);
    const uint64_t L = static_cast<uint64_t>(sequence_length);
    const uint64_t isz = static_cast<uint64_t>(h0.dtype.size);
    if (L > n) {
      f->num_records_ = 0;
    } else {
      f->num_records_ = (n - 1) / L;
    }
    f->step_bytes_ = L * isz;
    f->record_bytes_ = static_cast<size_t>((L + 1) * isz);
    if (L + 1 > n) f->num_records_ = 0;
    f->piece_offsets_ = {0};
    f->piece_bytes_ = {f->record_bytes_};
  } else {
    f->num_records_ = static_cast<uint64_t>(h0.shape[0]);
    size_t off = 0;
    for (const NpyArray& a : arrays) {
      const size_t row = static_cast<size_t>(RowBytes(a.header));
      if (arrays.size() > 1) off = (off + kPieceAlign - 1) / kPieceAlign * kPieceAlign;
      f->piece_offsets_.push_back(off);
      f->piece_bytes_.push_back(row);
      off += row;
    }
    f->record_bytes_ = off;
    f->step_bytes_ = RowBytes(h0);
  }
  f->arrays_ = std::move(arrays);
  return std::shared_ptr<const NpyRowsFile>(std::move(f));
}

RecordExtent NpyRowsFile::extent(uint64_t i) const {
  const NpyArray& a = arrays_[0];
  if (arrays_.size() > 1) return {i * record_bytes_, record_bytes_};
  return {a.base + a.header.data_offset + i * step_bytes_, record_bytes_};
}

Status NpyRowsFile::ReadArrayRun(size_t j, uint64_t first, uint64_t count, uint8_t* dst) const {
  const NpyArray& a = arrays_[j];
  const uint64_t step = arrays_.size() > 1 ? piece_bytes_[j] : step_bytes_;
  const uint64_t at = a.base + a.header.data_offset + first * step;
  const uint64_t bytes =
      (count - 1) * step + (arrays_.size() > 1 ? piece_bytes_[j] : record_bytes_);
  if (bytes == 0) return Status::OK();
  Result<size_t> got = a.file->ReadAt(at, dst, static_cast<size_t>(bytes));
  if (!got.ok()) {
    return got.status().WithContext(fmt::format("{}: reading record {}", path_, first));
  }
  if (*got < bytes) {
    return Status::DataLoss(fmt::format(
        "{}: record {} at offset {}: truncated: {} bytes expected, the file ends {} bytes in "
        "(did it shrink after it was opened?)",
        a.file->name(), first, at, bytes, *got));
  }
  if (a.header.dtype.big_endian) SwapToLittle(dst, bytes, a.header.dtype.size);
  return Status::OK();
}

Result<std::vector<Record>> NpyRowsFile::ReadRun(uint64_t first, size_t max_bytes,
                                                 uint64_t stride) const {
  stride = std::max<uint64_t>(stride, 1);
  if (first >= num_records_) {
    return Status::OutOfRange(
        fmt::format("{}: cannot read record {}: the file has {}", path_, first, num_records_));
  }
  uint64_t n = 1;
  if (record_bytes_ == 0) {
    n = kMaxEmptyRowsPerRun;
  } else if (sequence_length_ > 0) {
    const uint64_t isz = static_cast<uint64_t>(arrays_[0].header.dtype.size);
    const uint64_t tokens = max_bytes / isz;
    if (tokens > 1)
      n = std::max<uint64_t>(1, (tokens - 1) / static_cast<uint64_t>(sequence_length_));
  } else {
    n = std::max<uint64_t>(1, max_bytes / record_bytes_);
  }
  const uint64_t last = std::min(num_records_ - 1, first + n - 1);
  if (arrays_.size() > 1) return ReadComposite(first, last, stride);
  return ReadSingle(first, last, stride);
}

Result<std::vector<Record>> NpyRowsFile::ReadSingle(uint64_t first, uint64_t last,
                                                    uint64_t stride) const {
  const uint64_t count = last - first + 1;
  const uint64_t bytes = (count - 1) * step_bytes_ + record_bytes_;
  SLUICE_ASSIGN_OR_RETURN(Buffer buf,
                          Buffer::Allocate(static_cast<size_t>(std::max<uint64_t>(bytes, 1))));
  SLUICE_RETURN_IF_ERROR(ReadArrayRun(0, first, count, buf.data()));
  std::vector<Record> run;
  run.reserve(static_cast<size_t>((count - 1) / stride + 1));
  for (uint64_t i = first;; i += stride) {
    const char* p = reinterpret_cast<const char*>(buf.data()) + (i - first) * step_bytes_;
    run.push_back(Record{std::string_view(p, record_bytes_), buf, extent(i).offset, i});
    if (last - i < stride) break;
  }
  return run;
}

Result<std::vector<Record>> NpyRowsFile::ReadComposite(uint64_t first, uint64_t last,
                                                       uint64_t stride) const {
  const uint64_t count = last - first + 1;
  SLUICE_ASSIGN_OR_RETURN(
      Buffer buf,
      Buffer::Allocate(static_cast<size_t>(std::max<uint64_t>(count * record_bytes_, 1))));
  size_t largest = 1;
  for (size_t b : piece_bytes_) largest = std::max(largest, b);
  SLUICE_ASSIGN_OR_RETURN(Buffer scratch, Buffer::Allocate(static_cast<size_t>(count * largest)));
  for (size_t j = 0; j < arrays_.size(); ++j) {
    SLUICE_RETURN_IF_ERROR(ReadArrayRun(j, first, count, scratch.data()));
    for (uint64_t r = 0; r < count && piece_bytes_[j] > 0; ++r) {
      std::memcpy(buf.data() + r * record_bytes_ + piece_offsets_[j],
                  scratch.data() + r * piece_bytes_[j], piece_bytes_[j]);
    }
  }
  std::vector<Record> run;
  run.reserve(static_cast<size_t>((count - 1) / stride + 1));
  for (uint64_t i = first;; i += stride) {
    const char* p = reinterpret_cast<const char*>(buf.data()) + (i - first) * record_bytes_;
    run.push_back(Record{std::string_view(p, record_bytes_), buf, extent(i).offset, i});
    if (last - i < stride) break;
  }
  return run;
}

}  // namespace sluice
