// WebDatasetDataset (pipeline/webdataset.h): TarReader and IndexedTarFile
// (records/) as a FileFormat; ToElement walks a sample's headers again
// (ForEachTarMember) to find its members' payloads, which become string
// scalar views into the record's buffer.
#include <algorithm>
#include <memory>
#include <new>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "sluice/pipeline/webdataset.h"
#include "sluice/records/tar_index.h"
#include "sluice/records/tar_reader.h"

namespace sluice {
namespace {

constexpr std::string_view kKind = "WebDatasetDataset";

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  return out;
}

class WebDatasetFormatImpl : public FileFormat {
 public:
  WebDatasetFormatImpl(WebDatasetOptions o, std::vector<std::string> extensions)
      : options_(std::move(o)), extensions_(std::move(extensions)) {
    reader_.buffer_size = static_cast<size_t>(options_.buffer_size);
    reader_.max_sample_size = static_cast<uint64_t>(options_.max_sample_size);
    reader_.seek_with_index = options_.use_index;
    auto names = std::make_shared<std::vector<std::string>>();
    names->push_back("__key__");
    for (const std::string& e : extensions_) names->push_back(e);
    names_ = std::move(names);
  }

  std::string kind() const override { return std::string(kKind); }
  std::string Describe() const override {
    std::string d = "extensions=[";
    for (size_t i = 0; i < extensions_.size(); ++i) d += (i ? "," : "") + extensions_[i];
    d += "]";
    if (options_.missing == WebDatasetOptions::Missing::kEmpty) d += ", missing=empty";
    return d;
  }
  ElementSpec element_spec() const override {
    std::vector<ComponentSpec> c;
    for (const std::string& n : *names_) c.push_back({n, DType::kString, Shape{}});
    return ElementSpec(std::move(c));
  }
  Result<std::unique_ptr<RecordReader>> Open(const std::string& path,
                                             size_t buffer_size) const override {
    TarReaderOptions r = reader_;
    r.buffer_size = buffer_size;
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<TarReader> reader, TarReader::Open(path, r));
    return std::unique_ptr<RecordReader>(std::move(reader));
  }
  Result<std::shared_ptr<const IndexedRecordFile>> OpenIndexed(
      const std::string& path) const override {
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> file, OpenReadableFile(path));
    if (file->is_stream()) return std::shared_ptr<const IndexedRecordFile>();
    SLUICE_ASSIGN_OR_RETURN(Compression c, DetectTarCompression(*file));
    if (c != Compression::kNone) return std::shared_ptr<const IndexedRecordFile>();
    Result<RecordIndex> index = LoadTarIndex(path);
    if (!index.ok() && index.status().code() == StatusCode::kNotFound) {
      return std::shared_ptr<const IndexedRecordFile>();
    }
    if (!index.ok()) return index.status();
    return OpenIndexedTar(std::move(file), std::move(index).value(), reader_);
  }

  Result<Element> ToElement(const Record& rec, const std::string& path) const override {
    const size_t n = extensions_.size() + 1;
    SLUICE_ASSIGN_OR_RETURN(Buffer views, Buffer::Allocate(n * sizeof(std::string_view)));
    auto* v = reinterpret_cast<std::string_view*>(views.data());
    for (size_t i = 0; i < n; ++i) new (v + i) std::string_view();
    std::vector<bool> found(n, false);
    std::string key_copy;  // when the key is not a view into the record (a ustar prefix)
    bool key_set = false;
    const char* lo = rec.data.data();
    const char* hi = lo + rec.data.size();
    std::string ext;
    SLUICE_RETURN_IF_ERROR(ForEachTarMember(
        rec.data, rec.offset, path, reader_.max_header_size, [&](const TarMember& m) {
          if (!key_set) {
            key_set = true;
            if (m.key.data() >= lo && m.key.data() + m.key.size() <= hi) {
              v[0] = m.key;
            } else {
              key_copy.assign(m.key);
            }
          }
          ext.assign(m.extension);
          for (char& c : ext) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
          for (size_t i = 0; i < extensions_.size(); ++i) {
            if (extensions_[i] == ext) {
              v[i + 1] = m.data;
              found[i + 1] = true;
              break;
            }
          }
          return Status::OK();
        }));
    if (options_.missing == WebDatasetOptions::Missing::kError) {
      for (size_t i = 1; i < n; ++i) {
        if (found[i]) continue;
        const std::string key = key_copy.empty() ? std::string(v[0]) : key_copy;
        return Status::InvalidArgument(fmt::format(
            "{}: {}: the sample \"{}\" at offset {} (sample {}) has no \"{}\" member",
            kKind, path, key, rec.offset, rec.number, extensions_[i - 1]));
      }
    }
    std::vector<Tensor> components;
    components.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      if (i == 0 && !key_copy.empty()) {
        components.push_back(Tensor::StringScalar(key_copy));
        continue;
      }
      SLUICE_ASSIGN_OR_RETURN(Tensor t, Tensor::FromStringViews(Shape{}, views, {rec.owner},
                                                                 i * sizeof(std::string_view)));
      components.push_back(std::move(t));
    }
    return Element(std::move(components), names_);
  }
  bool records_are_elements() const override { return false; }

 private:
  const WebDatasetOptions options_;
  const std::vector<std::string> extensions_;  // lower-cased
  TarReaderOptions reader_;
  std::shared_ptr<const std::vector<std::string>> names_;
};

// The extensions of the first sample of `path`, lower-cased, in order.
Result<std::vector<std::string>> FirstSampleExtensions(const std::string& path,
                                                       const TarReaderOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<TarReader> reader, TarReader::Open(path, options));
  SLUICE_ASSIGN_OR_RETURN(std::optional<Record> rec, reader->Next());
  if (!rec) {
    return Status::InvalidArgument(fmt::format(
        "{}: {} has no samples to take the extensions from; give extensions", kKind, path));
  }
  std::vector<std::string> out;
  SLUICE_RETURN_IF_ERROR(ForEachTarMember(rec->data, rec->offset, path, options.max_header_size,
                                          [&](const TarMember& m) {
                                            out.push_back(Lower(m.extension));
                                            return Status::OK();
                                          }));
  return out;
}

}  // namespace

Result<std::shared_ptr<const FileFormat>> WebDatasetFormat(WebDatasetOptions options,
                                                           const std::vector<std::string>& files) {
  if (options.max_sample_size < 0 || options.buffer_size <= 0) {
    return Status::InvalidArgument(fmt::format(
        "{}: buffer_size must be > 0 and max_sample_size >= 0 (got {} and {})", kKind,
        options.buffer_size, options.max_sample_size));
  }
  std::vector<std::string> extensions;
  for (const std::string& e : options.extensions) {
    std::string l = Lower(e);
    if (l.empty() || l.starts_with("__")) {
      return Status::InvalidArgument(
          fmt::format("{}: \"{}\" is not an extension", kKind, e));
    }
    if (std::find(extensions.begin(), extensions.end(), l) != extensions.end()) {
      return Status::InvalidArgument(fmt::format("{}: extension \"{}\" given twice", kKind, e));
    }
    extensions.push_back(std::move(l));
  }
  if (extensions.empty()) {
    if (files.empty()) {
      return Status::InvalidArgument(
          fmt::format("{}: no files to take the extensions from; give extensions", kKind));
    }
    TarReaderOptions r;
    r.max_sample_size = static_cast<uint64_t>(options.max_sample_size);
    SLUICE_ASSIGN_OR_RETURN(extensions, FirstSampleExtensions(files.front(), r));
  }
  return std::shared_ptr<const FileFormat>(
      std::make_shared<WebDatasetFormatImpl>(std::move(options), std::move(extensions)));
}

Dataset WebDatasetDataset(std::vector<std::string> files, WebDatasetOptions options) {
  FileSourceOptions source;
  source.buffer_size = options.buffer_size;
  source.num_parallel_reads = options.num_parallel_reads;
  source.use_index = options.use_index;
  source.name = options.name;
  Result<std::shared_ptr<const FileFormat>> format = WebDatasetFormat(std::move(options), files);
  if (!format.ok()) return Dataset::FromError(format.status());
  return FileSourceDataset(std::move(files), std::move(format).value(), std::move(source));
}

DatasetFn webdataset(WebDatasetOptions options) {
  return [options](const Element& e) -> Result<Dataset> {
    if (e.size() != 1 || e[0].dtype() != DType::kString || e[0].num_elements() != 1) {
      return Status::InvalidArgument(std::string(kKind) +
                                     ": webdataset() maps a file name (a string scalar)");
    }
    const std::string file(e[0].flat<std::string_view>()[0]);
    return WebDatasetDataset({file}, options);
  };
}

}  // namespace sluice
