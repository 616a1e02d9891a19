// sluice.ParquetDataset and sluice.parquet_available: the bindings of
// pipeline/parquet_dataset.h (python/sluice/parquet.py is the Python half).
#include "sluice_py.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "sluice/pipeline/parquet_dataset.h"

namespace sluice::python {

void RegisterParquet(nb::module_& m) {
  m.def("_parquet_available", [] { return ParquetAvailable(); });
  m.def(
      "_parquet_dataset",
      [](std::vector<std::string> files, std::vector<std::string> columns, int64_t batch_rows,
         bool fill_nulls, int64_t buffer_size, int64_t num_parallel_reads, std::string name,
         int64_t max_row_group_bytes) {
        ParquetDatasetOptions o{.columns = std::move(columns),
                                .batch_rows = batch_rows,
                                .fill_nulls = fill_nulls,
                                .num_parallel_reads = num_parallel_reads,
                                .name = std::move(name)};
        if (buffer_size > 0) o.buffer_size = buffer_size;
        if (max_row_group_bytes > 0) o.max_row_group_bytes = max_row_group_bytes;
        Dataset ds = [&] {
          nb::gil_scoped_release release;
          return ParquetDataset(std::move(files), o);
        }();
        Check(ds.status());
        return ds;
      },
      nb::arg("files"), nb::arg("columns"), nb::arg("batch_rows"), nb::arg("fill_nulls"),
      nb::arg("buffer_size"), nb::arg("num_parallel_reads"), nb::arg("name"),
      nb::arg("max_row_group_bytes"));
}

}  // namespace sluice::python
