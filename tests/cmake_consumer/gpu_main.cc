// Uses an installed sluice's CUDA twins (sluice::ops_cuda): lists the GPUs (none is fine) and
// runs an image op on the host backend, which needs no GPU.
#include <cstdio>
#include <span>
#include <vector>

#include "sluice/device/device_memory.h"
#include "sluice/device/physical_devices.h"
#include "sluice/ops/cuda/image_ops.h"

namespace gpu = sluice::gpu;

int main() {
  std::printf("%zu GPU(s)\n", gpu::ListPhysicalDevices().size());
  auto stream = gpu::NewStream(sluice::Device::Cpu());
  const std::vector<float> pixels = {1, 2, 3, 4, 5, 6};
  auto image = sluice::Tensor::FromVector(std::span<const float>(pixels), sluice::Shape{1, 2, 3});
  if (!stream.ok() || !image.ok()) return 1;
  auto d = gpu::CopyToDevice(*image, **stream);
  if (!d.ok()) return 1;
  auto flipped = gpu::FlipLeftRight(*d, **stream);
  if (!flipped.ok()) return 1;
  auto back = gpu::CopyToHost(*flipped, **stream);
  if (!back.ok() || back->flat<float>()[0] != 4.0f) return 1;
  std::printf("gpu consumer ok\n");
  return 0;
}
