// --device gpu for the training samples: registers the GPU backend of nn
// when sluice was built with CUDA (CMake defines
// SLUICE_SAMPLES_WITH_GPU then); otherwise "gpu" stays NotFound with the
// reason. One call at the top of main().
#ifndef SLUICE_SAMPLES_GPU_SUPPORT_H_
#define SLUICE_SAMPLES_GPU_SUPPORT_H_

#ifdef SLUICE_SAMPLES_WITH_GPU
#include "sluice/nn/cuda/cuda_backend.h"
#endif

namespace samples {

inline void EnableGpuDevices() {
#ifdef SLUICE_SAMPLES_WITH_GPU
  sluice::gpu::RegisterNnBackend();
#endif
}

}  // namespace samples

#endif  // SLUICE_SAMPLES_GPU_SUPPORT_H_
