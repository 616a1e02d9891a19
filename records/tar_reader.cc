#include "sluice/records/tar_reader.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "sluice/records/internal/byte_source.h"
#include "sluice/records/internal/tar_header.h"
#include "sluice/records/record_index.h"
#include "sluice/records/tar_format.h"
#include "sluice/records/tar_index.h"

namespace sluice {

using records_internal::ParseTarEntry;
using records_internal::TarEntry;
using records_internal::TarParse;

namespace {

constexpr size_t kMaxSpares = 3;

bool EqualsLower(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

}  // namespace

Result<Compression> DetectTarCompression(ReadableFile& file) {
  char head[tar::kBlockSize];
  SLUICE_ASSIGN_OR_RETURN(size_t got, file.ReadAt(0, head, sizeof(head)));
  const std::string_view h(head, got);
  // A tar header first: its name's first bytes could pass for a zlib header.
  if (got == 0 || records_internal::IsTarHeaderBlock(h)) return Compression::kNone;
  const Compression c = DetectCompression(h);
  return c == Compression::kAuto ? Compression::kNone : c;
}

Status ForEachTarMember(std::string_view sample, uint64_t offset, const std::string& filename,
                        uint64_t max_header_size,
                        const std::function<Status(const TarMember&)>& fn) {
  std::string scratch, key;
  std::vector<std::string> extensions;  // seen so far (short: no allocation each)
  bool have_key = false;
  uint64_t p = 0;
  while (p < sample.size()) {
    const uint64_t at = offset + p;
    SLUICE_ASSIGN_OR_RETURN(TarParse t, ParseTarEntry(sample.substr(p), at, max_header_size,
                                                      filename, &scratch));
    if (t.kind != TarParse::kEntry) {
      return Status::DataLoss(fmt::format(
          "{}: tar sample at offset {}: {} at offset {}", filename, offset,
          t.kind == TarParse::kEnd ? "the archive's end marker" : "a header cut short", at));
    }
    const TarEntry& e = t.entry;
    if (e.length > sample.size() - p) {
      return Status::DataLoss(fmt::format(
          "{}: tar member at offset {}: its {} bytes run past the sample's end ({} bytes from "
          "offset {})",
          filename, at, e.size, sample.size(), offset));
    }
    if (e.regular && !records_internal::IsTarMetaName(e.name)) {
      TarMember m;
      m.name = e.name;
      m.offset = at;
      if (!records_internal::SplitTarName(e.name, &m.key, &m.extension)) {
        return Status::DataLoss(fmt::format(
            "{}: tar member \"{}\" at offset {} has no key (WebDataset names are "
            "KEY.EXTENSION)",
            filename, e.name, at));
      }
      if (!have_key) {
        key.assign(m.key);
        have_key = true;
      } else if (m.key != key) {
        return Status::DataLoss(fmt::format(
            "{}: tar sample at offset {} holds key \"{}\" and then \"{}\" (at offset {}); is the "
            "index stale?",
            filename, offset, key, m.key, at));
      }
      for (const std::string& seen : extensions) {
        if (EqualsLower(seen, m.extension)) {
          return Status::DataLoss(fmt::format(
              "{}: tar sample \"{}\" at offset {} has extension \"{}\" twice (at offset {})",
              filename, key, offset, m.extension, at));
        }
      }
      extensions.emplace_back(m.extension);
      m.data = sample.substr(p + e.data_start, e.size);
      SLUICE_RETURN_IF_ERROR(fn(m));
    }
    p += e.length;
  }
  return Status::OK();
}

struct TarReader::Impl {
  std::unique_ptr<ReadableFile> file;
  std::unique_ptr<records_internal::ByteSource> source;
  TarReaderOptions opts;
  Compression compression = Compression::kNone;
  bool trusted = false;  // uncompressed and seekable: sizes are checked against the file's

  // Bytes [pos, end) of `buf` are stream bytes not yet consumed; buf[0] is
  // at stream offset `base`.
  Buffer buf;
  size_t pos = 0, end = 0;
  uint64_t base = 0;
  std::vector<Buffer> spares;
  uint64_t number = 0;
  uint64_t file_size = 0;
  bool ended = false;
  std::string scratch, key;
  std::optional<RecordIndex> index;  // loaded by the first Seek
  bool index_tried = false;

  size_t Floor() const { return std::max<size_t>(opts.buffer_size, 4096); }
  std::string Where(uint64_t offset) const {
    return fmt::format("{}: sample {} at offset {}{}", file->name(), number, offset,
                       source->Where());
  }

  // Makes the buffer hold at least `capacity` bytes from `pos`, moving the
  // unconsumed bytes to its start; another buffer when records hold this one.
  Status Reserve(size_t capacity) {
    const size_t tail = end - pos;
    if (buf && buf.unique() && buf.size() >= capacity) {
      if (pos > 0) {
        std::memmove(buf.data(), buf.data() + pos, tail);
        base += pos;
        end = tail;
        pos = 0;
      }
      return Status::OK();
    }
    Buffer next;
    for (auto it = spares.begin(); it != spares.end(); ++it) {
      if (it->unique() && it->size() >= capacity) {
        next = std::move(*it);
        spares.erase(it);
        break;
      }
    }
    if (!next) {
      Result<Buffer> fresh = Buffer::Allocate(capacity);
      if (!fresh.ok()) return fresh.status().WithContext("reading " + file->name());
      next = std::move(fresh).value();
    }
    if (tail > 0) std::memcpy(next.data(), buf.data() + pos, tail);
    base += pos;
    end = tail;
    pos = 0;
    if (buf && buf.size() <= Floor()) {
      if (spares.size() >= kMaxSpares) spares.erase(spares.begin());
      spares.push_back(std::move(buf));
    }
    buf = std::move(next);
    return Status::OK();
  }

  // Reads until `need` bytes are buffered from `pos` or the stream ends;
  // returns how many are. An untrusted need grows the buffer only as bytes
  // arrive (a compressed stream's sizes are not checked against anything).
  Result<uint64_t> Ensure(uint64_t need) {
    if (end - pos >= need) return end - pos;
    const size_t floor = Floor();
    uint64_t capacity = std::max<uint64_t>(floor, trusted ? need : std::min<uint64_t>(need, floor));
    SLUICE_RETURN_IF_ERROR(Reserve(static_cast<size_t>(capacity)));
    while (end - pos < need) {
      if (end == buf.size()) {
        capacity = std::min<uint64_t>(need, std::max<uint64_t>(2 * buf.size(), floor));
        SLUICE_RETURN_IF_ERROR(Reserve(static_cast<size_t>(capacity)));
      }
      SLUICE_ASSIGN_OR_RETURN(size_t got, source->Read(buf.data() + end, buf.size() - end));
      if (got == 0) break;
      end += got;
    }
    return end - pos;
  }

  // Consumes `n` bytes from `pos`, reading past what is buffered.
  Status Discard(uint64_t n) {
    if (n <= end - pos) {
      pos += static_cast<size_t>(n);
      return Status::OK();
    }
    const uint64_t target = base + pos + n;
    SLUICE_RETURN_IF_ERROR(source->SeekTo(target));
    base = target;
    pos = end = 0;
    return Status::OK();
  }

  Status Truncated(uint64_t offset, uint64_t have, uint64_t need) {
    std::string msg = fmt::format(
        "{}: truncated tar file: the member needs {} bytes but the file ends {} bytes in",
        Where(offset), need, have);
    Status stream = source->CheckCleanEnd();
    if (!stream.ok()) msg += fmt::format(" ({})", stream.message());
    return Status::DataLoss(msg);
  }

  // Parses the entry `cur` bytes after `pos`: its headers buffered, the
  // payload not yet. kEnd at the archive's end marker or a clean end of the
  // stream at an entry's start.
  Result<TarParse> ParseAt(uint64_t cur) {
    while (true) {
      const std::string_view avail(reinterpret_cast<const char*>(buf.data()) + pos + cur,
                                   end - pos - cur);
      SLUICE_ASSIGN_OR_RETURN(TarParse t, ParseTarEntry(avail, base + pos + cur,
                                                        opts.max_header_size, file->name(),
                                                        &scratch));
      if (t.kind != TarParse::kNeedMore) return t;
      if (trusted && base + pos + cur + t.need > file_size) {
        SLUICE_ASSIGN_OR_RETURN(file_size, file->Size());
      }
      if (trusted && base + pos + cur + t.need > file_size) {
        if (base + pos + cur == file_size) return TarParse{};  // ends at a block: the end
        return Truncated(base + pos + cur, file_size - (base + pos + cur), t.need);
      }
      SLUICE_ASSIGN_OR_RETURN(uint64_t have, Ensure(cur + t.need));
      if (have < cur + t.need) {
        if (have == cur) {
          SLUICE_RETURN_IF_ERROR(source->CheckCleanEnd());
          return TarParse{};
        }
        return Truncated(base + pos + cur, have - cur, t.need);
      }
    }
  }

  // Checks that entry `e`, `cur` bytes after `pos`, lies in the file.
  Status CheckInFile(uint64_t cur, const TarEntry& e) {
    if (!trusted) return Status::OK();
    const uint64_t at = base + pos + cur;
    if (at + e.length > file_size) {
      SLUICE_ASSIGN_OR_RETURN(file_size, file->Size());
    }
    if (at + e.length > file_size) {
      return Status::DataLoss(fmt::format(
          "{}: tar member \"{}\" at offset {} claims {} bytes, past the end of the file ({} "
          "bytes)",
          file->name(), e.name, at, e.size, file_size));
    }
    return Status::OK();
  }

  Status TooLarge(uint64_t start, uint64_t size) {
    return Status::DataLoss(fmt::format("{}: the sample is larger than max_sample_size {} ({} bytes "
                                        "so far); skipped",
                                        Where(start), opts.max_sample_size, size));
  }

  // After TooLarge: skips the rest of the sample with key `key`, from `pos`.
  Status SkipSample() {
    while (true) {
      SLUICE_ASSIGN_OR_RETURN(TarParse t, ParseAt(0));
      if (t.kind == TarParse::kEnd) return Status::OK();
      const TarEntry& e = t.entry;
      if (e.regular && !records_internal::IsTarMetaName(e.name)) {
        std::string_view k, ext;
        if (!records_internal::SplitTarName(e.name, &k, &ext) || k != key) return Status::OK();
      }
      SLUICE_RETURN_IF_ERROR(CheckInFile(0, e));
      SLUICE_RETURN_IF_ERROR(Discard(e.length));
    }
  }

  Result<std::optional<Record>> Next() {
    if (ended) return std::optional<Record>();
    const uint64_t start = base + pos;
    uint64_t cur = 0;
    bool have_key = false;
    bool at_end = false;
    while (true) {
      Result<TarParse> parsed = ParseAt(cur);
      // A bad header after members: the sample ends before it, and the next
      // call stays at the error.
      if (!parsed.ok() && have_key) break;
      SLUICE_ASSIGN_OR_RETURN(TarParse t, std::move(parsed));
      if (t.kind == TarParse::kEnd) {
        at_end = true;
        break;
      }
      const TarEntry& e = t.entry;
      const bool member = e.regular && !records_internal::IsTarMetaName(e.name);
      if (member) {
        std::string_view k, ext;
        if (!records_internal::SplitTarName(e.name, &k, &ext)) {
          if (have_key) break;  // the sample ends before it
          const uint64_t at = start + cur;
          Status err = Status::DataLoss(fmt::format(
              "{}: tar member \"{}\" at offset {} has no key (WebDataset names are "
              "KEY.EXTENSION); skipped",
              file->name(), e.name, at));
          SLUICE_RETURN_IF_ERROR(CheckInFile(cur, e));
          SLUICE_RETURN_IF_ERROR(Discard(cur + e.length));
          ++number;
          return err;
        }
        if (have_key && k != key) break;
        if (!have_key) key.assign(k);
        have_key = true;
      }
      SLUICE_RETURN_IF_ERROR(CheckInFile(cur, e));
      if (cur + e.length > opts.max_sample_size) {
        Status err = TooLarge(start, cur + e.length);
        if (!have_key) return err;  // skipped entries alone: nothing to skip by key
        SLUICE_RETURN_IF_ERROR(Discard(cur));
        SLUICE_RETURN_IF_ERROR(SkipSample());
        ++number;
        return err;
      }
      SLUICE_ASSIGN_OR_RETURN(uint64_t have, Ensure(cur + e.length));
      if (have < cur + e.length) return Truncated(start + cur, have - cur, e.length);
      cur += e.length;
    }
    if (!have_key) {
      // Only skipped entries (or none) before the end.
      pos += static_cast<size_t>(cur);
      ended = true;
      return std::optional<Record>();
    }
    const std::string_view data(reinterpret_cast<const char*>(buf.data()) + pos, cur);
    Record record{data, buf, start, number};
    Status check = ForEachTarMember(data, start, file->name(), opts.max_header_size,
                                    [](const TarMember&) { return Status::OK(); });
    pos += static_cast<size_t>(cur);
    ++number;
    if (at_end) ended = true;
    if (!check.ok()) return check;
    if (pos == end && buf.size() > Floor()) {
      // A buffer made for this sample alone: the record keeps it.
      base += pos;
      pos = end = 0;
      buf = Buffer();
    }
    return std::optional<Record>(std::move(record));
  }

  Result<bool> Seek(uint64_t n) {
    if (!opts.seek_with_index) return false;
    if (!index_tried) {
      index_tried = true;
      Result<RecordIndex> loaded = LoadTarIndex(file->name());
      if (loaded.ok()) index = std::move(loaded).value();
    }
    if (!index) return false;
    if (n > index->size()) {
      return Status::OutOfRange(fmt::format("{}: cannot seek to sample {}: the index lists {}",
                                            file->name(), n, index->size()));
    }
    const uint64_t target = n == index->size() ? index->stream_size() : (*index)[n].offset;
    if (target >= base && target <= base + end) {
      pos = static_cast<size_t>(target - base);
    } else {
      SLUICE_RETURN_IF_ERROR(source->SeekTo(target));
      base = target;
      pos = end = 0;
    }
    number = n;
    ended = false;
    return true;
  }
};

Result<std::unique_ptr<TarReader>> TarReader::Open(const std::string& path,
                                                   const TarReaderOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> file, OpenReadableFile(path));
  return Open(std::move(file), options);
}

Result<std::unique_ptr<TarReader>> TarReader::Open(std::unique_ptr<ReadableFile> file,
                                                   const TarReaderOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->opts = options;
  impl->compression = options.compression;
  if (impl->compression == Compression::kAuto) {
    SLUICE_ASSIGN_OR_RETURN(impl->compression, DetectTarCompression(*file));
  }
  file->AdviseSequential();
  SLUICE_ASSIGN_OR_RETURN(impl->file_size, file->Size());
  if (impl->compression == Compression::kNone) {
    impl->source = records_internal::NewPlainSource(file.get());
    impl->trusted = !file->is_stream();
  } else {
    SLUICE_ASSIGN_OR_RETURN(impl->source, records_internal::NewInflateSource(
                                              file.get(), impl->compression, options.buffer_size));
  }
  impl->file = std::move(file);
  return std::unique_ptr<TarReader>(new TarReader(std::move(impl)));
}

TarReader::TarReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TarReader::~TarReader() = default;

Result<std::optional<Record>> TarReader::Next() { return impl_->Next(); }
uint64_t TarReader::next_record_number() const { return impl_->number; }
Result<bool> TarReader::Seek(uint64_t number) { return impl_->Seek(number); }
const std::string& TarReader::filename() const { return impl_->file->name(); }
Compression TarReader::compression() const { return impl_->compression; }
uint64_t TarReader::position() const { return impl_->base + impl_->pos; }

size_t TarReader::buffer_bytes() const {
  const size_t floor = impl_->Floor();
  size_t n = 0;
  if (impl_->buf && (impl_->buf.size() <= floor || impl_->buf.unique())) n += impl_->buf.size();
  for (const Buffer& b : impl_->spares) n += b.size();
  return n;
}

}  // namespace sluice
