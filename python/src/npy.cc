// sluice.FixedLengthRecordDataset and sluice.NumpyDataset: the bindings of
// pipeline/fixed_length_record_dataset.h and pipeline/numpy_dataset.h
// (python/sluice/npy.py is the Python half).
#include "sluice_py.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "sluice/pipeline/fixed_length_record_dataset.h"
#include "sluice/pipeline/numpy_dataset.h"

namespace sluice::python {

void RegisterNpy(nb::module_& m) {
  m.def(
      "_fixed_length_record_dataset",
      [](std::vector<std::string> files, int64_t record_bytes, int64_t header_bytes,
         int64_t footer_bytes, std::string compression, int64_t buffer_size,
         int64_t num_parallel_reads, std::string name) {
        FixedLengthRecordDatasetOptions o{.header_bytes = header_bytes,
                                          .footer_bytes = footer_bytes,
                                          .compression = Unwrap(ParseCompression(compression)),
                                          .num_parallel_reads = num_parallel_reads,
                                          .name = std::move(name)};
        if (buffer_size > 0) o.buffer_size = buffer_size;
        Dataset ds = [&] {
          nb::gil_scoped_release release;
          return FixedLengthRecordDataset(std::move(files), record_bytes, o);
        }();
        Check(ds.status());
        return ds;
      },
      nb::arg("files"), nb::arg("record_bytes"), nb::arg("header_bytes"), nb::arg("footer_bytes"),
      nb::arg("compression"), nb::arg("buffer_size"), nb::arg("num_parallel_reads"),
      nb::arg("name"));
  m.def(
      "_numpy_dataset",
      [](std::vector<std::string> files, std::vector<std::string> keys, int64_t sequence_length,
         int64_t max_inflated_bytes, int64_t buffer_size, int64_t num_parallel_reads,
         std::string name) {
        NumpyDatasetOptions o{.keys = std::move(keys),
                              .sequence_length = sequence_length,
                              .max_inflated_bytes = max_inflated_bytes,
                              .num_parallel_reads = num_parallel_reads,
                              .name = std::move(name)};
        if (buffer_size > 0) o.buffer_size = buffer_size;
        Dataset ds = [&] {
          nb::gil_scoped_release release;
          return NumpyDataset(std::move(files), o);
        }();
        Check(ds.status());
        return ds;
      },
      nb::arg("files"), nb::arg("keys"), nb::arg("sequence_length"), nb::arg("max_inflated_bytes"),
      nb::arg("buffer_size"), nb::arg("num_parallel_reads"), nb::arg("name"));
}

}  // namespace sluice::python
