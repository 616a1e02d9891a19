// Initializers: how a layer's weights start, with Keras's names and
// formulas, drawn from a seeded generator so runs are reproducible.
//
// fan_in / fan_out follow Keras: for a Dense kernel [in, out] they are in
// and out; for a conv filter [kh, kw, in, out], kh·kw·in and kh·kw·out.
//
// Thread-safety: Initializer is a value; SetRandomSeed/NextLayerSeed touch a
// process-wide counter under a lock.
#ifndef SLUICE_NN_INITIALIZERS_H_
#define SLUICE_NN_INITIALIZERS_H_

#include <cstdint>
#include <string_view>

#include "sluice/core/result.h"
#include "sluice/core/rng.h"
#include "sluice/core/tensor.h"

namespace sluice::nn {

struct Initializer {
  enum class Kind {
    kZeros,
    kOnes,
    kConstant,       // value
    kGlorotUniform,  // U(-l, l), l = sqrt(6 / (fan_in + fan_out)); Keras's default kernel
    kGlorotNormal,   // truncated normal, stddev sqrt(2 / (fan_in + fan_out))
    kHeUniform,      // U(-l, l), l = sqrt(6 / fan_in)
    kHeNormal,       // truncated normal, stddev sqrt(2 / fan_in)
    kRandomUniform,  // U(min, max)
    kRandomNormal,   // N(mean, stddev)
  };
  Kind kind = Kind::kZeros;
  float value = 0.0f;                 // kConstant
  float min = -0.05f, max = 0.05f;    // kRandomUniform (Keras's defaults)
  float mean = 0.0f, stddev = 0.05f;  // kRandomNormal

  static Initializer Zeros() { return {Kind::kZeros}; }
  static Initializer Ones() { return {Kind::kOnes}; }
  static Initializer Constant(float v) { return {.kind = Kind::kConstant, .value = v}; }
  static Initializer GlorotUniform() { return {Kind::kGlorotUniform}; }
  static Initializer HeNormal() { return {Kind::kHeNormal}; }
  // Keras's names: "zeros", "ones", "glorot_uniform", "glorot_normal",
  // "he_uniform", "he_normal", "random_uniform", "random_normal".
  static Result<Initializer> Parse(std::string_view name);
};

// A float32 host tensor of `shape` filled by `init`. fan_in/fan_out are
// computed from the shape as Keras does (rank 2: [in, out]; rank 4 HWIO).
Result<Tensor> InitialValue(const Initializer& init, const Shape& shape, Rng& rng);

// Sets the seed every layer built afterwards derives its weights' generator
// from (as keras.utils.set_random_seed). The default seed is 0, so runs are
// reproducible unless a seed is set differently.
void SetRandomSeed(uint64_t seed);
// A generator for the next layer that builds weights: stream n of the
// global seed for the n-th layer built since the seed was set.
Rng NextLayerRng();

}  // namespace sluice::nn

#endif  // SLUICE_NN_INITIALIZERS_H_
