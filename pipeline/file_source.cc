// FileSourceDataset (file_source.h): the node, its factory and the
// defaults of FileFormat. The iterators: internal/file_source_indexed.cc
// (random access) and internal/file_source_sequential.cc (the rotation of
// open readers).
#include "sluice/pipeline/file_source.h"

#include <algorithm>
#include <new>
#include <utility>

#include "sluice/pipeline/internal/file_source_node.h"
#include "sluice/pipeline/internal/stages.h"

namespace sluice {

ElementSpec FileFormat::element_spec() const {
  return ElementSpec({{"", DType::kString, Shape{}}});
}

Result<std::shared_ptr<const IndexedRecordFile>> FileFormat::OpenIndexed(
    const std::string& /*path*/) const {
  return std::shared_ptr<const IndexedRecordFile>();
}

Result<Element> FileFormat::ToElement(const Record& rec, const std::string& /*path*/) const {
  SLUICE_ASSIGN_OR_RETURN(Buffer views, Buffer::Allocate(sizeof(std::string_view)));
  new (views.data()) std::string_view(rec.data);
  SLUICE_ASSIGN_OR_RETURN(Tensor t,
                          Tensor::FromStringViews(Shape{}, std::move(views), {rec.owner}));
  return Element({std::move(t)});
}

}  // namespace sluice

namespace sluice::pipeline_internal {

std::vector<Segment> BuildSegments(const std::vector<int64_t>& counts, int64_t n) {
  std::vector<Segment> segments;
  const int64_t f = static_cast<int64_t>(counts.size());
  std::vector<Slot> slots;
  int64_t next_file = 0;
  for (; next_file < std::min(n, f); ++next_file) slots.push_back({next_file, 0});
  int64_t ptr = 0, start = 0;
  while (!slots.empty()) {
    const int64_t m = static_cast<int64_t>(slots.size());
    // The step at which each slot is visited and found exhausted.
    int64_t end = -1, ended = 0;
    for (int64_t k = 0; k < m; ++k) {
      const int64_t q = ((k - ptr) % m + m) % m;
      const int64_t e = q + (counts[slots[k].file] - slots[k].record) * m;
      if (end < 0 || e < end) end = e, ended = k;
    }
    if (end > 0) segments.push_back({start, end, ptr, slots});
    for (int64_t k = 0; k < m; ++k) {
      const int64_t q = ((k - ptr) % m + m) % m;
      if (end > q) slots[k].record += (end - q + m - 1) / m;
    }
    start += end;
    ptr = ended;
    if (next_file < f) {
      slots[ptr] = {next_file++, 0};
    } else {
      slots.erase(slots.begin() + ptr);
      if (ptr >= static_cast<int64_t>(slots.size())) ptr = 0;
    }
  }
  return segments;
}

FileSourceNode::FileSourceNode(std::vector<std::string> files,
                               std::shared_ptr<const FileFormat> format, FileSourceOptions o,
                               std::vector<std::shared_ptr<const IndexedRecordFile>> indexed,
                               int64_t cardinality)
    : DatasetNode(format->kind(), o.name, {}, format->element_spec(), cardinality),
      files_(std::move(files)),
      format_(std::move(format)),
      options_(std::move(o)),
      indexed_(std::move(indexed)) {
  for (const std::string& f : files_) sources_.push_back(std::make_shared<const std::string>(f));
  if (!indexed_.empty()) {
    std::vector<int64_t> counts;
    for (const auto& f : indexed_) counts.push_back(static_cast<int64_t>(f->num_records()));
    segments_ = BuildSegments(counts, options_.num_parallel_reads);
  }
}

std::string FileSourceNode::Describe() const {
  std::string d =
      name() + "(" + std::to_string(files_.size()) + (files_.size() == 1 ? " file" : " files");
  if (options_.num_parallel_reads > 1) {
    d += ", num_parallel_reads=" + std::to_string(options_.num_parallel_reads);
  }
  if (const std::string f = format_->Describe(); !f.empty()) d += ", " + f;
  if (!indexed_.empty()) d += ", indexed";
  return d + ")";
}

Result<std::shared_ptr<const DatasetNode>> FileSourceNode::WithSourceFiles(
    std::vector<std::string> files) const {
  Dataset d = FileSourceDataset(std::move(files), format_, options_);
  SLUICE_RETURN_IF_ERROR(d.status());
  return d.node();
}

std::pair<int64_t, int64_t> FileSourceNode::Locate(int64_t i) const {
  auto it = std::upper_bound(segments_.begin(), segments_.end(), i,
                             [](int64_t v, const Segment& s) { return v < s.start; });
  const Segment& s = *(it - 1);
  const int64_t o = i - s.start;
  const int64_t m = static_cast<int64_t>(s.slots.size());
  const Slot& slot = s.slots[static_cast<size_t>((s.ptr + o) % m)];
  return {slot.file, slot.record + o / m};
}

Result<Element> FileSourceNode::MakeElement(const Record& rec, int64_t file) const {
  SLUICE_ASSIGN_OR_RETURN(Element e, format_->ToElement(rec, files_[static_cast<size_t>(file)]));
  e.set_origin(source(file), static_cast<int64_t>(rec.number));
  return e;
}

Result<Element> FileSourceNode::Get(IteratorContext&, int64_t i) const {
  if (indexed_.empty() || i < 0 || i >= cardinality()) {
    return Status::OutOfRange(name() + ": element " + std::to_string(i) + " of " +
                              std::to_string(cardinality()));
  }
  const auto [file, record] = Locate(i);
  SLUICE_ASSIGN_OR_RETURN(Record rec, indexed(file).Read(static_cast<uint64_t>(record)));
  return MakeElement(rec, file);
}

Result<std::unique_ptr<IteratorNode>> FileSourceNode::MakeIterator(IteratorContext& ctx,
                                                                   const IteratorParams&) const {
  if (random_access()) return MakeIndexedFileIterator(ctx, *this);
  return MakeSequentialFileIterator(ctx, *this);
}

RecordBatch::RecordBatch(int64_t n) {
  views_.reserve(static_cast<size_t>(std::clamp<int64_t>(n, 0, int64_t{1} << 16)));
}

Result<Element> RecordBatch::Finish(const FileSourceNode& node) && {
  SLUICE_ASSIGN_OR_RETURN(
      Tensor t, Tensor::Allocate(DType::kString, Shape{static_cast<int64_t>(views_.size())}));
  std::copy(views_.begin(), views_.end(), t.flat<std::string_view>().begin());
  for (const Buffer& b : owners_) t.AddStringOwner(b);
  Element e({std::move(t)});
  e.set_origin(node.source(first_file_), first_record_);
  return e;
}

}  // namespace sluice::pipeline_internal

namespace sluice {

Dataset FileSourceDataset(std::vector<std::string> files, std::shared_ptr<const FileFormat> format,
                          FileSourceOptions options) {
  using pipeline_internal::FileSourceNode;
  if (format == nullptr) {
    return Dataset::FromError(Status::InvalidArgument("FileSourceDataset: no format given"));
  }
  const std::string kind = format->kind();
  if (files.empty()) return Dataset::FromError(Status::InvalidArgument(kind + ": no files given"));
  if (options.num_parallel_reads == kAutotune) {
    // Not the CPU count (tf.data's choice): the order follows this number
    // and must be the same on any machine. The reads ahead still run as
    // the CPU budget allows.
    options.num_parallel_reads =
        std::min<int64_t>(kAutotuneCycleLength, static_cast<int64_t>(files.size()));
  }
  if (options.num_parallel_reads < 1) {
    return Dataset::FromError(
        Status::InvalidArgument(kind + ": num_parallel_reads must be at least 1, got " +
                                std::to_string(options.num_parallel_reads)));
  }
  if (options.buffer_size < 1) {
    return Dataset::FromError(Status::InvalidArgument(
        kind + ": buffer_size must be positive, got " + std::to_string(options.buffer_size)));
  }
  std::vector<std::shared_ptr<const IndexedRecordFile>> indexed;
  int64_t cardinality = kUnknownCardinality;
  if (options.use_index) {
    int64_t total = 0;
    for (const std::string& f : files) {
      Result<std::shared_ptr<const IndexedRecordFile>> file = format->OpenIndexed(f);
      if (!file.ok()) return Dataset::FromError(file.status());
      if (*file == nullptr) {  // read in order
        indexed.clear();
        break;
      }
      total += static_cast<int64_t>((*file)->num_records());
      indexed.push_back(std::move(file).value());
    }
    if (!indexed.empty()) cardinality = total;
  }
  return Dataset(std::make_shared<FileSourceNode>(
      std::move(files), std::move(format), std::move(options), std::move(indexed), cardinality));
}

DatasetFn file_source(std::shared_ptr<const FileFormat> format, FileSourceOptions options) {
  return [format = std::move(format), options](const Element& e) -> Result<Dataset> {
    if (e.size() != 1 || e[0].dtype() != DType::kString || e[0].num_elements() != 1) {
      return Status::InvalidArgument((format ? format->kind() : std::string("file_source")) +
                                     ": expected a file name (string scalar), got " +
                                     e.DebugString());
    }
    return FileSourceDataset({std::string(e[0].flat<std::string_view>()[0])}, format, options);
  };
}

}  // namespace sluice
