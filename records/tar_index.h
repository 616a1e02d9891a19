// The sample index of a tar shard, and random access to its samples.
//
// A tar file's index is a RecordIndex (record_index.h) in the same text
// format as a TFRecord file's, stored beside it as SHARD.tar.idx: one line
// "<offset> <length>" per WebDataset sample, where offset is the stream
// offset of the sample's first header and length spans its headers and
// padded payloads (folders and other skipped entries between two samples
// belong to the sample before them; the first sample starts at 0), then
// the trailer line "# sluice-index data-bytes=N data-crc32c=X" naming the
// tar file it was made for. It is what wids keeps per shard (each sample's
// place in the file), kept on disk. Keys are not stored: a sample's key is
// read from its headers.
//
// IndexedTarFile gives random access to an uncompressed shard with its
// index: exact cardinality, global_shuffle and record sharding in the
// pipeline. Each read is checked (headers, one key per sample), so an index
// that lies is reported, never trusted.
//
// Thread-safety: the functions share no state; an IndexedTarFile is
// immutable after Open and its const methods may be called from several
// threads at once. Its Records own their bytes.
#ifndef SLUICE_RECORDS_TAR_INDEX_H_
#define SLUICE_RECORDS_TAR_INDEX_H_

#include <memory>
#include <string>

#include "sluice/core/result.h"
#include "sluice/records/record_index.h"
#include "sluice/records/record_source.h"
#include "sluice/records/tar_reader.h"

namespace sluice {

// "<tar_path>.idx"
std::string TarIndexPath(const std::string& tar_path);

// Reads every sample of `tar_path` (.tar or .tar.gz: offsets are in the
// uncompressed stream) and indexes it, with the file's size and CRC-32C.
// The first bad sample is the error (an index describes a readable shard).
Result<RecordIndex> BuildTarIndex(const std::string& tar_path,
                                  const TarReaderOptions& options = {});
// BuildTarIndex, then saved to TarIndexPath(tar_path) under a temporary
// name renamed on success (OutputFile). Returns the index.
Result<RecordIndex> BuildAndSaveTarIndex(const std::string& tar_path,
                                         const TarReaderOptions& options = {});

// Loads TarIndexPath(tar_path) and checks that it was made for this file:
// its trailer must name the file's size, and its samples must end within
// the file. NotFound if there is none; FailedPrecondition if stale; DataLoss
// if malformed.
Result<RecordIndex> LoadTarIndex(const std::string& tar_path);

// Random access to the samples of an uncompressed tar file through its index.
// InvalidArgument for a compressed file; LoadTarIndex's errors otherwise.
// Samples over options.max_sample_size are DataLoss.
Result<std::shared_ptr<const IndexedRecordFile>> OpenIndexedTar(
    const std::string& path, const TarReaderOptions& options = {});
Result<std::shared_ptr<const IndexedRecordFile>> OpenIndexedTar(
    std::unique_ptr<ReadableFile> file, RecordIndex index, const TarReaderOptions& options = {});

}  // namespace sluice

#endif  // SLUICE_RECORDS_TAR_INDEX_H_
