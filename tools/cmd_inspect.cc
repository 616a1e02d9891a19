// `sluice count`, `sluice verify` and `sluice index`: whole-file passes over
// TFRecord files.
#include <memory>

#include <fmt/format.h>

#include "commands.h"
#include "progress.h"
#include "sluice/records/record_index.h"

namespace sluice::tools {
namespace {

struct FilesOptions {
  std::vector<std::string> files;
  std::string compression = "auto";
};

CLI::App* AddFilesCommand(CLI::App& app, const char* name, const char* help,
                          const std::shared_ptr<FilesOptions>& o) {
  CLI::App* cmd = app.add_subcommand(name, help);
  cmd->add_option("files", o->files, "TFRecord files")->required()->check(CLI::ExistingFile);
  cmd->add_option("--compression,-c", o->compression, "auto detects gzip and zlib streams")
      ->check(CLI::IsMember(kCompressionChoices))
      ->capture_default_str();
  return cmd;
}

int RunCount(const FilesOptions& o) {
  uint64_t total = 0;
  for (const std::string& file : o.files) {
    Result<uint64_t> n = CountRecords(file, ReaderOptions(o.compression));
    if (!n.ok()) return Fail("count", n.status());
    fmt::print("{}\t{}\n", *n, file);
    total += *n;
  }
  if (o.files.size() > 1) fmt::print("{}\ttotal\n", total);
  return 0;
}

struct VerifyResult {
  uint64_t records = 0;
  uint64_t bytes = 0;
  uint64_t corrupt = 0;
  Status first_error;
};

// Reads every record, checking both CRCs; continues past records whose data
// checksum fails (the framing is intact) and stops at anything else.
VerifyResult VerifyFile(const std::string& file, const TFRecordReaderOptions& opts) {
  VerifyResult v;
  Result<TFRecordReader> reader = TFRecordReader::Open(file, opts);
  if (!reader.ok()) {
    v.first_error = reader.status();
    return v;
  }
  Progress progress("verifying " + file);
  while (true) {
    const uint64_t before = reader->next_record_number();
    Result<std::optional<Record>> r = reader->Next();
    if (r.ok() && !r->has_value()) break;
    if (!r.ok()) {
      ++v.corrupt;
      if (v.first_error.ok()) v.first_error = r.status();
      if (reader->next_record_number() == before) break;  // cannot go on
      continue;
    }
    ++v.records;
    v.bytes += (*r)->data.size();
    progress.Update(v.records, v.bytes);
  }
  return v;
}

int RunVerify(const FilesOptions& o) {
  int bad_files = 0;
  for (const std::string& file : o.files) {
    VerifyResult v = VerifyFile(file, ReaderOptions(o.compression));
    if (v.first_error.ok()) {
      fmt::print("{}: OK, {} records, {} bytes\n", file, v.records, v.bytes);
    } else {
      ++bad_files;
      fmt::print(stderr, "{}: CORRUPT after {} good records: {}\n", file, v.records,
                 v.first_error.ToString());
      if (v.corrupt > 1) fmt::print(stderr, "{}: {} corrupt records in all\n", file, v.corrupt);
    }
  }
  if (bad_files > 0 && o.files.size() > 1) {
    fmt::print(stderr, "{} of {} files failed verification\n", bad_files, o.files.size());
  }
  return bad_files == 0 ? 0 : 1;
}

int RunIndex(const FilesOptions& o) {
  for (const std::string& file : o.files) {
    Result<RecordIndex> index = RecordIndex::Build(file, ReaderOptions(o.compression));
    if (!index.ok()) return Fail("index", index.status());
    const std::string path = RecordIndex::PathFor(file);
    Status s = index->Save(path);
    if (!s.ok()) return Fail("index", s);
    fmt::print("{}: {} records\n", path, index->size());
  }
  return 0;
}

}  // namespace

void AddCountCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<FilesOptions>();
  AddFilesCommand(app, "count",
                  "Count the records of TFRecord files (exactly, from FILE.idx when it is "
                  "present and current; else by reading, checking CRCs)",
                  o)
      ->callback([o, exit_code] { *exit_code = RunCount(*o); });
}

void AddVerifyCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<FilesOptions>();
  AddFilesCommand(app, "verify",
                  "Check every record's length and data CRC. Exit status 0 only if all hold; "
                  "else names the first bad record of each file, its offset and number",
                  o)
      ->callback([o, exit_code] { *exit_code = RunVerify(*o); });
}

void AddIndexCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<FilesOptions>();
  AddFilesCommand(app, "index",
                  "Write FILE.idx for each file: \"offset length\" per record, the format of "
                  "DALI's tfrecord2idx (checks CRCs while reading)",
                  o)
      ->callback([o, exit_code] { *exit_code = RunIndex(*o); });
}

}  // namespace sluice::tools
