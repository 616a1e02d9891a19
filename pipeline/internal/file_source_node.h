// FileSourceNode: the dataset node of FileSourceDataset (file_source.h), and
// what its two iterators share.
//
// Indexed mode: when use_index and every file opens for random access
// (FileFormat::OpenIndexed), the cardinality is exact and element i maps to
// (file, record) through the round robin's segments (stretches of the order
// during which the same files are open); its iterator is a cursor
// (file_source_indexed.cc) that reads each file in runs of adjacent records.
// Otherwise the files are read in order (file_source_sequential.cc); the
// state is the rotation (which file is in which slot, at which record).
//
// Immutable; shared by its iterators, which may run on several threads.
#ifndef SLUICE_PIPELINE_INTERNAL_FILE_SOURCE_NODE_H_
#define SLUICE_PIPELINE_INTERNAL_FILE_SOURCE_NODE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sluice/pipeline/file_source.h"
#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/node.h"

namespace sluice::pipeline_internal {

struct Slot {
  int64_t file = 0;
  int64_t record = 0;  // the next record to read
};

// A stretch of the round-robin order during which the same files are open:
// element start + o comes from slots[(ptr + o) % m], record
// slots[k].record + o / m.
struct Segment {
  int64_t start = 0;
  int64_t length = 0;
  int64_t ptr = 0;
  std::vector<Slot> slots;
};

// The segments of the round robin over files with `counts` records, n slots.
std::vector<Segment> BuildSegments(const std::vector<int64_t>& counts, int64_t n);

class FileSourceNode : public DatasetNode {
 public:
  FileSourceNode(std::vector<std::string> files, std::shared_ptr<const FileFormat> format,
                 FileSourceOptions o, std::vector<std::shared_ptr<const IndexedRecordFile>> indexed,
                 int64_t cardinality);

  std::string Describe() const override;
  bool random_access() const override { return !indexed_.empty(); }
  const std::vector<std::string>* source_files() const override { return &files_; }
  Result<std::shared_ptr<const DatasetNode>> WithSourceFiles(
      std::vector<std::string> files) const override;
  Result<Element> Get(IteratorContext&, int64_t i) const override;
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams&) const override;

  // Element i of the round robin: (file, record). REQUIRES: indexed.
  std::pair<int64_t, int64_t> Locate(int64_t i) const;
  // The element of record `rec` of `file`, with its origin.
  Result<Element> MakeElement(const Record& rec, int64_t file) const;

  const FileFormat& format() const { return *format_; }
  const FileSourceOptions& source_options() const { return options_; }
  const std::vector<std::string>& files() const { return files_; }
  const std::shared_ptr<const std::string>& source(int64_t f) const {
    return sources_[static_cast<size_t>(f)];
  }
  const IndexedRecordFile& indexed(int64_t file) const {
    return *indexed_[static_cast<size_t>(file)];
  }
  // buffer_size as a byte count (at least 1).
  size_t buffer_bytes() const {
    return static_cast<size_t>(std::max<int64_t>(options_.buffer_size, 1));
  }

 private:
  std::vector<std::string> files_;
  std::vector<std::shared_ptr<const std::string>> sources_;
  std::shared_ptr<const FileFormat> format_;
  FileSourceOptions options_;
  std::vector<std::shared_ptr<const IndexedRecordFile>> indexed_;  // empty unless all are
  std::vector<Segment> segments_;
};

// Records gathered into one string tensor of views (a stacked read): no
// element, tensor or allocation per record. For formats whose records are
// their elements (FileFormat::records_are_elements).
class RecordBatch {
 public:
  // `n`: the records expected (only a hint: batch sizes can be huge).
  explicit RecordBatch(int64_t n);
  bool empty() const { return views_.empty(); }
  void Add(const Record& rec, int64_t file) {
    if (views_.empty()) first_file_ = file, first_record_ = static_cast<int64_t>(rec.number);
    views_.push_back(rec.data);
    if (owners_.empty() || owners_.back().data() != rec.owner.data()) owners_.push_back(rec.owner);
  }
  // REQUIRES: !empty(). Its origin is its first record.
  Result<Element> Finish(const FileSourceNode& node) &&;

 private:
  std::vector<std::string_view> views_;
  std::vector<Buffer> owners_;  // each read buffer once
  int64_t first_file_ = 0, first_record_ = 0;
};

// file_source_indexed.cc / file_source_sequential.cc
std::unique_ptr<IteratorNode> MakeIndexedFileIterator(IteratorContext& ctx,
                                                      const FileSourceNode& node);
std::unique_ptr<IteratorNode> MakeSequentialFileIterator(IteratorContext& ctx,
                                                         const FileSourceNode& node);

}  // namespace sluice::pipeline_internal

#endif  // SLUICE_PIPELINE_INTERNAL_FILE_SOURCE_NODE_H_
