// Dataset.distribute for Python: every rank's exact share (distribute/).
// Ranks come from the caller (sluice.torch passes torch.distributed's) or
// from the launcher's environment (ClusterResolver: mpirun, srun, torchrun,
// TF_CONFIG).
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include <string>
#include <tuple>

#include "sluice/distribute/cluster_resolver.h"
#include "sluice/distribute/distribute.h"
#include "sluice_py.h"

namespace sluice::python {
namespace {

DistributePolicy PolicyFromName(const std::string& name) {
  if (name == "AUTO" || name == "auto") return DistributePolicy::kAuto;
  if (name == "FILE" || name == "file") return DistributePolicy::kFile;
  if (name == "DATA" || name == "data") return DistributePolicy::kData;
  if (name == "RECORD" || name == "record") return DistributePolicy::kRecord;
  if (name == "OFF" || name == "off") return DistributePolicy::kOff;
  throw nb::value_error(
      ("policy must be AUTO, FILE, DATA, RECORD or OFF, got '" + name + "'").c_str());
}

InputContext Context(int rank, int world_size) {
  InputContext c{.rank = rank, .world_size = world_size};
  Check(c.Validate());
  return c;
}

}  // namespace

void RegisterDistribute(nb::module_& m) {
  m.def("_cluster_from_environment", []() {
    ClusterSpec spec = Unwrap(ClusterResolver::FromEnvironment());
    const InputContext c = InputContext::FromCluster(spec);
    return std::make_tuple(c.rank, c.world_size);
  });
  m.def("_distribute", [](const Dataset& ds, int rank, int world_size, std::string policy,
                          bool pad_for_eval, std::string weight_name) {
    const DistributeOptions o{.policy = PolicyFromName(policy),
                              .pad_for_eval = pad_for_eval,
                              .weight_name = std::move(weight_name)};
    const InputContext c = Context(rank, world_size);
    Dataset out = [&] {
      nb::gil_scoped_release release;
      return DistributeDataset(ds, c, o);
    }();
    if (!out.status().ok()) ThrowStatus(out.status());
    return out;
  });
  m.def("_plan_distribution",
        [](const Dataset& ds, int rank, int world_size, std::string policy, bool pad_for_eval) {
          const DistributeOptions o{.policy = PolicyFromName(policy), .pad_for_eval = pad_for_eval};
          const InputContext c = Context(rank, world_size);
          Result<DistributePlan> plan = [&] {
            nb::gil_scoped_release release;
            return PlanDistribution(ds, c, o);
          }();
          return Unwrap(std::move(plan)).ToString();
        });
}

}  // namespace sluice::python
