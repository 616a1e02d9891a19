// DLPack interop: sluice::Tensor to and from DLManagedTensor, without
// copying bytes. DLPack (https://dmlc.github.io/dlpack/) is how PyTorch,
// JAX, NumPy, CuPy and TVM hand each other tensors; this is version 0.6 of
// its header, Debian's libdlpack-dev.
//
//   DLManagedTensor* m = sluice::ToDLPack(batch_images).value();
//   at::Tensor t = at::fromDLPack(m);  // torch now owns m, and shares the bytes
//
// Ownership: ToDLPack's managed tensor holds a copy of the Tensor (so its
// Buffer) until its deleter runs; the caller, or the framework it hands the
// managed tensor to, must call that deleter exactly once. FromDLPack's
// Tensor takes the managed tensor over: its deleter runs when the last
// Tensor sharing the bytes (copies, slices, reshapes) is dropped, possibly
// on another thread (a pipeline worker's, say), so a producer's deleter
// must be safe to call on any thread.
//
// Devices: host memory is kDLCPU device 0; a tensor whose bytes are on gpu:N
// (Buffer::WrapDevice) is kDLCUDA device N. FromDLPack reads kDLCPU and
// kDLCUDAHost (pinned host memory) as host tensors and kDLCUDA device N as
// a tensor on gpu:N, whose bytes host code must never read.
//
// Dtypes (DLPack code, bits): bool (kDLUInt, 8) [the 0.6 header has no
// kDLBool, so a consumer sees uint8 bytes of 0 and 1], uint8 (kDLUInt, 8),
// int32 (kDLInt, 32), int64 (kDLInt, 64), float16 (kDLFloat, 16), bfloat16
// (kDLBfloat, 16), float32 (kDLFloat, 32), float64 (kDLFloat, 64). FromDLPack
// reads those and also DLPack 0.8's kDLBool (code 6, 8 bits) as bool;
// string tensors have no DLPack form.
//
// Headers: a framework's own, newer DLPack header (LibTorch's
// ATen/dlpack.h) shares the include guard of this 0.6 one and the layout
// of DLManagedTensor; include the framework's headers before this one
// (docs/interop.md).
//
// Thread-safety: both functions are reentrant. The bytes are shared, not
// copied: writes through one framework are seen by the other, with no
// synchronization but what the caller provides (for GPU memory: the
// streams that wrote it must have finished, or be ordered before the
// reader's).
#ifndef SLUICE_CORE_DLPACK_H_
#define SLUICE_CORE_DLPACK_H_

#include <dlpack/dlpack.h>

#include "sluice/core/result.h"
#include "sluice/core/tensor.h"

namespace sluice {

// Exports `tensor` as a DLManagedTensor sharing its bytes. The caller owns
// the result and must call its deleter exactly once. dl_tensor.data is the
// first element (raw_data(), so a slice's own start) with byte_offset 0;
// shape and explicit row-major strides (in elements) live as long as the
// managed tensor. InvalidArgument (naming the dtype) for a string tensor.
Result<DLManagedTensor*> ToDLPack(const Tensor& tensor);

// Imports a DLPack tensor without copying: the Tensor's first element is
// dl_tensor.data + byte_offset. On success the returned Tensor and every
// Tensor sharing its bytes own `managed`, whose deleter (if not null) runs
// once, when the last of them is dropped. On error nothing is taken: the
// caller still owns `managed`. InvalidArgument, naming what, for: a null
// `managed`, a dtype sluice has none for (int16, complex64, ...), lanes
// other than 1, a negative dimension or one whose element count overflows,
// strides that are not compact row-major (a dimension of size 1 may have
// any stride; a tensor with no elements, any strides), null data for a
// tensor with elements, and a device other than kDLCPU, kDLCUDAHost and
// kDLCUDA (or a negative CUDA device id).
Result<Tensor> FromDLPack(DLManagedTensor* managed);

}  // namespace sluice

#endif  // SLUICE_CORE_DLPACK_H_
