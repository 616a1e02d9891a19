// The C++ side of python/tests/test_cpp_agreement.py: a few pipelines with
// seeds, built with the C++ API, each printed as one JSON line
// {"name": ..., "values": [...]} (every int64 of every element, in order).
// The Python test builds the same pipelines with the Python API and checks
// that the elements and their order are the same.
#include <cstdio>
#include <string>
#include <vector>

#include "sluice/distribute/distribute.h"
#include "sluice/pipeline/dataset.h"

namespace {

using sluice::Dataset;
using sluice::Element;

int Print(const std::string& name, const Dataset& ds) {
  auto it = ds.iterator();
  if (!it.ok()) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), it.status().ToString().c_str());
    return 1;
  }
  std::string out = "{\"name\": \"" + name + "\", \"values\": [";
  bool first = true;
  for (;;) {
    auto e = it->next();
    if (!e.ok()) {
      std::fprintf(stderr, "%s: %s\n", name.c_str(), e.status().ToString().c_str());
      return 1;
    }
    if (!e->has_value()) break;
    for (const sluice::Tensor& t : (*e)->components()) {
      for (int64_t v : t.flat<int64_t>()) {
        out += (first ? "" : ", ") + std::to_string(v);
        first = false;
      }
    }
  }
  std::printf("%s]}\n", out.c_str());
  return 0;
}

Element Square(Element e) {
  const int64_t x = e[0].scalar<int64_t>();
  return Element({sluice::Tensor::Scalar<int64_t>(x * x)});
}

}  // namespace

int main() {
  int failed = 0;
  failed += Print("shuffle", Dataset::range(100).shuffle(50, {.seed = 3}));
  failed += Print("global_shuffle", Dataset::range(64).global_shuffle({.seed = 9}));
  failed += Print("map_shuffle_batch", Dataset::range(40)
                                           .map(Square, {.parallelism = sluice::kAutotune})
                                           .shuffle(16, {.seed = 5})
                                           .batch(6));
  failed += Print("interleave", Dataset::range(4).interleave(
                                    [](const Element& e) -> sluice::Result<Dataset> {
                                      const int64_t x = e[0].scalar<int64_t>();
                                      return Dataset::range(x * 10, x * 10 + 3);
                                    },
                                    {.cycle_length = 2, .block_length = 2}));
  failed += Print("shard", Dataset::range(20).global_shuffle({.seed = 1}).shard(3, 1));
  failed += Print("options_seed", Dataset::range(30).shuffle(30).with_options({.seed = 11}));
  failed += Print("repeat_reshuffle", Dataset::range(10).shuffle(10, {.seed = 4}).repeat(3));
  failed +=
      Print("distribute", sluice::DistributeDataset(Dataset::range(20).global_shuffle({.seed = 2}),
                                                    {.rank = 1, .world_size = 3}));
  return failed == 0 ? 0 : 1;
}
