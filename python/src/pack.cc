// sluice.Dataset.pack_sequences and sluice.experimental.pack_sequences: the
// binding of pipeline/pack_sequences.h (python/sluice/dataset.py is the
// Python half).
#include <nanobind/stl/map.h>

#include "sluice/pipeline/pack_sequences.h"
#include "sluice_py.h"

namespace sluice::python {

void RegisterPack(nb::module_& m) {
  m.def(
      "_pack_sequences",
      [](const Dataset& ds, int64_t length, std::string algorithm, int64_t num_packing_bins,
         bool shuffle_bins, uint64_t seed, std::map<std::string, int64_t> feature_lengths,
         int64_t padding_value, std::map<std::string, int64_t> padding_values, bool truncate,
         std::string name) {
        PackAlgorithm a;
        if (algorithm == "first_fit") {
          a = PackAlgorithm::kFirstFit;
        } else if (algorithm == "best_fit") {
          a = PackAlgorithm::kBestFit;
        } else {
          ThrowStatus(Status::InvalidArgument(
              "pack_sequences: algorithm must be \"first_fit\" or \"best_fit\", got \"" +
              algorithm + "\""));
        }
        Dataset out = pack_sequences(ds, length,
                                     {.algorithm = a,
                                      .num_packing_bins = num_packing_bins,
                                      .shuffle_bins = shuffle_bins,
                                      .seed = seed,
                                      .feature_lengths = std::move(feature_lengths),
                                      .padding_value = padding_value,
                                      .padding_values = std::move(padding_values),
                                      .truncate = truncate,
                                      .name = std::move(name)});
        Check(out.status());
        return out;
      },
      nb::arg("ds"), nb::arg("length"), nb::arg("algorithm"), nb::arg("num_packing_bins"),
      nb::arg("shuffle_bins"), nb::arg("seed"), nb::arg("feature_lengths"),
      nb::arg("padding_value"), nb::arg("padding_values"), nb::arg("truncate"), nb::arg("name"));
}

}  // namespace sluice::python
