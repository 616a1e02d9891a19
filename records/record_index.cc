#include "sluice/records/record_index.h"

#include <charconv>
#include <vector>

#include <fmt/format.h>

#include "sluice/core/file.h"
#include "sluice/records/tfrecord_format.h"

namespace sluice {

RecordIndex::RecordIndex(std::vector<RecordIndexEntry> entries, std::optional<RecordIndexData> data)
    : entries_(std::move(entries)), data_(data) {}

namespace {

constexpr std::string_view kTrailer = "# sluice-index ";

// A file whose bytes are digested as a reader reads them, so that building
// an index reads the file once. The reader reads in order (after a look at
// the first bytes, which it reads again): each byte is digested the first
// time a read reaches it; Finish() digests what no read reached.
class DigestingFile final : public ReadableFile {
 public:
  explicit DigestingFile(std::unique_ptr<ReadableFile> file) : file_(std::move(file)) {}

  Result<size_t> ReadAt(uint64_t offset, void* dst, size_t n) override {
    SLUICE_ASSIGN_OR_RETURN(size_t got, file_->ReadAt(offset, dst, n));
    if (offset <= d_.bytes && offset + got > d_.bytes) {
      const size_t skip = static_cast<size_t>(d_.bytes - offset);
      d_.crc32c = crc32c::Extend(d_.crc32c, static_cast<const char*>(dst) + skip, got - skip);
      d_.bytes = offset + got;
    }
    return got;
  }
  Result<uint64_t> Size() override { return file_->Size(); }
  const std::string& name() const override { return file_->name(); }
  void AdviseSequential() override { file_->AdviseSequential(); }

  // The digest of the whole file: the bytes no read reached are read here.
  Result<RecordIndexData> Finish() {
    std::vector<char> buf(size_t{1} << 20);
    while (true) {
      SLUICE_ASSIGN_OR_RETURN(size_t got, ReadAt(d_.bytes, buf.data(), buf.size()));
      if (got == 0) return d_;
    }
  }

 private:
  std::unique_ptr<ReadableFile> file_;
  RecordIndexData d_;
};

}  // namespace

Result<RecordIndexData> DigestDataFile(const std::string& path) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> file, OpenReadableFile(path));
  file->AdviseSequential();
  return DigestingFile(std::move(file)).Finish();
}

uint64_t RecordIndex::stream_size() const {
  return entries_.empty() ? 0 : entries_.back().offset + entries_.back().length;
}

std::string RecordIndex::PathFor(const std::string& tfrecord_path) {
  return tfrecord_path + ".idx";
}

Result<RecordIndex> RecordIndex::Build(const std::string& tfrecord_path,
                                       const TFRecordReaderOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> file, OpenReadableFile(tfrecord_path));
  if (file->is_stream()) {
    return Status::InvalidArgument("cannot index " + file->name() +
                                   ": it is a stream (a pipe), and an index describes a file");
  }
  // The reader owns the file; `digest` stays valid while it lives.
  auto digesting = std::make_unique<DigestingFile>(std::move(file));
  DigestingFile* digest = digesting.get();
  SLUICE_ASSIGN_OR_RETURN(TFRecordReader reader,
                          TFRecordReader::Open(std::move(digesting), options));
  std::vector<RecordIndexEntry> entries;
  while (true) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<RecordFrame> r, reader.NextFrame());
    if (!r) break;
    entries.push_back({r->offset, r->length + tfrecord::kFramingSize});
  }
  SLUICE_ASSIGN_OR_RETURN(RecordIndexData data, digest->Finish());
  return RecordIndex(std::move(entries), data);
}

namespace {

bool ParseU64(std::string_view s, uint64_t* out) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

// Parses the trailer's fields: "data-bytes=N data-crc32c=XXXXXXXX".
std::optional<RecordIndexData> ParseTrailer(std::string_view fields) {
  RecordIndexData d;
  bool bytes = false, crc = false;
  while (!fields.empty()) {
    const size_t sp = fields.find(' ');
    const std::string_view field = fields.substr(0, sp);
    fields = sp == std::string_view::npos ? std::string_view() : fields.substr(sp + 1);
    if (field.empty()) continue;
    if (field.starts_with("data-bytes=")) {
      bytes = ParseU64(field.substr(11), &d.bytes);
      if (!bytes) return std::nullopt;
    } else if (field.starts_with("data-crc32c=")) {
      const std::string_view hex = field.substr(12);
      auto [ptr, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), d.crc32c, 16);
      crc = hex.size() == 8 && ec == std::errc() && ptr == hex.data() + hex.size();
      if (!crc) return std::nullopt;
    }  // fields a later version adds are skipped
  }
  if (!bytes || !crc) return std::nullopt;
  return d;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

}  // namespace

Result<RecordIndex> RecordIndex::Parse(std::string_view text, const std::string& name) {
  std::vector<RecordIndexEntry> entries;
  std::optional<RecordIndexData> data;
  uint64_t expected_offset = 0;
  size_t line_no = 0;
  while (!text.empty()) {
    ++line_no;
    const size_t nl = text.find('\n');
    std::string_view line = Trim(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (line.empty()) continue;
    if (line.front() == '#') {
      if (!line.starts_with(kTrailer)) continue;  // a comment
      data = ParseTrailer(line.substr(kTrailer.size()));
      if (!data) {
        return Status::DataLoss(fmt::format(
            "{}:{}: malformed trailer \"{}\" (expected \"{}data-bytes=N data-crc32c=XXXXXXXX\")",
            name, line_no, line.substr(0, 120), kTrailer));
      }
      continue;
    }
    if (data) {
      return Status::DataLoss(fmt::format("{}:{}: an entry after the trailer line", name, line_no));
    }
    const size_t sep = line.find_first_of(" \t");
    RecordIndexEntry e;
    if (sep == std::string_view::npos || !ParseU64(line.substr(0, sep), &e.offset) ||
        !ParseU64(Trim(line.substr(sep + 1)), &e.length)) {
      return Status::DataLoss(fmt::format("{}:{}: expected \"<offset> <length>\", found \"{}\"",
                                          name, line_no, line.substr(0, 80)));
    }
    if (e.offset != expected_offset) {
      return Status::DataLoss(
          fmt::format("{}:{}: record starts at offset {} but the previous one "
                      "ends at {}",
                      name, line_no, e.offset, expected_offset));
    }
    if (e.length < tfrecord::kFramingSize ||
        __builtin_add_overflow(e.offset, e.length, &expected_offset)) {
      return Status::DataLoss(
          fmt::format("{}:{}: impossible record length {}", name, line_no, e.length));
    }
    entries.push_back(e);
  }
  return RecordIndex(std::move(entries), data);
}

Result<RecordIndex> RecordIndex::Load(const std::string& idx_path) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> file, OpenReadableFile(idx_path));
  SLUICE_ASSIGN_OR_RETURN(uint64_t size, file->Size());
  // Each entry takes at least 4 bytes ("0 16\n" is the shortest), and each
  // describes 16 or more bytes of data: a 1 TB index is not plausible.
  constexpr uint64_t kMaxIndexBytes = uint64_t{1} << 34;
  if (size > kMaxIndexBytes) {
    return Status::DataLoss(fmt::format("{}: {} bytes is too large for an index", idx_path, size));
  }
  std::string text(size, '\0');
  SLUICE_ASSIGN_OR_RETURN(size_t got, file->ReadAt(0, text.data(), size));
  text.resize(got);
  return Parse(text, idx_path);
}

Result<RecordIndex> RecordIndex::LoadFor(const std::string& tfrecord_path) {
  SLUICE_ASSIGN_OR_RETURN(RecordIndex index, Load(PathFor(tfrecord_path)));
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> file, OpenReadableFile(tfrecord_path));
  const std::string idx = PathFor(tfrecord_path);
  if (file->is_stream()) {
    return Status::FailedPrecondition(
        fmt::format("{}: {} is a stream, which an index cannot describe", idx, tfrecord_path));
  }
  uint8_t head[tfrecord::kHeaderSize];
  SLUICE_ASSIGN_OR_RETURN(size_t got, file->ReadAt(0, head, sizeof(head)));
  const Compression c =
      DetectCompression(std::string_view(reinterpret_cast<const char*>(head), got));
  SLUICE_ASSIGN_OR_RETURN(uint64_t size, file->Size());
  const auto stale = [&](const std::string& why) {
    return Status::FailedPrecondition(fmt::format(
        "{}: stale index: {}; rebuild it with `sluice index {}`", idx, why, tfrecord_path));
  };
  if (index.data() && index.data()->bytes != size) {
    return stale(fmt::format("it was made for a file of {} bytes but {} has {}",
                             index.data()->bytes, tfrecord_path, size));
  }
  if (c == Compression::kNone) {
    if (index.stream_size() != size) {
      return stale(fmt::format("it describes {} bytes but {} has {}", index.stream_size(),
                               tfrecord_path, size));
    }
  } else if (!index.data()) {
    // A compressed file's size says nothing about its stream.
    return stale(fmt::format(
        "{} is {}-compressed and the index has no trailer naming the data it was made for "
        "(an older sluice wrote it)",
        tfrecord_path, CompressionName(c)));
  }
  return index;
}

Status RecordIndex::CheckAgainst(const std::string& tfrecord_path) const {
  const std::string idx = PathFor(tfrecord_path);
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> file, OpenReadableFile(tfrecord_path));
  uint8_t head[tfrecord::kHeaderSize];
  SLUICE_ASSIGN_OR_RETURN(size_t got, file->ReadAt(0, head, sizeof(head)));
  const Compression c =
      DetectCompression(std::string_view(reinterpret_cast<const char*>(head), got));
  if (c != Compression::kNone) {
    if (!data_) return Status::FailedPrecondition(idx + ": no trailer naming its data file");
    SLUICE_ASSIGN_OR_RETURN(RecordIndexData now, DigestDataFile(tfrecord_path));
    if (now != *data_) {
      return Status::FailedPrecondition(fmt::format(
          "{}: stale index: it was made for a file of {} bytes with CRC-32C {:08x}, {} has {} "
          "bytes with {:08x}",
          idx, data_->bytes, data_->crc32c, tfrecord_path, now.bytes, now.crc32c));
    }
    return Status::OK();
  }
  // Every record's header, read in windows of the file for small records
  // and one by one for large ones (their payloads are skipped).
  constexpr uint64_t kWindow = 256 << 10;
  std::vector<uint8_t> window(kWindow);
  uint64_t window_offset = 0, window_size = 0;
  file->AdviseSequential();
  for (size_t i = 0; i < entries_.size(); ++i) {
    const RecordIndexEntry& e = entries_[i];
    if (e.offset < window_offset ||
        e.offset + tfrecord::kHeaderSize > window_offset + window_size) {
      const size_t want = e.length >= kWindow / 4 ? tfrecord::kHeaderSize : kWindow;
      SLUICE_ASSIGN_OR_RETURN(window_size, file->ReadAt(e.offset, window.data(), want));
      window_offset = e.offset;
      if (window_size < tfrecord::kHeaderSize) {
        return Status::FailedPrecondition(
            fmt::format("{}: stale index: entry {} starts at offset {}, where {} ends", idx, i,
                        e.offset, tfrecord_path));
      }
    }
    const uint8_t* header = window.data() + (e.offset - window_offset);
    const uint64_t length = tfrecord::DecodeFixed64(header);
    if (!tfrecord::HeaderChecksumOk(header) || length != e.payload_length()) {
      return Status::FailedPrecondition(fmt::format(
          "{}: stale index: entry {} says a record of {} bytes at offset {}, but {} holds {} "
          "there",
          idx, i, e.payload_length(), e.offset, tfrecord_path,
          tfrecord::HeaderChecksumOk(header) ? fmt::format("a record of {} bytes", length)
                                             : std::string("no record header")));
    }
  }
  return Status::OK();
}

std::string RecordIndex::ToText() const {
  std::string out;
  out.reserve(entries_.size() * 16);
  for (const RecordIndexEntry& e : entries_) {
    fmt::format_to(std::back_inserter(out), "{} {}\n", e.offset, e.length);
  }
  if (data_) {
    fmt::format_to(std::back_inserter(out), "{}data-bytes={} data-crc32c={:08x}\n", kTrailer,
                   data_->bytes, data_->crc32c);
  }
  return out;
}

Status RecordIndex::Save(const std::string& idx_path, bool sync) const {
  SLUICE_ASSIGN_OR_RETURN(auto out, OutputFile::Create(idx_path, {.atomic = true, .sync = sync}));
  SLUICE_RETURN_IF_ERROR(out->Append(ToText()));
  return out->Commit();
}

Result<RecordCount> CountRecordsOf(const std::string& tfrecord_path,
                                   const TFRecordReaderOptions& options) {
  RecordCount count;
  Result<RecordIndex> index = RecordIndex::LoadFor(tfrecord_path);
  if (index.ok()) {
    count.index_status = index->CheckAgainst(tfrecord_path);
    if (count.index_status.ok()) {
      count.records = index->size();
      count.from_index = true;
      return count;
    }
  } else if (index.status().code() != StatusCode::kNotFound) {
    count.index_status = index.status();
  }
  SLUICE_ASSIGN_OR_RETURN(TFRecordReader reader, TFRecordReader::Open(tfrecord_path, options));
  while (true) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<RecordFrame> r, reader.NextFrame());
    if (!r) break;
  }
  count.records = reader.next_record_number();
  return count;
}

Result<uint64_t> CountRecords(const std::string& tfrecord_path,
                              const TFRecordReaderOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(RecordCount count, CountRecordsOf(tfrecord_path, options));
  return count.records;
}

}  // namespace sluice
