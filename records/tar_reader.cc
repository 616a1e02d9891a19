#include "sluice/records/tar_reader.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "sluice/records/internal/byte_source.h"
#include "sluice/records/internal/read_buffer.h"
#include "sluice/records/internal/tar_header.h"
#include "sluice/records/record_index.h"
#include "sluice/records/tar_format.h"
#include "sluice/records/tar_index.h"

namespace sluice {

using records_internal::ParseTarEntry;
using records_internal::TarEntry;
using records_internal::TarParse;

namespace {

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

  // Stream bytes read and not yet consumed.
  records_internal::ReadBuffer buf;
  uint64_t number = 0;
  uint64_t file_size = 0;
  bool ended = false;
  std::string scratch, key;
  std::optional<RecordIndex> index;  // loaded by the first Seek
  bool index_tried = false;

  std::string Where(uint64_t offset) const {
    return fmt::format("{}: sample {} at offset {}{}", file->name(), number, offset,
                       source->Where());
  }

  // Consumes `n` bytes, seeking past what is buffered (tar sizes are below
  // 2^62: the sum does not wrap).
  Status Discard(uint64_t n) { return buf.SeekTo(buf.offset() + n); }

  Status Truncated(uint64_t offset, uint64_t have, uint64_t need) {
    std::string msg = fmt::format(
        "{}: truncated tar file: the member needs {} bytes but the file ends {} bytes in",
        Where(offset), need, have);
    Status stream = source->CheckCleanEnd();
    if (!stream.ok()) msg += fmt::format(" ({})", stream.message());
    return Status::DataLoss(msg);
  }

  // Parses the entry `cur` bytes after buf.data(): its headers buffered,
  // the payload not yet. kEnd at the archive's end marker or a clean end of
  // the stream at an entry's start.
  Result<TarParse> ParseAt(uint64_t cur) {
    while (true) {
      const uint64_t at = buf.offset() + cur;
      const std::string_view avail(reinterpret_cast<const char*>(buf.data()) + cur,
                                   buf.available() - cur);
      SLUICE_ASSIGN_OR_RETURN(
          TarParse t, ParseTarEntry(avail, at, opts.max_header_size, file->name(), &scratch));
      if (t.kind != TarParse::kNeedMore) return t;
      if (trusted && at + t.need > file_size) {
        SLUICE_ASSIGN_OR_RETURN(file_size, file->Size());
      }
      if (trusted && at + t.need > file_size) {
        if (at == file_size) return TarParse{};  // ends at a block: the end
        return Truncated(at, file_size - at, t.need);
      }
      SLUICE_ASSIGN_OR_RETURN(uint64_t have, buf.Ensure(cur + t.need, trusted));
      if (have < cur + t.need) {
        if (have == cur) {
          SLUICE_RETURN_IF_ERROR(source->CheckCleanEnd());
          return TarParse{};
        }
        return Truncated(at, have - cur, t.need);
      }
    }
  }

  // Checks that entry `e`, `cur` bytes after buf.data(), lies in the file.
  Status CheckInFile(uint64_t cur, const TarEntry& e) {
    if (!trusted) return Status::OK();
    const uint64_t at = buf.offset() + cur;
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

  // After TooLarge: skips the rest of the sample with key `key`.
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
    const uint64_t start = buf.offset();
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
      SLUICE_ASSIGN_OR_RETURN(uint64_t have, buf.Ensure(cur + e.length, trusted));
      if (have < cur + e.length) return Truncated(start + cur, have - cur, e.length);
      cur += e.length;
    }
    if (!have_key) {
      // Only skipped entries (or none) before the end.
      buf.Consume(static_cast<size_t>(cur));
      ended = true;
      return std::optional<Record>();
    }
    const std::string_view data(reinterpret_cast<const char*>(buf.data()), cur);
    Record record{data, buf.buffer(), start, number};
    Status check = ForEachTarMember(data, start, file->name(), opts.max_header_size,
                                    [](const TarMember&) { return Status::OK(); });
    buf.Consume(static_cast<size_t>(cur));
    ++number;
    if (at_end) ended = true;
    if (!check.ok()) return check;
    buf.ReleaseIfOversized();  // a buffer made for this sample alone: the record keeps it
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
    SLUICE_RETURN_IF_ERROR(buf.SeekTo(target));
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
  impl->buf =
      records_internal::ReadBuffer(impl->source.get(), file->name(),
                                   {.buffer_size = std::max<size_t>(options.buffer_size, 4096)});
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
uint64_t TarReader::position() const { return impl_->buf.offset(); }

size_t TarReader::buffer_bytes() const { return impl_->buf.buffer_bytes(); }

}  // namespace sluice
