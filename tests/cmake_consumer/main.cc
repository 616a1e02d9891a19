// Writes and reads back one record through an installed sluice.
#include <cstdio>
#include <string>

#include "sluice/records/tfrecord_reader.h"
#include "sluice/records/tfrecord_writer.h"

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "consumer.tfrecord";
  sluice::TFRecordWriterOptions opts;
  opts.compression = sluice::Compression::kGzip;
  auto writer = sluice::TFRecordWriter::Open(path, opts);
  if (!writer.ok() || !writer->Write("hello").ok() || !writer->Close().ok()) return 1;
  auto reader = sluice::TFRecordReader::Open(path);
  if (!reader.ok()) return 1;
  auto record = reader->Next();
  if (!record.ok() || !*record || (*record)->data != "hello") return 1;
  std::printf("consumer ok\n");
  return 0;
}
