// `sluice cat FILE...`: prints the records of TFRecord files, and of the
// other record formats (record_formats.h).
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "commands.h"
#include "example_json.h"
#include "record_formats.h"

namespace sluice::tools {
namespace {

struct CatOptions {
  std::vector<std::string> files;
  std::string compression = "auto";
  bool json = false;
  std::string type = "example";
  std::string format = "escaped";
  uint64_t skip = 0;
  int64_t limit = -1;
  FormatArgs input;
};

// Python-bytes-like escaping: printable ASCII as is, the rest as \xNN.
void AppendEscaped(std::string_view data, std::string* out) {
  static const char kHex[] = "0123456789abcdef";
  for (unsigned char c : data) {
    switch (c) {
      case '\\': *out += "\\\\"; break;
      case '\n': *out += "\\n"; break;
      case '\r': *out += "\\r"; break;
      case '\t': *out += "\\t"; break;
      default:
        if (c >= 0x20 && c < 0x7f) {
          *out += static_cast<char>(c);
        } else {
          *out += "\\x";
          *out += kHex[c >> 4];
          *out += kHex[c & 15];
        }
    }
  }
}

void AppendHex(std::string_view data, std::string* out) {
  static const char kHex[] = "0123456789abcdef";
  for (unsigned char c : data) {
    *out += kHex[c >> 4];
    *out += kHex[c & 15];
  }
}

int RunCat(const CatOptions& o) {
  const ProtoType type = ParseProtoType(o.type).value_or(ProtoType::kExample);
  int64_t printed = 0;
  std::string line;
  for (const std::string& file : o.files) {
    FormatArgs input = o.input;
    input.compression = o.compression;
    Result<InputFormat> format = InputFormatFor(file, input);
    if (!format.ok()) return Fail("cat", format.status());
    if (o.json && format->name != "tfrecord") {
      return Fail("cat", Status::InvalidArgument(file +
                                                 ": --json prints tf.train.Example "
                                                 "records; this is a " +
                                                 format->name + " file"));
    }
    Result<std::unique_ptr<RecordReader>> reader =
        format->open ? format->open(file) : [&]() -> Result<std::unique_ptr<RecordReader>> {
      SLUICE_ASSIGN_OR_RETURN(TFRecordReader r,
                              TFRecordReader::Open(file, ReaderOptions(o.compression)));
      return std::unique_ptr<RecordReader>(std::make_unique<TFRecordReader>(std::move(r)));
    }();
    if (!reader.ok()) return Fail("cat", reader.status());
    while (o.limit < 0 || printed < o.limit) {
      Result<std::optional<Record>> r = (*reader)->Next();
      if (!r.ok()) return Fail("cat", r.status());
      if (!r->has_value()) break;
      const Record& rec = **r;
      if (rec.number < o.skip) continue;
      line.clear();
      std::string shown;
      std::string_view data = rec.data;
      if (format->show) {
        Result<std::string> text = format->show(rec, file);
        if (!text.ok()) return Fail("cat", text.status());
        shown = std::move(*text);
        data = shown;
      }
      if (o.json) {
        Result<std::string> json = SerializedToJson(rec.data, type);
        if (!json.ok()) {
          return Fail("cat", json.status().WithContext(fmt::format("{}: record {} at offset {}",
                                                                   file, rec.number, rec.offset)));
        }
        line = std::move(*json);
      } else if (o.format == "hex") {
        AppendHex(data, &line);
      } else if (o.format == "raw") {
        line.assign(data);
      } else {
        AppendEscaped(data, &line);
      }
      line += '\n';
      std::fwrite(line.data(), 1, line.size(), stdout);
      ++printed;
    }
  }
  return 0;
}

}  // namespace

void AddCatCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<CatOptions>();
  CLI::App* cmd = app.add_subcommand(
      "cat", "Print the records of TFRecord files (or text, CSV... files), one per line");
  cmd->add_option("files", o->files, "Record files; - (or a pipe) reads standard input")
      ->required()
      ->check(ExistingFileOrStdin());
  cmd->add_option("--compression,-c", o->compression, "auto detects gzip and zlib streams")
      ->check(CLI::IsMember(kCompressionChoices))
      ->capture_default_str();
  cmd->add_flag("--json,-j", o->json,
                "Print each record as protobuf's canonical JSON of a tf.train.Example");
  cmd->add_option("--type", o->type, "With --json: example or sequence_example")
      ->check(CLI::IsMember({"example", "sequence_example"}))
      ->capture_default_str();
  cmd->add_option("--format", o->format,
                  "Without --json: escaped (printable bytes, others as \\xNN), hex, or raw")
      ->check(CLI::IsMember({"escaped", "hex", "raw"}))
      ->capture_default_str();
  AddFormatOptions(cmd, &o->input, "--file-format,-F");
  cmd->add_option("--skip", o->skip, "Skip the first N records of each file");
  cmd->add_option("--limit,-n", o->limit, "Print at most N records in all");
  cmd->callback([o, exit_code] {
    if (ExpandRemotePatterns("cat", &o->files, exit_code)) *exit_code = RunCat(*o);
  });
}

}  // namespace sluice::tools
