// libFuzzer target for the CSV reader (records spanning quoted line breaks),
// the record splitter and the number parsers; the text line reader too.
//
// The first input byte picks the options (delimiter, quoting, header,
// compression, buffer size); the rest is the file. Every outcome must be
// records, a clean end, or an error Status naming the file: never a crash,
// a hang, or an allocation larger than the input can justify.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sluice/records/csv.h"
#include "sluice/records/csv_reader.h"
#include "sluice/records/text_line_reader.h"

namespace {

void CheckError(const sluice::Status& s) {
  if (s.code() != sluice::StatusCode::kInvalidArgument &&
      s.code() != sluice::StatusCode::kDataLoss) {
    __builtin_trap();
  }
  if (s.message().find("fuzz") == std::string::npos) __builtin_trap();
}

// Reads every record; returns them (as copies).
template <typename Reader>
std::vector<std::string> Drain(Reader& reader) {
  std::vector<std::string> out;
  for (int i = 0; i < 100000; ++i) {
    const uint64_t before = reader.next_record_number();
    auto r = reader.Next();
    if (r.ok() && !r->has_value()) break;
    if (r.ok()) {
      if ((*r)->number != before) __builtin_trap();
      out.emplace_back((*r)->data);
      continue;
    }
    CheckError(r.status());
    if (reader.next_record_number() == before) break;  // the reader stays: the file ends
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  const std::string bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  constexpr char kDelims[] = {',', '\t', ';', ' '};
  constexpr sluice::Compression kCompressions[] = {
      sluice::Compression::kNone, sluice::Compression::kAuto, sluice::Compression::kGzip,
      sluice::Compression::kZlib};

  sluice::CsvReaderOptions opts;
  opts.dialect.field_delim = kDelims[mode & 3];
  opts.dialect.use_quote_delim = (mode & 4) == 0;
  opts.header = (mode & 8) != 0;
  opts.compression = kCompressions[(mode >> 4) & 3];
  opts.buffer_size = (mode & 64) ? 4096 : 1 << 16;
  opts.max_record_size = 1 << 14;

  auto reader = sluice::OpenCsvReader(sluice::NewMemoryFile("fuzz", bytes), opts);
  if (reader.ok()) {
    std::vector<sluice::CsvField> fields;
    std::string scratch;
    sluice::CsvSyntaxError error;
    for (const std::string& record : Drain(**reader)) {
      if (!sluice::SplitCsvRecord(record, opts.dialect, &fields, &scratch, &error)) {
        if (error.column == 0 || error.column > record.size() + 1) __builtin_trap();
        continue;
      }
      if (fields.empty()) __builtin_trap();
      std::string joined;
      for (const sluice::CsvField& f : fields) {
        if (f.text.size() > record.size()) __builtin_trap();
        int32_t i32;
        int64_t i64;
        float f32;
        double f64;
        (void)sluice::ParseCsvNumber(f.text, &i32);
        (void)sluice::ParseCsvNumber(f.text, &i64);
        (void)sluice::ParseCsvNumber(f.text, &f32);
        (void)sluice::ParseCsvNumber(f.text, &f64);
        if (!joined.empty() || &f != &fields.front()) joined += opts.dialect.field_delim;
        joined += f.text;
      }
      // Without quoting, splitting loses nothing.
      if (!opts.dialect.use_quote_delim && joined != record) __builtin_trap();
    }
  }

  sluice::TextLineReaderOptions text_opts;
  text_opts.compression = opts.compression;
  text_opts.buffer_size = opts.buffer_size;
  text_opts.max_line_size = 1 << 14;
  auto lines = sluice::OpenTextLineReader(sluice::NewMemoryFile("fuzz", bytes), text_opts);
  if (lines.ok()) {
    for (const std::string& line : Drain(**lines)) {
      if (line.find('\n') != std::string::npos || line.find('\r') != std::string::npos) {
        __builtin_trap();
      }
    }
  }
  return 0;
}
