// The training core's GPU backend: nn::Backend on a Device
// (docs/gpu.md, "The nn backend").
//
//   gpu::RegisterNnBackend();                          // once, at start-up
//   nn::Backend* b = *nn::GetBackend(Device::Gpu(0));
//
// Every method queues its work on one stream of the device and returns at
// once; ToHost, Synchronize, Sum and CountArgMaxMatches wait. Matrix
// products go through cuBLAS and convolutions through cuDNN when the
// libraries load (they are opened at run time, so a binary without a GPU
// needs neither); everything else, and the fallbacks, are sluice's own
// kernels (nn/cuda/internal/*.cu).
//
// Errors found by a kernel (a class id outside [0, classes) in
// CrossEntropy) cannot be returned by the call that queued it: they are
// returned, once, by the next call that waits, naming the method, the row
// and the value.
//
// On the host device (cpu:0) the same kernels run as plain loops on the
// stream's worker thread: a backend whose tensors are host memory (nn
// device "cpu:0", so they mix with the CPU backend's), for testing the GPU
// backend's arithmetic on machines without a GPU. It is not a fast CPU
// backend: use nn::GetBackend(Device::Cpu()) for that.
//
// Thread-safety: as nn::Backend.
#ifndef SLUICE_NN_CUDA_CUDA_BACKEND_H_
#define SLUICE_NN_CUDA_CUDA_BACKEND_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sluice/core/result.h"
#include "sluice/device/device_memory.h"
#include "sluice/device/stream.h"
#include "sluice/nn/backend.h"

namespace sluice::gpu {

// A new backend on `device`. Unavailable/NotFound for a GPU that is not
// there (GpuAvailability()'s reason).
Result<std::unique_ptr<nn::Backend>> NewNnBackend(const Device& device);
// The same, its tensors tagged as device `as` (by default `device`
// itself). With the host device cpu:0 and
// Device::Gpu(i), models placed on "gpu:i" run the GPU backend's code
// on the host: see RegisterNnBackendOnHost.
Result<std::unique_ptr<nn::Backend>> NewNnBackend(const Device& device, Device as);

// Makes nn::GetBackend(Device::Gpu(i)) return NewNnBackend(Device::Gpu(i))
// (made on first use). Idempotent; thread-safe. Linking this file registers
// it too, but a static library drops files nothing refers to: call it.
void RegisterNnBackend();

// The stream `backend` (made by NewNnBackend or RegisterNnBackend*) queues
// its work on: make it wait for a PrefetchToDevice batch
// (DeviceElement::WaitOn) and run the gpu image ops on it, so input, augment
// and training steps stay in order without blocking the host.
// InvalidArgument for any other backend (the CPU's).
Result<Stream*> NnBackendStream(nn::Backend& backend);

//   nn::Backend* b = *nn::GetBackend(Device::Gpu(0));
//   gpu::Stream* s = *gpu::NnBackendStream(*b);
//   auto it = *gpu::PrefetchToDevice(decoded.batch(32), s->device());
//   while (auto batch = *it.Next()) {
//     batch->WaitOn(*s);                                    // no host wait
//     auto x = *gpu::RandomFlipLeftRight((*batch)[0], rng, *s);
//     model.TrainStep(x, (*batch)[1]);   // gpu:0 tensors, the backend's device
//   }  // TrainStep returns the loss, so the step has run when the batch drops

// A step (any sequence of calls to a GPU nn backend: a custom training
// step) captured once and replayed as one Graph launch, tf.function's
// analogue:
//
//   SLUICE_ASSIGN_OR_RETURN(auto step, gpu::CaptureNnStep(*b, [&] { return MyStep(*b); }));
//   for (...) {
//     b->CopyFromHost(next_x, &x);     // inputs into the buffers the step read
//     step->Replay();                  // queued; returns at once
//     double loss = *b->Sum(loss_t);   // outputs from the buffers it wrote
//   }
//
// While the callback runs, the backend's work is recorded, not run, and
// the tensors it allocates are kept for the graph (each replay writes
// them). Calls that wait (ToHost, Synchronize, Sum, CountArgMaxMatches)
// fail with FailedPrecondition inside it, and so does the capture. Values
// passed by value are frozen into the graph: a learning rate, Adam's step
// count, a dropout seed. Capture steps whose scalars do not change (SGD at
// a fixed rate), or capture again when they do. Nothing else may queue on
// the backend while it captures. Thread-safety: Replay as the backend's
// methods.
// nn::Backend::Capture on a GPU backend (InvalidArgument for others).
using CapturedNnStep = nn::CapturedWork;
Result<std::unique_ptr<CapturedNnStep>> CaptureNnStep(nn::Backend& backend,
                                                      const std::function<Status()>& step);

// A convolution algorithm cuDNN runs for a backend's calls, and how it was
// chosen: one per operation, geometry and dtype seen so far.
struct ConvAlgorithm {
  std::string op;        // "Conv2DForward", "Conv2DBackwardData", "Conv2DBackwardFilter"
  std::string geometry;  // "x[32,256,256,3] filter 3x3x3->16 stride 1x1 pad 1,1"
  bool bfloat16 = false;
  // cuDNN's name: "IMPLICIT_PRECOMP_GEMM", "FFT", "ALGO_1", ... for the legacy
  // API's algorithms, with "(9 graph engines timed, none faster)" when the
  // graph API's engines were timed beside it; "graph engine 12 [FFT] (legacy
  // ALGO_1: 1.334 ms)" where one of those ran faster (docs/gpu.md).
  std::string algorithm;
  bool measured = false;  // timed by cudnnFind on the first call (else cuDNN's heuristics)
  double time_ms = -1;    // that time, when measured
  int64_t workspace_bytes = 0;
  bool deterministic = true;
  std::string ToString() const;
};
// The algorithms `backend` (a GPU backend) chose so far; empty when cuDNN
// does not serve it (no GPU, no libcudnn). InvalidArgument for other
// backends. Thread-safe.
Result<std::vector<ConvAlgorithm>> ConvAlgorithms(nn::Backend& backend);

// For tests and debugging without a GPU: makes nn::GetBackend(Gpu(i))
// return NewNnBackend(Device::Cpu(), Device::Gpu(i)) instead, so a
// whole model, its optimizer and its checkpoints take the GPU backend's code
// path (stream, deferred errors, the kernels as host loops) on any machine.
// Slow: the kernels are single-threaded loops. Call it before the first
// GetBackend(Gpu(i)); backends already made stay.
void RegisterNnBackendOnHost();

}  // namespace sluice::gpu

#endif  // SLUICE_NN_CUDA_CUDA_BACKEND_H_
