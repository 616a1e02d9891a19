// Reading the formats data is already in, with tf.data's names, in C++:
// a text log (TextLineDataset), a CSV table (CsvDataset: typed columns, a
// required one, an error naming file, line and column), WebDataset tar
// shards (WebDatasetDataset, listed with a brace pattern, indexed, shuffled
// globally) and fixed-length records (FixedLengthRecordDataset, CIFAR's
// binary layout). Each file is written first, into DIR.
//
//   build/samples/file_formats [DIR]     (default: ./file-formats-demo)
//
// Python, for comparison (python/samples/file_formats.py):
//   for line in tf.data.TextLineDataset("server.log"): ...
//   tf.data.experimental.CsvDataset("passengers.csv", [tf.int32, tf.float32, ""], header=True)
#include <cstdio>
#include <filesystem>
#include <string>

#include "command_line.h"
#include "sluice/core/file.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/pipeline/fixed_length_record_dataset.h"
#include "sluice/pipeline/text_datasets.h"
#include "sluice/pipeline/webdataset.h"
#include "sluice/records/tar_index.h"
#include "sluice/records/tar_writer.h"

namespace {

using sluice::Dataset;
using sluice::Element;
using sluice::Status;

Status Write(const std::string& path, std::string_view bytes) {
  SLUICE_ASSIGN_OR_RETURN(auto out, sluice::OutputFile::Create(path));
  SLUICE_RETURN_IF_ERROR(out->Append(bytes));
  return out->Commit();  // a temporary name until now
}

Status TextAndCsv(const std::string& dir) {
  SLUICE_RETURN_IF_ERROR(Write(dir + "/server.log", "GET /a 200\r\nGET /b 404\nPOST /c 200\n"));
  int lines = 0;
  for (const Element& e : sluice::TextLineDataset({dir + "/server.log"})) {
    if (lines++ == 0)
      std::printf("text: the first line '%s'\n",
                  std::string(e[0].scalar<std::string_view>()).c_str());
  }
  std::printf("text: %d lines\n", lines);

  SLUICE_RETURN_IF_ERROR(Write(dir + "/passengers.csv",
                               "age,fare,name\n22,7.25,\"Braund, Owen\"\n38,,Cumings\n26,7.92,\n"
                               "x,8.05,Allen\n"));
  using sluice::CsvDefault;
  // age is required; fare defaults to 0; name to "?".
  Dataset rows = sluice::CsvDataset({dir + "/passengers.csv"},
                                    {CsvDefault::Required(sluice::DType::kInt32),
                                     CsvDefault::Value(0.0f), CsvDefault::Value(std::string("?"))},
                                    {.header = true});
  auto it = rows.iterator();
  if (!it.ok()) return it.status();
  for (;;) {
    auto row = it->next();
    if (!row.ok()) {  // "x" is not an int32: the message names file, line and column
      std::printf("csv: %s\n", std::string(row.status().message()).c_str());
      break;
    }
    if (!*row) break;
    const Element& r = **row;
    std::printf("csv: age %d fare %.2f name '%s'\n", r[0].scalar<int32_t>(), r[1].scalar<float>(),
                std::string(r[2].scalar<std::string_view>()).c_str());
  }
  return Status::OK();
}

Status TarShards(const std::string& dir) {
  for (int s = 0; s < 2; ++s) {
    char name[64];
    std::snprintf(name, sizeof(name), "/shard-%06d.tar", s);
    SLUICE_ASSIGN_OR_RETURN(auto tar, sluice::TarWriter::Create(dir + name));
    for (int i = 0; i < 4; ++i) {
      const std::string key = "sample" + std::to_string(s * 4 + i);
      SLUICE_RETURN_IF_ERROR(tar->Add(key + ".jpg", std::string(100 + i, 'j')));
      SLUICE_RETURN_IF_ERROR(tar->Add(key + ".cls", std::to_string(i % 2)));
    }
    SLUICE_RETURN_IF_ERROR(tar->Close());
    SLUICE_RETURN_IF_ERROR(sluice::BuildAndSaveTarIndex(dir + name).status());
  }
  std::vector<std::string> files;
  for (const Element& f : Dataset::list_files(dir + "/shard-{000000..000001}.tar")) {
    files.emplace_back(f[0].scalar<std::string_view>());
  }
  Dataset samples = sluice::WebDatasetDataset(files, {.extensions = {"jpg", "cls"}});
  std::printf("webdataset: %zu shards, %lld samples, random access: %s\n", files.size(),
              static_cast<long long>(samples.cardinality()),
              samples.random_access() ? "yes" : "no");
  for (const Element& e : samples.global_shuffle({.seed = 7}).take(2)) {
    std::printf("webdataset: %s: jpg %zu bytes, cls %s\n",
                std::string(e[0].scalar<std::string_view>()).c_str(),
                e[1].scalar<std::string_view>().size(),
                std::string(e[2].scalar<std::string_view>()).c_str());
  }
  return Status::OK();
}

Status FixedLength(const std::string& dir) {
  // CIFAR-10's binary layout: a label byte, then 32x32x3 pixels.
  std::string bytes;
  for (int i = 0; i < 5; ++i) {
    bytes += static_cast<char>(i % 10);
    bytes += std::string(3072, static_cast<char>(i));
  }
  SLUICE_RETURN_IF_ERROR(Write(dir + "/data_batch.bin", bytes));
  Dataset records = sluice::FixedLengthRecordDataset({dir + "/data_batch.bin"}, 3073);
  std::printf("fixed-length: %lld records of 3073 bytes\n",
              static_cast<long long>(records.cardinality()));
  return Status::OK();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Reading text, CSV, WebDataset tar and fixed-length files with tf.data's names."};
  std::string dir = "file-formats-demo";
  app.add_option("dir", dir, "Where to write the files")->capture_default_str();
  if (std::optional<int> status = samples::ParseCommandLine(app, argc, argv)) return *status;
  std::filesystem::create_directories(dir);
  for (Status (*part)(const std::string&) : {TextAndCsv, TarShards, FixedLength}) {
    if (Status s = part(dir); !s.ok()) {
      std::fprintf(stderr, "file_formats: %s\n", s.ToString().c_str());
      return 1;
    }
  }
  return 0;
}
