#include "sluice/records/record_index.h"

#include <sys/stat.h>

#include <charconv>

#include <fmt/format.h>

#include "sluice/core/file.h"
#include "sluice/records/tfrecord_format.h"

namespace sluice {

RecordIndex::RecordIndex(std::vector<RecordIndexEntry> entries) : entries_(std::move(entries)) {}

uint64_t RecordIndex::stream_size() const {
  return entries_.empty() ? 0 : entries_.back().offset + entries_.back().length;
}

std::string RecordIndex::PathFor(const std::string& tfrecord_path) {
  return tfrecord_path + ".idx";
}

Result<RecordIndex> RecordIndex::Build(const std::string& tfrecord_path,
                                       const TFRecordReaderOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(TFRecordReader reader, TFRecordReader::Open(tfrecord_path, options));
  std::vector<RecordIndexEntry> entries;
  while (true) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Record> r, reader.Next());
    if (!r) break;
    entries.push_back({r->offset, r->data.size() + tfrecord::kFramingSize});
  }
  return RecordIndex(std::move(entries));
}

namespace {

bool ParseU64(std::string_view s, uint64_t* out) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

// True if `a` was modified strictly after `b` (false if either stat fails).
bool ModifiedAfter(const std::string& a, const std::string& b) {
  struct stat sa, sb;
  if (::stat(a.c_str(), &sa) != 0 || ::stat(b.c_str(), &sb) != 0) return false;
  if (sa.st_mtim.tv_sec != sb.st_mtim.tv_sec) return sa.st_mtim.tv_sec > sb.st_mtim.tv_sec;
  return sa.st_mtim.tv_nsec > sb.st_mtim.tv_nsec;
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
  uint64_t expected_offset = 0;
  size_t line_no = 0;
  while (!text.empty()) {
    ++line_no;
    const size_t nl = text.find('\n');
    std::string_view line = Trim(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (line.empty()) continue;
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
  return RecordIndex(std::move(entries));
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
  uint8_t head[tfrecord::kHeaderSize];
  SLUICE_ASSIGN_OR_RETURN(size_t got, file->ReadAt(0, head, sizeof(head)));
  const Compression c =
      DetectCompression(std::string_view(reinterpret_cast<const char*>(head), got));
  if (c == Compression::kNone) {
    SLUICE_ASSIGN_OR_RETURN(uint64_t size, file->Size());
    if (index.stream_size() != size) {
      return Status::FailedPrecondition(
          fmt::format("{}: stale index: it describes {} bytes but {} has {}; rebuild it with "
                      "`sluice index`",
                      PathFor(tfrecord_path), index.stream_size(), tfrecord_path, size));
    }
  } else if (ModifiedAfter(tfrecord_path, PathFor(tfrecord_path))) {
    // A compressed file's size says nothing about its stream; an index older
    // than the data may describe a previous version of it.
    return Status::FailedPrecondition(
        fmt::format("{}: stale index: {} was modified after it; rebuild it with `sluice index`",
                    PathFor(tfrecord_path), tfrecord_path));
  }
  return index;
}

std::string RecordIndex::ToText() const {
  std::string out;
  out.reserve(entries_.size() * 16);
  for (const RecordIndexEntry& e : entries_) {
    fmt::format_to(std::back_inserter(out), "{} {}\n", e.offset, e.length);
  }
  return out;
}

Status RecordIndex::Save(const std::string& idx_path, bool sync) const {
  SLUICE_ASSIGN_OR_RETURN(auto out, OutputFile::Create(idx_path, {.atomic = true, .sync = sync}));
  SLUICE_RETURN_IF_ERROR(out->Append(ToText()));
  return out->Commit();
}

Result<uint64_t> CountRecords(const std::string& tfrecord_path,
                              const TFRecordReaderOptions& options) {
  Result<RecordIndex> index = RecordIndex::LoadFor(tfrecord_path);
  if (index.ok()) return static_cast<uint64_t>(index->size());
  SLUICE_ASSIGN_OR_RETURN(TFRecordReader reader, TFRecordReader::Open(tfrecord_path, options));
  while (true) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Record> r, reader.Next());
    if (!r) return reader.next_record_number();
  }
}

}  // namespace sluice
