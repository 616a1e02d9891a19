// Bindings of sample_from_datasets and choose_from_datasets
// (python/sluice/dataset.py wraps them as Dataset's static methods).
#include "sluice_py.h"

#include "sluice/pipeline/dataset.h"

namespace sluice::python {

namespace {

std::vector<Dataset> DatasetsOf(const nb::list& datasets, const std::string& what) {
  std::vector<Dataset> out;
  for (nb::handle h : datasets) out.push_back(DatasetOf(h, what));
  return out;
}

}  // namespace

void RegisterMixing(nb::module_& m) {
  m.def(
      "_sample_from_datasets",
      [](nb::list datasets, nb::object weights, std::optional<uint64_t> seed,
         bool stop_on_empty_dataset, bool rerandomize_each_iteration) {
        const std::string what = "sample_from_datasets";
        std::vector<Dataset> inputs = DatasetsOf(datasets, what);
        SampleFromDatasetsOptions o{.seed = seed,
                                    .stop_on_empty_dataset = stop_on_empty_dataset,
                                    .rerandomize_each_iteration = rerandomize_each_iteration};
        if (!weights.is_none() && !nb::isinstance<nb::list>(weights)) {
          Dataset w = DatasetOf(weights, what + " weights");
          return Checked(Dataset::sample_from_datasets(std::move(inputs), std::move(w), o));
        }
        std::vector<double> w;
        if (!weights.is_none()) w = nb::cast<std::vector<double>>(weights);
        return Checked(Dataset::sample_from_datasets(std::move(inputs), std::move(w), o));
      },
      nb::arg("datasets"), nb::arg("weights").none(), nb::arg("seed").none(),
      nb::arg("stop_on_empty_dataset"), nb::arg("rerandomize_each_iteration"));
  m.def(
      "_choose_from_datasets",
      [](nb::list datasets, nb::handle choice, bool stop_on_empty_dataset) {
        const std::string what = "choose_from_datasets";
        return Checked(Dataset::choose_from_datasets(
            DatasetsOf(datasets, what), DatasetOf(choice, what + " choice_dataset"),
            {.stop_on_empty_dataset = stop_on_empty_dataset}));
      },
      nb::arg("datasets"), nb::arg("choice_dataset"), nb::arg("stop_on_empty_dataset"));
}

}  // namespace sluice::python
