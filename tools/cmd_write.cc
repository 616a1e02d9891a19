// `sluice write FILE`: writes Examples given as JSON lines on stdin.
#include <cstdio>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "commands.h"
#include "example_json.h"
#include "interrupt.h"
#include "plural.h"
#include "progress.h"
#include "sluice/core/file.h"
#include "sluice/records/tfrecord_writer.h"

namespace sluice::tools {
namespace {

struct WriteOptions {
  std::string file;
  std::string compression = "auto";
  std::string type = "example";
  bool index = false;
  bool sync = false;
};

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// auto: by file name, as tf users name them (.gz / .gzip, .zz / .zlib).
Compression CompressionFor(const WriteOptions& o) {
  if (o.compression != "auto") return ParseCompression(o.compression).value_or(Compression::kNone);
  if (EndsWith(o.file, ".gz") || EndsWith(o.file, ".gzip")) return Compression::kGzip;
  if (EndsWith(o.file, ".zz") || EndsWith(o.file, ".zlib")) return Compression::kZlib;
  return Compression::kNone;
}

int RunWrite(const WriteOptions& o) {
  const ProtoType type = ParseProtoType(o.type).value_or(ProtoType::kExample);
  TFRecordWriterOptions wopts;
  wopts.compression = CompressionFor(o);
  wopts.write_index = o.index;
  wopts.sync_on_close = o.sync;
  if (o.file != "-") {
    // What earlier runs killed before they could clean up left (never a
    // live writer's file: core/file.h).
    Result<size_t> removed = RemoveAbandonedTemporaries(o.file);
    if (removed.ok() && *removed > 0) {
      fmt::print(stderr, "removed {} of {} left by a killed run\n",
                 Plural(*removed, "temporary file", "temporary files"), o.file);
    }
  }
  // Before the temporary file exists: a SIGINT from then on is seen by the
  // loop below, which drops the writer (and so its temporary file).
  InstallInterruptHandler();
  Result<TFRecordWriter> writer = TFRecordWriter::Open(o.file, wopts);
  if (!writer.ok()) return Fail("write", writer.status());
  Progress progress("writing " + o.file);
  std::string line;
  uint64_t line_no = 0;
  while (!Interrupted() && std::getline(std::cin, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    Result<std::string> bytes = JsonToSerialized(line, type);
    if (!bytes.ok()) {
      // The writer is dropped without Close(): nothing is published.
      return Fail("write", bytes.status().WithContext(fmt::format("stdin line {}", line_no)));
    }
    Status s = writer->Write(*bytes);
    if (!s.ok()) return Fail("write", s);
    progress.Update(writer->records_written(), writer->bytes_written());
  }
  if (Interrupted()) {
    // The writer goes without Close(): its temporary file is removed and
    // an existing FILE is left as it was.
    progress.Done();
    fmt::print(stderr, "sluice write: interrupted after {} lines; {} was not written\n", line_no,
               o.file);
    return InterruptExitCode();
  }
  if (std::cin.bad()) return Fail("write", Status::Unavailable("error reading stdin"));
  Status s = writer->Close();
  if (!s.ok()) return Fail("write", s);
  progress.Done();
  // With FILE "-" the records are standard output: the summary goes to stderr.
  std::FILE* report = o.file == "-" ? stderr : stdout;
  fmt::print(report, "wrote {} ({} bytes, {}) to {}\n",
             Plural(writer->records_written(), "record", "records"), writer->bytes_written(),
             CompressionName(wopts.compression), o.file == "-" ? "standard output" : o.file);
  return 0;
}

}  // namespace

void AddWriteCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<WriteOptions>();
  CLI::App* cmd = app.add_subcommand(
      "write",
      "Write a TFRecord file of Examples read from stdin as JSON, one per line "
      "(the format `sluice cat --json` prints). The file appears only when complete.");
  cmd->add_option("file", o->file,
                  "Output TFRecord file; - writes the records to standard output (as a pipe "
                  "or FIFO is written: in place, without --index)")
      ->required();
  cmd->add_option("--compression,-c", o->compression,
                  "auto picks gzip for .gz/.gzip, zlib for .zz/.zlib, else none")
      ->check(CLI::IsMember(kCompressionChoices))
      ->capture_default_str();
  cmd->add_option("--type", o->type, "example or sequence_example")
      ->check(CLI::IsMember({"example", "sequence_example"}))
      ->capture_default_str();
  cmd->add_flag("--index", o->index, "Also write FILE.idx");
  cmd->add_flag("--sync", o->sync, "fsync the file before reporting success");
  cmd->callback([o, exit_code] { *exit_code = RunWrite(*o); });
}

}  // namespace sluice::tools
