// The built-in CPU backend's factory (nn/cpu/). Internal.
#ifndef SLUICE_NN_INTERNAL_CPU_FACTORY_H_
#define SLUICE_NN_INTERNAL_CPU_FACTORY_H_

#include <memory>

#include "sluice/core/result.h"
#include "sluice/nn/backend.h"

namespace sluice::nn_internal {

// InvalidArgument for a device other than cpu:0 to cpu:63.
Result<std::unique_ptr<nn::Backend>> MakeCpuBackend(Device device);

}  // namespace sluice::nn_internal

#endif  // SLUICE_NN_INTERNAL_CPU_FACTORY_H_
