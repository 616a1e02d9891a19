// CSV records (RFC 4180, tf.data's CsvDataset dialect): one record split
// into its fields, and a field's text read as a number.
//
//  - Fields are separated by `field_delim`. With use_quote_delim a field
//    that starts with '"' is quoted: it ends at the next lone '"', holds
//    delimiters, line breaks and doubled quotes ("" for one '"'), and must
//    be followed by the delimiter or the end of the record; a '"' inside an
//    unquoted field is an error. Without it quotes are ordinary characters.
//  - An empty record is one empty field.
//  - Numbers may have spaces and tabs around them; integers are decimal
//    with an optional sign; floats are what strtod reads (hex floats, inf,
//    nan), out-of-range ones becoming inf or 0 as strtod makes them.
//
// Thread-safe: the functions share no state.
#ifndef SLUICE_RECORDS_CSV_H_
#define SLUICE_RECORDS_CSV_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/core/status.h"

namespace sluice {

struct CsvDialect {
  char field_delim = ',';
  bool use_quote_delim = true;
};

// InvalidArgument unless the delimiter can separate fields (not a quote, a
// line break or NUL... as tf.data: any one character but those).
Status CheckCsvDialect(const CsvDialect& dialect);

struct CsvField {
  // The field's text, quotes undone: a view into the record, or into the
  // caller's scratch string.
  std::string_view text;
  // Line breaks inside the record before the field (in quoted fields).
  uint32_t line_offset = 0;
};

struct CsvSyntaxError {
  size_t column = 0;         // 1-based
  uint32_t line_offset = 0;  // as CsvField's
  std::string message;
};

// Splits `record` (without its line break) into *fields (cleared first).
// Quoted fields with doubled quotes are undone into *scratch (cleared
// first; it never reallocates while splitting, so the views stay valid
// until its next use). False, with *error set, for a malformed record.
bool SplitCsvRecord(std::string_view record, const CsvDialect& dialect,
                    std::vector<CsvField>* fields, std::string* scratch, CsvSyntaxError* error);

// A field's text as a number: false if it is not one of that type (or out
// of an integer type's range).
bool ParseCsvNumber(std::string_view text, int32_t* out);
bool ParseCsvNumber(std::string_view text, int64_t* out);
bool ParseCsvNumber(std::string_view text, float* out);
bool ParseCsvNumber(std::string_view text, double* out);

}  // namespace sluice

#endif  // SLUICE_RECORDS_CSV_H_
