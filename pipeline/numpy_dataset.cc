#include "sluice/pipeline/numpy_dataset.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>

#include "sluice/records/indexed_record_reader.h"
#include "sluice/records/npy_rows_file.h"

namespace sluice {
namespace {

// What one component of every file must be.
struct Component {
  std::string name;
  NpyDType stored;  // kind and size (endianness may differ between files)
  DType dtype;
  bool widened = false;
  Shape shape;  // of one element
  size_t piece_offset = 0;
};

template <typename From, typename To>
void Widen(const char* src, To* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    From v;
    std::memcpy(&v, src + i * sizeof(From), sizeof(From));
    dst[i] = static_cast<To>(v);
  }
}

class NumpyFileFormat final : public FileFormat {
 public:
  NumpyFileFormat(NumpyDatasetOptions o, std::vector<Component> components, size_t record_bytes)
      : o_(std::move(o)), components_(std::move(components)), record_bytes_(record_bytes) {
    std::vector<ComponentSpec> specs;
    for (const Component& c : components_) specs.push_back({c.name, c.dtype, c.shape});
    spec_ = ElementSpec(std::move(specs));
    names_ = std::make_shared<const std::vector<std::string>>([&] {
      std::vector<std::string> n;
      for (const Component& c : components_) n.push_back(c.name);
      return n;
    }());
  }

  std::string kind() const override { return "NumpyDataset"; }
  std::string Describe() const override {
    std::string d;
    if (!o_.keys.empty()) d = "keys=" + fmt::format("{}", fmt::join(o_.keys, ","));
    if (o_.sequence_length > 0) {
      d += (d.empty() ? "" : ", ") + fmt::format("sequence_length={}", o_.sequence_length);
    }
    return d;
  }
  ElementSpec element_spec() const override { return spec_; }
  Result<std::unique_ptr<RecordReader>> Open(const std::string& path,
                                             size_t buffer_size) const override {
    SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<const IndexedRecordFile> rows, OpenIndexed(path));
    return NewIndexedRecordReader(std::move(rows), buffer_size);
  }
  Result<std::shared_ptr<const IndexedRecordFile>> OpenIndexed(
      const std::string& path) const override {
    SLUICE_ASSIGN_OR_RETURN(
        std::vector<NpyArray> arrays,
        OpenNpyArrays(path, o_.keys, static_cast<uint64_t>(o_.max_inflated_bytes)));
    SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<const NpyRowsFile> rows,
                            NpyRowsFile::Make(path, std::move(arrays), o_.sequence_length));
    SLUICE_RETURN_IF_ERROR(CheckMatches(path, *rows));
    return std::shared_ptr<const IndexedRecordFile>(std::move(rows));
  }
  Result<Element> ToElement(const Record& rec, const std::string& path) const override {
    const auto* base = reinterpret_cast<const char*>(rec.owner.data());
    if (rec.data.size() != record_bytes_ || rec.data.data() < base ||
        rec.data.data() + rec.data.size() > base + rec.owner.size()) {
      return Status::Internal(fmt::format("{}: row {} is not a view of {} bytes of its buffer",
                                          path, rec.number, record_bytes_));
    }
    const size_t at = static_cast<size_t>(rec.data.data() - base);
    std::vector<Tensor> parts;
    parts.reserve(components_.size());
    for (const Component& c : components_) {
      const size_t off = at + c.piece_offset;
      if (!c.widened) {
        SLUICE_ASSIGN_OR_RETURN(Tensor t, Tensor::FromBuffer(c.dtype, c.shape, rec.owner, off));
        parts.push_back(std::move(t));
        continue;
      }
      SLUICE_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(c.dtype, c.shape));
      const char* src = base + off;
      const int64_t n = t.num_elements();
      if (c.dtype == DType::kInt64) {
        Widen<uint32_t>(src, t.flat<int64_t>().data(), n);
      } else if (c.stored.kind == 'u') {
        Widen<uint16_t>(src, t.flat<int32_t>().data(), n);
      } else if (c.stored.size == 2) {
        Widen<int16_t>(src, t.flat<int32_t>().data(), n);
      } else {
        Widen<int8_t>(src, t.flat<int32_t>().data(), n);
      }
      parts.push_back(std::move(t));
    }
    return Element(std::move(parts), names_);
  }
  bool records_are_elements() const override { return false; }

 private:
  Status CheckMatches(const std::string& path, const NpyRowsFile& rows) const {
    const std::vector<NpyArray>& arrays = rows.arrays();
    if (arrays.size() != components_.size() || rows.record_bytes() != record_bytes_) {
      return Status::InvalidArgument(
          fmt::format("{}: its arrays differ from the first file's: elements {} expected", path,
                      spec_.DebugString()));
    }
    for (size_t j = 0; j < arrays.size(); ++j) {
      const NpyHeader& h = arrays[j].header;
      const Component& c = components_[j];
      const bool same_rows =
          o_.sequence_length > 0 || std::equal(h.shape.begin() + 1, h.shape.end(),
                                               c.shape.dims().begin(), c.shape.dims().end());
      if (h.dtype.kind != c.stored.kind || h.dtype.size != c.stored.size || !same_rows ||
          arrays[j].key != c.name) {
        return Status::InvalidArgument(
            fmt::format("{}: array{} ('{}', shape ({})) does not match the first file's ({})", path,
                        arrays[j].key.empty() ? "" : " '" + arrays[j].key + "'", h.descr,
                        fmt::join(h.shape, ", "), spec_.DebugString()));
      }
    }
    return Status::OK();
  }

  NumpyDatasetOptions o_;
  std::vector<Component> components_;
  size_t record_bytes_;
  ElementSpec spec_;
  std::shared_ptr<const std::vector<std::string>> names_;
};

FileSourceOptions SourceOptions(const NumpyDatasetOptions& o) {
  FileSourceOptions s;
  s.buffer_size = o.buffer_size;
  s.num_parallel_reads = o.num_parallel_reads;
  s.use_index = true;
  s.name = o.name;
  return s;
}

}  // namespace

Result<std::shared_ptr<const FileFormat>> NumpyFormat(const std::string& reference_file,
                                                      const NumpyDatasetOptions& options) {
  if (options.sequence_length < 0) {
    return Status::InvalidArgument(
        fmt::format("NumpyDataset: sequence_length must be >= 0, got {}", options.sequence_length));
  }
  if (options.max_inflated_bytes < 0) {
    return Status::InvalidArgument("NumpyDataset: max_inflated_bytes must be >= 0");
  }
  SLUICE_ASSIGN_OR_RETURN(std::vector<NpyArray> arrays,
                          OpenNpyArrays(reference_file, options.keys,
                                        static_cast<uint64_t>(options.max_inflated_bytes)));
  SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<const NpyRowsFile> rows,
                          NpyRowsFile::Make(reference_file, arrays, options.sequence_length));
  std::vector<Component> components;
  for (size_t j = 0; j < arrays.size(); ++j) {
    const NpyHeader& h = arrays[j].header;
    Component c;
    c.name = arrays[j].key;
    c.stored = h.dtype;
    SLUICE_ASSIGN_OR_RETURN(c.dtype, NpyValueDType(h.dtype, &c.widened));
    if (options.sequence_length > 0) {
      c.shape = Shape{options.sequence_length + 1};
    } else {
      c.shape = Shape(std::vector<int64_t>(h.shape.begin() + 1, h.shape.end()));
    }
    c.piece_offset = rows->piece_offset(j);
    components.push_back(std::move(c));
  }
  return std::shared_ptr<const FileFormat>(
      std::make_shared<NumpyFileFormat>(options, std::move(components), rows->record_bytes()));
}

Dataset NumpyDataset(std::vector<std::string> filenames, NumpyDatasetOptions options) {
  if (filenames.empty()) {
    return Dataset::FromError(Status::InvalidArgument("NumpyDataset: no files given"));
  }
  Result<std::shared_ptr<const FileFormat>> format = NumpyFormat(filenames[0], options);
  if (!format.ok()) return Dataset::FromError(format.status().WithContext("NumpyDataset"));
  return FileSourceDataset(std::move(filenames), *std::move(format), SourceOptions(options));
}

DatasetFn numpy_arrays(NumpyDatasetOptions options) {
  return [options](const Element& e) -> Result<Dataset> {
    if (e.size() != 1 || e[0].dtype() != DType::kString || e[0].num_elements() != 1) {
      return Status::InvalidArgument("NumpyDataset: expected a file name (string scalar), got " +
                                     e.DebugString());
    }
    Dataset d = NumpyDataset({std::string(e[0].flat<std::string_view>()[0])}, options);
    SLUICE_RETURN_IF_ERROR(d.status());
    return d;
  };
}

}  // namespace sluice
