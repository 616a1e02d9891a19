// Splits a dataset between two ranks through an installed sluice::distribute.
#include <cstdio>

#include "sluice/distribute/distribute.h"
#include "sluice/distribute/mpi_communicator.h"

int main() {
  auto cluster = sluice::ClusterResolver::FromJson(R"({"rank": 1, "world_size": 2})");
  if (!cluster.ok()) return 1;
  int n = 0;
  for (const sluice::Element& e : sluice::Dataset::range(10).apply(
           sluice::distribute(sluice::InputContext::FromCluster(*cluster)))) {
    if (e[0].scalar<int64_t>() % 2 != 1) return 1;
    ++n;
  }
  if (n != 5) return 1;
  std::printf("dist_consumer ok (MPI %s)\n",
              sluice::MpiCommunicator::Available() ? "built" : "absent");
  return 0;
}
