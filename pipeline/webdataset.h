// WebDatasetDataset: the samples of WebDataset tar shards (.tar, .tar.gz),
// one element per sample, a format on the one file source
// (pipeline/file_source.h) which gives it the rotation of open files,
// parallel reads ahead, restore, FILE and RECORD sharding, random access
// with an index and ignore_errors.
//
//   auto ds = sluice::WebDatasetDataset({"shard-000000.tar", ...},
//                                       {.extensions = {"jpg", "cls"}});
//   // elements: (__key__: string[], jpg: string[], cls: string[])
//
// A sample is the run of consecutive tar members sharing a key (the path up
// to the first dot of the base name), as the webdataset library groups them
// (records/tar_reader.h). Its element has one named string scalar per asked
// extension (lower-cased, as webdataset does: "JPG" members give "jpg"),
// each a view into the read buffer (no copy), and "__key__" first. Other
// members are dropped. A sample without an asked extension is an error
// naming the file, the offset and the key (InvalidArgument; ignore_errors
// skips it), or, with missing = kEmpty, an empty string.
//
// Random access: an uncompressed shard with a valid SHARD.tar.idx
// (`sluice index`, records/tar_index.h) gives exact cardinality,
// global_shuffle and record sharding; otherwise shards are read in order.
//
// Thread-safety: Dataset values; see pipeline/dataset.h.
#ifndef SLUICE_PIPELINE_WEBDATASET_H_
#define SLUICE_PIPELINE_WEBDATASET_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sluice/core/result.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/pipeline/file_source.h"

namespace sluice {

struct WebDatasetOptions {
  // The components to produce, by extension ("jpg", "seg.png"). Empty: the
  // extensions of the first sample of the first file, in their order.
  std::vector<std::string> extensions;
  // Bytes per read (default 1 MiB); a larger sample gets a buffer its size.
  int64_t buffer_size = 1 << 20;
  // As TFRecordDatasetOptions::num_parallel_reads: files open at once,
  // interleaved sample by sample; more than 1 also reads ahead in parallel.
  int64_t num_parallel_reads = 1;
  // Use SHARD.tar.idx where present (random access, exact cardinality).
  bool use_index = true;
  // The largest sample accepted (headers and padded payloads, default
  // 256 MiB): a larger one is DataLoss naming file and offset, before
  // anything is allocated for it, and is skipped.
  int64_t max_sample_size = int64_t{256} << 20;
  // A sample without an asked extension: an error, or an empty string.
  enum class Missing { kError, kEmpty };
  Missing missing = Missing::kError;
  std::string name;
};

Dataset WebDatasetDataset(std::vector<std::string> files, WebDatasetOptions options = {});
// For interleave over list_files: maps a file name element to its samples.
// Give `extensions` (otherwise each file's first sample decides its own).
DatasetFn webdataset(WebDatasetOptions options = {});

// The format itself, for tools (`sluice cat`): `files` (the first one)
// decides the extensions when options.extensions is empty. NotFound /
// DataLoss from reading that first sample; InvalidArgument for bad options.
Result<std::shared_ptr<const FileFormat>> WebDatasetFormat(WebDatasetOptions options,
                                                           const std::vector<std::string>& files);

}  // namespace sluice

#endif  // SLUICE_PIPELINE_WEBDATASET_H_
