// `sluice count`, `sluice verify` and `sluice index`: whole-file passes over
// TFRecord files, and over the other record formats (record_formats.h).
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "commands.h"
#include "plural.h"
#include "progress.h"
#include "record_formats.h"
#include "sluice/records/record_index.h"

namespace sluice::tools {
namespace {

struct FilesOptions {
  std::vector<std::string> files;
  std::string compression = "auto";
  FormatArgs input;
  // The format of `file` (TFRecord: its name is "tfrecord" and the commands
  // take their own paths).
  Result<InputFormat> FormatOf(const std::string& file) const {
    FormatArgs a = input;
    a.compression = compression;
    return InputFormatFor(file, a);
  }
};

CLI::App* AddFilesCommand(CLI::App& app, const char* name, const char* help,
                          const std::shared_ptr<FilesOptions>& o) {
  CLI::App* cmd = app.add_subcommand(name, help);
  cmd->add_option("files", o->files, "Record files; - (or a pipe) reads standard input")
      ->required()
      ->check(ExistingFileOrStdin());
  cmd->add_option("--compression,-c", o->compression, "auto detects gzip and zlib streams")
      ->check(CLI::IsMember(kCompressionChoices))
      ->capture_default_str();
  AddFormatOptions(cmd, &o->input, "--format,-F");
  return cmd;
}

// The records of a file of another format: exact without reading where the
// format can say (an index, computable offsets), else by reading them all.
Result<uint64_t> CountOther(const InputFormat& format, const std::string& file) {
  if (format.count) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<uint64_t> n, format.count(file));
    if (n) return *n;
  }
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<RecordReader> reader, format.open(file));
  Progress progress("counting " + file);
  uint64_t bytes = 0;
  for (;;) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Record> rec, reader->Next());
    if (!rec) break;
    bytes += rec->data.size();
    progress.Update(rec->number + 1, bytes);
  }
  progress.Done();
  return reader->next_record_number();
}

int RunCount(const FilesOptions& o) {
  uint64_t total = 0;
  for (const std::string& file : o.files) {
    Result<InputFormat> format = o.FormatOf(file);
    if (!format.ok()) return Fail("count", format.status());
    if (format->name != "tfrecord") {
      Result<uint64_t> n = CountOther(*format, file);
      if (!n.ok()) return Fail("count", n.status());
      fmt::print("{}\t{}\n", *n, file);
      total += *n;
      continue;
    }
    Result<RecordCount> n = CountRecordsOf(file, ReaderOptions(o.compression));
    if (!n.ok()) return Fail("count", n.status());
    if (!n->index_status.ok()) {
      std::fflush(stdout);
      fmt::print(stderr, "note: {}; counted {} by reading it\n", n->index_status.message(), file);
    }
    fmt::print("{}\t{}\n", n->records, file);
    total += n->records;
  }
  if (o.files.size() > 1) fmt::print("{}\ttotal\n", total);
  return 0;
}

struct VerifyResult {
  uint64_t records = 0;
  uint64_t bytes = 0;
  uint64_t corrupt = 0;
  Status first_error;
  bool unreadable = false;  // the file could not be opened or read: not its content's fault
  bool stopped = false;     // the framing broke: records after it were not seen
};

// Reads every record, checking both CRCs as the bytes stream past (no record
// is held); continues past records whose data checksum fails (the framing
// is intact) and stops at anything else.
VerifyResult VerifyFile(const std::string& file, const TFRecordReaderOptions& opts) {
  VerifyResult v;
  Result<TFRecordReader> reader = TFRecordReader::Open(file, opts);
  if (!reader.ok()) {
    v.first_error = reader.status();
    v.unreadable = true;
    return v;
  }
  Progress progress("verifying " + file);
  while (true) {
    const uint64_t before = reader->next_record_number();
    Result<std::optional<RecordFrame>> r = reader->NextFrame();
    if (r.ok() && !r->has_value()) break;
    if (!r.ok()) {
      if (r.status().code() != StatusCode::kDataLoss) {
        v.unreadable = true;  // an I/O error, not bad bytes
        if (v.first_error.ok()) v.first_error = r.status();
        break;
      }
      ++v.corrupt;
      if (v.first_error.ok()) v.first_error = r.status();
      if (reader->next_record_number() == before) {  // cannot go on
        v.stopped = true;
        break;
      }
      continue;
    }
    ++v.records;
    v.bytes += (*r)->length;
    progress.Update(v.records, v.bytes);
  }
  progress.Done();
  return v;
}

// Reads every record of a file of another format and checks it as the
// format says; goes on past a record the reader moved past, stops where it
// cannot.
VerifyResult VerifyOther(const InputFormat& format, const std::string& file) {
  VerifyResult v;
  Result<std::unique_ptr<RecordReader>> reader = format.open(file);
  if (!reader.ok()) {
    v.first_error = reader.status();
    v.unreadable = true;
    return v;
  }
  Progress progress("verifying " + file);
  for (;;) {
    const uint64_t before = (*reader)->next_record_number();
    Result<std::optional<Record>> r = (*reader)->Next();
    if (r.ok() && !r->has_value()) break;
    Status bad = r.ok() && format.check ? format.check(**r, file) : r.status();
    if (!r.ok() && r.status().code() != StatusCode::kDataLoss &&
        r.status().code() != StatusCode::kInvalidArgument) {
      v.unreadable = true;  // an I/O error, not bad bytes
      if (v.first_error.ok()) v.first_error = r.status();
      break;
    }
    if (!bad.ok()) {
      ++v.corrupt;
      if (v.first_error.ok()) v.first_error = bad;
      if ((*reader)->next_record_number() == before) {  // cannot go on
        v.stopped = true;
        break;
      }
      continue;
    }
    ++v.records;
    v.bytes += (*r)->data.size();
    progress.Update(v.records, v.bytes);
  }
  progress.Done();
  return v;
}

int RunVerify(const FilesOptions& o) {
  size_t corrupt_files = 0, unreadable_files = 0;
  for (const std::string& file : o.files) {
    Result<InputFormat> format = o.FormatOf(file);
    if (!format.ok()) return Fail("verify", format.status());
    VerifyResult v = format->name == "tfrecord" ? VerifyFile(file, ReaderOptions(o.compression))
                                                : VerifyOther(*format, file);
    if (v.first_error.ok()) {
      fmt::print("{}: OK, {}, {} bytes\n", file, Plural(v.records, "record", "records"), v.bytes);
      continue;
    }
    std::fflush(stdout);
    if (v.unreadable) {
      ++unreadable_files;
      fmt::print(stderr, "{}: UNREADABLE: {}\n", file, v.first_error.ToString());
      continue;
    }
    ++corrupt_files;
    fmt::print(stderr, "{}: CORRUPT ({}, {}{}); the first: {}\n", file,
               Plural(v.corrupt, "bad record", "bad records"),
               Plural(v.records, "good one", "good ones"),
               v.stopped ? " before the framing broke" : "", v.first_error.ToString());
  }
  if (corrupt_files + unreadable_files > 0 && o.files.size() > 1) {
    std::fflush(stdout);
    fmt::print(stderr, "{} of {} files failed verification ({} corrupt, {} unreadable)\n",
               corrupt_files + unreadable_files, o.files.size(), corrupt_files, unreadable_files);
  }
  return corrupt_files + unreadable_files == 0 ? 0 : 1;
}

int RunIndex(const FilesOptions& o) {
  for (const std::string& file : o.files) {
    Result<InputFormat> format = o.FormatOf(file);
    if (!format.ok()) return Fail("index", format.status());
    if (format->name != "tfrecord") {
      if (!format->index) {
        return Fail("index", Status::InvalidArgument(file + ": " + format->name +
                                                     " files have no index: " + format->no_index));
      }
      Result<std::pair<std::string, uint64_t>> made = format->index(file);
      if (!made.ok()) return Fail("index", made.status());
      fmt::print("{}: {}\n", made->first, Plural(made->second, "record", "records"));
      continue;
    }
    Result<RecordIndex> index = RecordIndex::Build(file, ReaderOptions(o.compression));
    if (!index.ok()) return Fail("index", index.status());
    const std::string path = RecordIndex::PathFor(file);
    Status s = index->Save(path);
    if (!s.ok()) return Fail("index", s);
    fmt::print("{}: {}\n", path, Plural(index->size(), "record", "records"));
  }
  return 0;
}

}  // namespace

void AddCountCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<FilesOptions>();
  AddFilesCommand(app, "count",
                  "Count the records of TFRecord files (or text, CSV... files: --format), exactly: "
                  "from FILE.idx when it is present "
                  "and matches the file (every record header is checked against it; for a "
                  "compressed file, the file's CRC-32C), else by reading, checking CRCs",
                  o)
      ->callback([o, exit_code] {
        if (ExpandRemotePatterns("count", &o->files, exit_code)) *exit_code = RunCount(*o);
      });
}

void AddVerifyCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<FilesOptions>();
  AddFilesCommand(app, "verify",
                  "Check every record's length and data CRC. Exit status 0 only if all hold; "
                  "else names the first bad record of each file, its offset and number",
                  o)
      ->callback([o, exit_code] {
        if (ExpandRemotePatterns("verify", &o->files, exit_code)) *exit_code = RunVerify(*o);
      });
}

void AddIndexCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<FilesOptions>();
  AddFilesCommand(app, "index",
                  "Write FILE.idx for each file: \"offset length\" per record, the format of "
                  "DALI's tfrecord2idx, then a trailer naming the file's size and CRC-32C (checks "
                  "CRCs while reading)",
                  o)
      ->callback([o, exit_code] {
        if (ExpandRemotePatterns("index", &o->files, exit_code)) *exit_code = RunIndex(*o);
      });
}

}  // namespace sluice::tools
