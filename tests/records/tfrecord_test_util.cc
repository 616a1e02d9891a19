#include "tfrecord_test_util.h"

#include <gtest/gtest.h>

#include "sluice/records/tfrecord_writer.h"
#include "test_util.h"

namespace sluice::testing {

std::string GoldenPayload(int i, size_t length) {
  std::string s(length, '\0');
  for (size_t j = 0; j < length; ++j) s[j] = static_cast<char>((i * 31 + j * 7) & 0xff);
  return s;
}

const std::vector<size_t>& GoldenLengths() {
  static const std::vector<size_t> lengths = {0, 1, 11, 100, 1000, 65536, 3, 70000};
  return lengths;
}

std::string WriteRecordsToBytes(const std::string& dir, const std::vector<std::string>& records,
                                Compression compression) {
  const std::string path = dir + "/w-" + std::string(CompressionName(compression)) + ".tfrecord";
  TFRecordWriterOptions opts;
  opts.compression = compression;
  Result<TFRecordWriter> w = TFRecordWriter::Open(path, opts);
  EXPECT_TRUE(w.ok()) << w.status();
  if (!w.ok()) return "";
  for (const std::string& r : records) EXPECT_TRUE(w->Write(r).ok());
  EXPECT_TRUE(w->Close().ok());
  return ReadFileOrDie(path);
}

}  // namespace sluice::testing
