// The tf.data tour of the tutorials, in C++: (year, price) pairs from
// from_tensor_slices, then map, shuffle and batch.
//
//   build/samples/tour
//
// Python, for comparison:
//   X = tf.constant([2013, 2014, 2015, 2016, 2017])
//   Y = tf.constant([12000, 14000, 15000, 16500, 17500])
//   dataset = tf.data.Dataset.from_tensor_slices((X, Y))
//   for x, y in dataset: print(x.numpy(), y.numpy())
#include <cstdio>

#include "command_line.h"
#include "sluice/pipeline/dataset.h"

int main(int argc, char** argv) {
  CLI::App app{"The tf.data tour: from_tensor_slices of (year, price) pairs, map, shuffle, batch."};
  if (std::optional<int> status = samples::ParseCommandLine(app, argc, argv)) return *status;
  using sluice::Dataset;
  using sluice::Element;
  using sluice::Tensor;
  const Tensor years = Tensor::FromVector<int32_t>({2013, 2014, 2015, 2016, 2017}).value();
  const Tensor prices = Tensor::FromVector<int32_t>({12000, 14000, 15000, 16500, 17500}).value();

  // Element i is (years[i], prices[i]); the first dimensions must match.
  Dataset dataset = Dataset::from_tensor_slices({years, prices}, {"year", "price"});
  if (!dataset.status().ok()) {
    std::fprintf(stderr, "%s\n", dataset.status().ToString().c_str());
    return 1;
  }
  std::printf("from_tensor_slices:\n");
  for (const Element& e : dataset) {  // throws sluice::Error on failure
    std::printf("%d %d\n", e[0].scalar<int32_t>(), e[1].scalar<int32_t>());
  }

  // Normalize as the linear-regression tutorial does, shuffle with a seed
  // (the same order every run), batch by two.
  auto normalize = [](Element e) -> sluice::Result<Element> {
    const float year = (static_cast<float>(e[0].scalar<int32_t>()) - 2013.0f) / 4.0f;
    const float price = (static_cast<float>(e[1].scalar<int32_t>()) - 12000.0f) / 5500.0f;
    return Element({Tensor::Scalar(year), Tensor::Scalar(price)}, {"year", "price"});
  };
  Dataset batches = dataset.map(normalize).shuffle(5, {.seed = 7}).batch(2);
  std::printf("map -> shuffle(5, seed 7) -> batch(2), %lld batches:\n",
              static_cast<long long>(batches.cardinality()));
  for (const Element& b : batches) {
    std::printf("year [");
    for (float v : b[0].flat<float>()) std::printf(" %.2f", v);
    std::printf(" ]  price [");
    for (float v : b[1].flat<float>()) std::printf(" %.3f", v);
    std::printf(" ]\n");
  }
  return 0;
}
