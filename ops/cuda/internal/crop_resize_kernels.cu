// The fused random-resized-crop batch (image_kernels.h, RunCropResizeBatch):
// crop window, bilinear resize, mirror and normalize of many images in one
// launch, run on a GPU or on the host.
#include "sluice/ops/cuda/internal/image_kernels.h"
#include "sluice/device/cuda/kernel_util.cuh"

namespace sluice::gpu_internal {
namespace {

// Output pixel p (row-major in the image's out_height x out_width) of image
// b of the launch: three channels.
SLUICE_HD void CropResizePixel(const CropResizeBatchArgs& a, int64_t b, int64_t p) {
  const int64_t out_w = a.out_width;
  const int64_t y = p / out_w;
  const int64_t x = p - y * out_w;
  const CropResizeImage& m = a.image[b];
  // Mirrored: the pixel the unmirrored resize writes at column out_w-1-x.
  const int64_t sx = m.flip ? out_w - 1 - x : x;
  const LerpTap ty = BilinearTap(y, m.scale_y, m.crop_height);
  const LerpTap tx = BilinearTap(sx, m.scale_x, m.crop_width);
  const int64_t row = static_cast<int64_t>(m.width) * 3;
  const uint8_t* corner = m.in + m.y0 * row + static_cast<int64_t>(m.x0) * 3;
  const uint8_t* top = corner + ty.lower * row;
  const uint8_t* bottom = corner + ty.upper * row;
  const int64_t left = tx.lower * 3, right = tx.upper * 3;
  const int64_t o = ((a.first + b) * a.out_height * out_w + p) * 3;
  for (int c = 0; c < 3; ++c) {
    // Horizontal lerps of both rows, then the vertical one: ops/'s order.
    const float tl = ToFloat(top[left + c]);
    const float t = Add(tl, Mul(Sub(ToFloat(top[right + c]), tl), tx.lerp));
    const float bl = ToFloat(bottom[left + c]);
    const float bt = Add(bl, Mul(Sub(ToFloat(bottom[right + c]), bl), tx.lerp));
    const float v = Add(t, Mul(Sub(bt, t), ty.lerp));
    StoreFloat(a.out, a.bf16, o + c, a.normalize ? Div(Sub(v, a.mean[c]), a.stddev[c]) : v);
  }
}

// blockIdx.y is the image; the x blocks stride over its pixels. The
// parameters stay in the kernel's parameter space (__grid_constant__: read
// in place, never copied per thread).
__global__ void CropResizeKernel(const __grid_constant__ CropResizeBatchArgs a) {
  const int64_t plane = a.out_height * a.out_width;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < plane;
       p += stride) {
    CropResizePixel(a, blockIdx.y, p);
  }
}

}  // namespace

int RunCropResizeBatch(const CropResizeBatchArgs& a, KernelTarget target) {
  const int64_t plane = a.out_height * a.out_width;
  if (a.count <= 0 || plane <= 0) return 0;
  if (target.cuda_stream == nullptr) {
    for (int64_t b = 0; b < a.count; ++b) {
      for (int64_t p = 0; p < plane; ++p) CropResizePixel(a, b, p);
    }
    return 0;
  }
  constexpr int64_t kThreads = 256;
  constexpr int64_t kMaxBlocks = 1024;  // per image; grid-stride beyond
  int64_t blocks = (plane + kThreads - 1) / kThreads;
  if (blocks > kMaxBlocks) blocks = kMaxBlocks;
  const dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(a.count));
  CropResizeKernel<<<grid, kThreads, 0, static_cast<cudaStream_t>(target.cuda_stream)>>>(a);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace sluice::gpu_internal
