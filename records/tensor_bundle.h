// TensorFlow tensor bundles: the checkpoint format of tf.train.Checkpoint
// and tf.compat.v1.train.Saver (V2).
//
// A bundle under `prefix` is two files: `prefix.index`, a LevelDB-format
// table mapping each tensor name to a BundleEntryProto (dtype, shape, where
// its bytes are, their masked CRC32C), and `prefix.data-00000-of-00001`
// with the tensors' bytes. The format is described in docs/formats.md.
//
// BundleWriter writes one shard; BundleReader reads bundles with any number
// of shards, written by TensorFlow or by BundleWriter. Supported dtypes are
// sluice's: bool, uint8, int32, int64, float16, bfloat16, float32, float64
// and string (TensorFlow's DT_BOOL, DT_UINT8, DT_INT32, DT_INT64, DT_HALF,
// DT_BFLOAT16, DT_FLOAT, DT_DOUBLE, DT_STRING). Entries of other dtypes are
// listed by Keys() and described by Entry(), but Lookup() rejects them, as it
// does partitioned (sliced) variables. Tensors are stored little-endian.
#ifndef SLUICE_RECORDS_TENSOR_BUNDLE_H_
#define SLUICE_RECORDS_TENSOR_BUNDLE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/core/file.h"
#include "sluice/core/result.h"
#include "sluice/core/shape.h"
#include "sluice/core/tensor.h"

namespace sluice {

// "prefix.index" and "prefix.data-SSSSS-of-NNNNN" (shard, num_shards).
std::string BundleIndexFilename(std::string_view prefix);
std::string BundleDataFilename(std::string_view prefix, int shard, int num_shards);

// TensorFlow's DataType enum value for `dtype` (DT_FLOAT = 1, ...), and back
// (std::nullopt for TensorFlow types sluice has no DType for).
int TFDataType(DType dtype);
std::optional<DType> DTypeFromTFDataType(int tf_dtype);

// What the index says about one tensor.
struct BundleEntry {
  int tf_dtype = 0;            // TensorFlow's DataType enum value
  std::optional<DType> dtype;  // empty if sluice has no such dtype
  Shape shape;
  int shard_id = 0;
  int64_t offset = 0;          // in the data file
  int64_t size = 0;            // bytes in the data file
  uint32_t masked_crc32c = 0;  // as stored (crc32c::Unmask to compare)
  int num_slices = 0;          // > 0 for a partitioned variable
};

// Writes a bundle. Tensors' bytes stream to a temporary data file as they
// are added; Finish() writes the index to a temporary file too and only then
// renames both over `prefix`'s files (data first, then index), so an error
// or a crash before that point leaves any earlier bundle under `prefix`
// untouched. If the index rename fails after the data rename, the earlier
// data file is restored (from a hard link taken before). Only a crash
// between the two renames can pair an old index with new data, which the
// reader then reports as DataLoss (checksum mismatch). Destroying a writer
// without Finish() removes its temporary files. Not thread-safe.
struct BundleWriterOptions {
  // Finish() fsyncs both files before their renames and the folder after,
  // so a bundle Finish() published survives a power loss.
  bool sync = false;
};

class BundleWriter {
 public:
  // Creates the temporary data file beside `prefix` (its folder must exist).
  static Result<BundleWriter> Create(const std::string& prefix,
                                     const BundleWriterOptions& options = {});
  BundleWriter(BundleWriter&&) noexcept;
  BundleWriter& operator=(BundleWriter&&) noexcept;
  ~BundleWriter();

  // Appends `tensor` under `key`. InvalidArgument for the empty key (the
  // header's), a key added before, or after Finish(). Keys may come in any
  // order; the index lists them sorted. An error sticks: Finish() then
  // fails and publishes nothing.
  Status Add(std::string_view key, const Tensor& tensor);
  // Publishes the bundle. Returns the first error of Add() if any.
  Status Finish();

 private:
  struct Impl;
  explicit BundleWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Reads a bundle. Open() reads and checks the whole index; data files are
// opened on first use. Thread-safe: Lookup() may be called concurrently.
class BundleReader {
 public:
  // NotFound if `prefix.index` does not exist; DataLoss if it is corrupt.
  static Result<BundleReader> Open(const std::string& prefix);
  // Reads the index from `index` and shard 0's bytes from `data` (for
  // single-shard bundles held in memory: tests, fuzzing).
  static Result<BundleReader> Open(std::unique_ptr<ReadableFile> index,
                                   std::unique_ptr<ReadableFile> data);
  BundleReader(BundleReader&&) noexcept;
  BundleReader& operator=(BundleReader&&) noexcept;
  ~BundleReader();

  // Every tensor name, sorted bytewise (the header entry is not included).
  std::vector<std::string> Keys() const;
  // The header's shard count.
  int num_shards() const;
  // NotFound for an unknown key; DataLoss if its entry is malformed.
  Result<BundleEntry> Entry(std::string_view key) const;
  // The tensor under `key`, its bytes checked against the stored CRC32C.
  // NotFound for an unknown key; DataLoss for corrupt or truncated data;
  // InvalidArgument for an unsupported dtype or a sliced entry.
  Result<Tensor> Lookup(std::string_view key) const;

 private:
  struct Impl;
  explicit BundleReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice

#endif  // SLUICE_RECORDS_TENSOR_BUNDLE_H_
