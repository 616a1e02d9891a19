// The built-in CPU backend's factory (nn/cpu/). Internal.
#ifndef SLUICE_NN_INTERNAL_CPU_FACTORY_H_
#define SLUICE_NN_INTERNAL_CPU_FACTORY_H_

#include <memory>

#include "sluice/core/result.h"
#include "sluice/nn/backend.h"

namespace sluice::nn::internal {

// InvalidArgument for a CPU index other than 0.
Result<std::unique_ptr<Backend>> MakeCpuBackend(Device device);

}  // namespace sluice::nn::internal

#endif  // SLUICE_NN_INTERNAL_CPU_FACTORY_H_
