// NumpyDataset: the rows of NumPy arrays (.npy files, .npz members) as
// elements, on the file source (file_source.h).
//
// Element i of a file is row i along the first axis: a numeric tensor of
// the row's shape that views the read buffer (no copy beyond the read).
// From an .npz, the members in `keys` (all members if empty; their first
// dimensions must agree) are named components of one element. Every file
// must hold the same element types and row shapes as the first.
//
// The token-corpus case: with sequence_length L > 0, a 1-D array of n
// tokens gives (n - 1) / L elements, element i = tokens[i*L, i*L + L + 1)
// (the input and the shifted target of a language model, as nanoGPT and
// Megatron read them; the last partial window dropped).
//
// Every file is read at random (records at computable offsets): the
// cardinality is exact, and global_shuffle, RECORD sharding and restore
// pick positions exactly. In order, runs of adjacent rows are read with
// one pread of about buffer_size bytes.
//
// Element types: bool, uint8, int32, int64, float16, float32, float64 as
// they are (big-endian files are swapped in the read buffer); int8, int16,
// uint16 (token ids) become int32 and uint32 becomes int64, copied (sluice
// has no narrower integer dtypes). Other types, Fortran order, object and
// structured arrays are InvalidArgument naming the file (records/npy.h).
//
// .npz: stored members (np.savez) are read in place in the archive.
// Deflated members (np.savez_compressed) are inflated into memory when the
// dataset is made (up to max_inflated_bytes each) and kept as long as it is.
//
// Files are read with pread through core/file.h, not mmap (a file cut
// short under an mmap is a SIGBUS; a pread is an error naming the file).
//
// Thread-safety: the format is immutable and shared.
#ifndef SLUICE_PIPELINE_NUMPY_DATASET_H_
#define SLUICE_PIPELINE_NUMPY_DATASET_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sluice/pipeline/dataset.h"
#include "sluice/pipeline/file_source.h"

namespace sluice {

struct NumpyDatasetOptions {
  // .npz members read, as named components in this order (empty: all).
  // Must be empty for .npy files.
  std::vector<std::string> keys;
  // > 0: windows of sequence_length + 1 tokens of a 1-D array (above).
  int64_t sequence_length = 0;
  // A deflated .npz member larger than this (inflated) is ResourceExhausted.
  int64_t max_inflated_bytes = int64_t{2} << 30;
  // Bytes per read (default 1 MiB).
  int64_t buffer_size = 1 << 20;
  // As TFRecordDatasetOptions::num_parallel_reads.
  int64_t num_parallel_reads = 1;
  std::string name;
};

// The format whose element spec is `reference_file`'s, for FileSourceDataset
// and the CLI. Errors name the file.
Result<std::shared_ptr<const FileFormat>> NumpyFormat(const std::string& reference_file,
                                                      const NumpyDatasetOptions& options = {});

// The spec is taken from filenames[0] when the dataset is made; an error
// there is the dataset's error.
Dataset NumpyDataset(std::vector<std::string> filenames, NumpyDatasetOptions options = {});
// For interleave over list_files: maps a file name element to its rows.
DatasetFn numpy_arrays(NumpyDatasetOptions options = {});

}  // namespace sluice

#endif  // SLUICE_PIPELINE_NUMPY_DATASET_H_
