// sluice.WebDatasetDataset (python/sluice/webdataset.py): WebDataset tar
// shards as datasets of dicts of bytes, and their sample indexes.
#include "sluice_py.h"
// (sluice_py.h first: every file sees the same casters.)
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sluice/pipeline/webdataset.h"
#include "sluice/records/tar_index.h"

namespace sluice::python {

void RegisterWebDataset(nb::module_& m) {
  m.def(
      "_webdataset",
      [](std::vector<std::string> files, std::vector<std::string> extensions, int64_t buffer_size,
         int64_t num_parallel_reads, bool use_index, int64_t max_sample_size, std::string missing,
         std::string name) {
        WebDatasetOptions o;
        o.extensions = std::move(extensions);
        if (buffer_size > 0) o.buffer_size = buffer_size;
        o.num_parallel_reads = num_parallel_reads;
        o.use_index = use_index;
        o.max_sample_size = max_sample_size;
        if (missing == "empty") {
          o.missing = WebDatasetOptions::Missing::kEmpty;
        } else if (missing != "error") {
          throw nb::value_error("missing must be \"error\" or \"empty\"");
        }
        o.name = std::move(name);
        Dataset ds = [&] {
          nb::gil_scoped_release release;
          return WebDatasetDataset(std::move(files), std::move(o));
        }();
        if (!ds.status().ok()) ThrowStatus(ds.status());
        return ds;
      },
      nb::arg("files"), nb::arg("extensions"), nb::arg("buffer_size"),
      nb::arg("num_parallel_reads"), nb::arg("use_index"), nb::arg("max_sample_size"),
      nb::arg("missing"), nb::arg("name"));
  m.def(
      "_build_tar_index",
      [](const std::string& path) {
        Result<RecordIndex> index = [&] {
          nb::gil_scoped_release release;
          return BuildAndSaveTarIndex(path);
        }();
        return static_cast<uint64_t>(Unwrap(std::move(index)).size());
      },
      nb::arg("path"));
}

}  // namespace sluice::python
