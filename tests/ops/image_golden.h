// Reads the TensorFlow golden data of tests/data/ops/ (made by
// make_resize_golden.py): tensors from image_golden.bin, cases from the
// image_golden.txt manifest. Header-only helper for the image-op tests; in
// its own namespace so that its inline functions never collide with other
// test helpers' (an inline function of the same signature in another
// header would silently replace one of them at link time).
#ifndef SLUICE_TESTS_OPS_IMAGE_GOLDEN_H_
#define SLUICE_TESTS_OPS_IMAGE_GOLDEN_H_

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "sluice/core/tensor.h"
#include "test_util.h"

namespace sluice::image_golden {

class ImageGolden {
 public:
  // Loaded once per process; aborts the test binary if the files are bad.
  static const ImageGolden& Get() {
    static const ImageGolden* golden = new ImageGolden();
    return *golden;
  }

  const Tensor& tensor(const std::string& name) const {
    auto it = tensors_.find(name);
    if (it == tensors_.end()) {
      ADD_FAILURE() << "no golden tensor " << name;
      static const Tensor empty;
      return empty;
    }
    return it->second;
  }
  // Manifest case lines of one kind ("resize", "rot90", ...), split into
  // fields; field 0 is the kind.
  std::vector<std::vector<std::string>> Cases(const std::string& kind) const {
    std::vector<std::vector<std::string>> out;
    for (const auto& c : cases_) {
      if (c[0] == kind) out.push_back(c);
    }
    return out;
  }

 private:
  ImageGolden() {
    const std::string blob = testing::ReadFileOrDie(testing::TestDataPath("ops/image_golden.bin"));
    std::istringstream manifest(
        testing::ReadFileOrDie(testing::TestDataPath("ops/image_golden.txt")));
    std::string line;
    while (std::getline(manifest, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream fields(line);
      std::vector<std::string> f;
      for (std::string x; fields >> x;) f.push_back(x);
      if (f[0] != "tensor") {
        cases_.push_back(f);
        continue;
      }
      // tensor NAME DTYPE DIMS OFFSET NBYTES
      std::vector<int64_t> dims;
      if (f[3] != "-") {
        std::istringstream ds(f[3]);
        for (std::string d; std::getline(ds, d, ',');) dims.push_back(std::stoll(d));
      }
      const DType dtype = DTypeFromName(f[2]).value();
      Tensor t = Tensor::Allocate(dtype, Shape(dims)).value();
      const size_t offset = std::stoull(f[4]), n = std::stoull(f[5]);
      if (n != t.byte_size() || offset + n > blob.size()) {
        ADD_FAILURE() << "bad golden tensor line: " << line;
        continue;
      }
      if (n > 0) std::memcpy(t.raw_data(), blob.data() + offset, n);
      tensors_.emplace(f[1], std::move(t));
    }
  }

  std::map<std::string, Tensor> tensors_;
  std::vector<std::vector<std::string>> cases_;
};

// Element i of a numeric tensor as double.
inline double ElementAsDouble(const Tensor& t, int64_t i) {
  return VisitDType(t.dtype(), [&](auto v) -> double {
    using T = decltype(v);
    if constexpr (std::is_same_v<T, std::string_view>) {
      return 0.0;
    } else {
      return static_cast<double>(static_cast<float>(t.flat<T>()[i]));
    }
  });
}

// Largest |a - b| over the elements (NaN matching NaN and equal infinities
// count as 0); infinity if shapes or dtypes differ.
inline double MaxAbsDiff(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || !(a.shape() == b.shape())) return INFINITY;
  double worst = 0;
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    const double x = ElementAsDouble(a, i), y = ElementAsDouble(b, i);
    if ((std::isnan(x) && std::isnan(y)) || x == y) continue;
    worst = std::max(worst, std::abs(x - y));
  }
  return worst;
}

// Largest |element|, for scaling tolerances.
inline double MaxAbs(const Tensor& t) {
  double m = 0;
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    const double x = ElementAsDouble(t, i);
    if (std::isfinite(x)) m = std::max(m, std::abs(x));
  }
  return m;
}

}  // namespace sluice::image_golden

#endif  // SLUICE_TESTS_OPS_IMAGE_GOLDEN_H_
