#include "sluice/nn/initializers.h"

#include <cmath>
#include <mutex>
#include <string>

namespace sluice::nn {

Result<Initializer> Initializer::Parse(std::string_view name) {
  if (name == "zeros") return Zeros();
  if (name == "ones") return Ones();
  if (name == "glorot_uniform") return GlorotUniform();
  if (name == "glorot_normal") return Initializer{Kind::kGlorotNormal};
  if (name == "he_uniform") return Initializer{Kind::kHeUniform};
  if (name == "he_normal") return HeNormal();
  if (name == "random_uniform") return Initializer{Kind::kRandomUniform};
  if (name == "random_normal") return Initializer{Kind::kRandomNormal};
  return Status::InvalidArgument("unknown initializer \"" + std::string(name) + "\"");
}

namespace {

void Fans(const Shape& shape, double* fan_in, double* fan_out) {
  if (shape.rank() == 0) {
    *fan_in = *fan_out = 1;
  } else if (shape.rank() == 1) {
    *fan_in = *fan_out = static_cast<double>(shape.dim(0));
  } else {
    // Keras: receptive field = product of all but the last two dims.
    double receptive = 1;
    for (int i = 0; i + 2 < shape.rank(); ++i) receptive *= static_cast<double>(shape.dim(i));
    *fan_in = receptive * static_cast<double>(shape.dim(shape.rank() - 2));
    *fan_out = receptive * static_cast<double>(shape.dim(shape.rank() - 1));
  }
}

// Keras's truncated normal: redraw values beyond two standard deviations.
// Its variance scaling divides stddev by 0.8796..., the stddev of a unit
// normal truncated at ±2, so the result has the requested variance.
float TruncatedNormal(Rng& rng, double stddev) {
  for (;;) {
    double z = rng.Normal();
    if (std::abs(z) <= 2.0) return static_cast<float>(z * stddev / 0.87962566103423978);
  }
}

}  // namespace

Result<Tensor> InitialValue(const Initializer& init, const Shape& shape, Rng& rng) {
  SLUICE_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(DType::kFloat32, shape));
  std::span<float> v = t.flat<float>();
  double fan_in, fan_out;
  Fans(shape, &fan_in, &fan_out);
  using K = Initializer::Kind;
  switch (init.kind) {
    case K::kZeros:
    case K::kOnes:
    case K::kConstant: {
      float c = init.kind == K::kZeros ? 0.0f : init.kind == K::kOnes ? 1.0f : init.value;
      for (float& x : v) x = c;
      break;
    }
    case K::kGlorotUniform:
    case K::kHeUniform: {
      double limit = init.kind == K::kGlorotUniform ? std::sqrt(6.0 / (fan_in + fan_out))
                                                    : std::sqrt(6.0 / fan_in);
      for (float& x : v) x = static_cast<float>((2.0 * rng.UniformDouble() - 1.0) * limit);
      break;
    }
    case K::kGlorotNormal:
    case K::kHeNormal: {
      double stddev = init.kind == K::kGlorotNormal ? std::sqrt(2.0 / (fan_in + fan_out))
                                                    : std::sqrt(2.0 / fan_in);
      for (float& x : v) x = TruncatedNormal(rng, stddev);
      break;
    }
    case K::kRandomUniform:
      for (float& x : v) x = rng.Uniform(init.min, init.max);
      break;
    case K::kRandomNormal:
      for (float& x : v) x = static_cast<float>(init.mean + init.stddev * rng.Normal());
      break;
  }
  return t;
}

namespace {
std::mutex seed_mu;
uint64_t global_seed = 0;
uint64_t layers_built = 0;
}  // namespace

void SetRandomSeed(uint64_t seed) {
  std::lock_guard lock(seed_mu);
  global_seed = seed;
  layers_built = 0;
}

Rng NextLayerRng() {
  std::lock_guard lock(seed_mu);
  return Rng(global_seed, layers_built++);
}

}  // namespace sluice::nn
