// Helpers for the text and CSV tests: compressing bytes as gzip or zlib
// streams (what `gzip` and zlib.compress write).
#ifndef SLUICE_TESTS_RECORDS_TEXT_TEST_UTIL_H_
#define SLUICE_TESTS_RECORDS_TEXT_TEST_UTIL_H_

#include <zlib.h>

#include <string>
#include <string_view>

#include "sluice/records/compression.h"

namespace sluice::testing {

// `data` as one gzip member or zlib stream (kNone: as is).
inline std::string Compress(std::string_view data, Compression c) {
  if (c == Compression::kNone) return std::string(data);
  z_stream s{};
  deflateInit2(&s, Z_DEFAULT_COMPRESSION, Z_DEFLATED, c == Compression::kGzip ? 31 : 15, 8,
               Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&s, data.size()) + 32, '\0');
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  s.avail_in = static_cast<uInt>(data.size());
  s.next_out = reinterpret_cast<Bytef*>(out.data());
  s.avail_out = static_cast<uInt>(out.size());
  deflate(&s, Z_FINISH);
  out.resize(s.total_out);
  deflateEnd(&s);
  return out;
}

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_RECORDS_TEXT_TEST_UTIL_H_
