// cuDNN opened at run time, and the backend's convolutions with it
// (cudnn_lib.h).
//
// The legacy convolution API (deprecated in cuDNN 9 but shipped and
// supported): tensor, filter and convolution descriptors, algorithms chosen
// by measurement (cudnnFind*AlgorithmEx on the call's own buffers, once per
// geometry and backend; cudnnGet*Algorithm_v7's heuristics while a step is
// being captured or with SLUICE_CUDNN_FIND=0), workspace from
// GpuBackend::Scratch. cuDNN's NHWC filter layout is KRSC
// [out, kh, kw, in]; ours is HWIO, so filters are transposed into scratch
// by a ForEach kernel (and the filter gradient back).
#include "sluice/nn/cuda/internal/cudnn_lib.h"

#include <cuda_runtime.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "sluice/nn/cuda/internal/conv_kernels.h"
#include "sluice/nn/cuda/internal/cudnn_api.h"
#include "sluice/nn/cuda/internal/cudnn_graph.h"
#include "sluice/device/cuda/cuda_error.h"
#include "sluice/device/runtime.h"
#include "sluice/device/dynamic_library.h"

namespace sluice::gpu_backend_internal {

const CudnnLibrary& GetCudnnLibrary() {
  static const CudnnLibrary* const library = [] {
    auto* lib = new CudnnLibrary;
    Result<gpu_internal::DynamicLibrary> handle =
        gpu_internal::DynamicLibrary::OpenFirst("libcudnn.so.9", {"libcudnn.so.9", "libcudnn.so"});
    if (!handle.ok()) {
      lib->load.error = std::string(handle.status().message());
      return lib;
    }
    auto resolve = [&](const char* name, auto& fn) {
      (handle->Resolve(name, &fn) ? lib->load.resolved : lib->load.missing).push_back(name);
    };
#define SLUICE_CUDNN_RESOLVE(name) resolve(#name, lib->api.name);
    SLUICE_CUDNN_FUNCTIONS(SLUICE_CUDNN_RESOLVE)
#undef SLUICE_CUDNN_RESOLVE
    if (!lib->load.missing.empty()) {
      lib->load.error = "libcudnn.so.9 lacks";
      for (const std::string& m : lib->load.missing) lib->load.error += " " + m;
      return lib;
    }
    lib->load.version = static_cast<int>(lib->api.cudnnGetVersion());
    if (lib->load.version / 10000 != CUDNN_MAJOR) {
      lib->load.error = "libcudnn is version " + std::to_string(lib->load.version) +
                        "; sluice was built against cuDNN " + std::to_string(CUDNN_MAJOR);
      return lib;
    }
    lib->load.loaded = true;
    return lib;
  }();
  return *library;
}

Status CudnnError(const CudnnApi& api, std::string_view call, cudnnStatus_t s) {
  return Status::Internal(std::string(call) + " failed: " + api.cudnnGetErrorString(s));
}

std::string_view ConvOpName(ConvOp op) {
  switch (op) {
    case ConvOp::kForward: return "Conv2DForward";
    case ConvOp::kBackwardData: return "Conv2DBackwardData";
    case ConvOp::kBackwardFilter: return "Conv2DBackwardFilter";
  }
  return "Conv2D";
}

const CudnnPolicy& GetCudnnPolicy() {
  static const CudnnPolicy policy = [] {
    CudnnPolicy p;
    auto flag = [](const char* name, bool fallback) {
      const char* v = std::getenv(name);
      if (v == nullptr || *v == 0) return fallback;
      return !(std::string_view(v) == "0" || std::string_view(v) == "false");
    };
    p.find = flag("SLUICE_CUDNN_FIND", true);
    p.graph = flag("SLUICE_CUDNN_GRAPH", true);
    p.deterministic = flag("SLUICE_CUDNN_DETERMINISTIC", false);
    if (const char* mb = std::getenv("SLUICE_CUDNN_WORKSPACE_MB"); mb != nullptr && *mb != 0) {
      // A whole number of MiB up to 1 TiB; anything else keeps the default
      // and says so (no status reaches the caller from here).
      char* end = nullptr;
      errno = 0;
      const long long v = std::strtoll(mb, &end, 10);
      if (errno == 0 && *end == 0 && v >= 0 && v <= (1ll << 20)) {
        p.workspace_limit = static_cast<size_t>(v) << 20;
      } else {
        std::fprintf(stderr,
                     "sluice: SLUICE_CUDNN_WORKSPACE_MB=%s is not a number of MiB in [0, 1048576]; "
                     "using %zu\n",
                     mb, p.workspace_limit >> 20);
      }
    }
    return p;
  }();
  return policy;
}

namespace {

using gpu::ConvAlgorithm;
using gpu::backend::GpuBackend;
using nn::kit::ConvGeometry;

// The descriptors of one convolution: x [n, in_c, in_h, in_w] and y (the
// output) in NHWC, the filter in KRSC, cross-correlation with g's top/left
// padding on both sides. float32 data gets FMA math (CUDNN_DEFAULT_MATH
// would let cuDNN use TF32 tensor cores on Ampere and later); bfloat16 data
// gets tensor-op math with float32 accumulation (cuDNN's bfloat16 config:
// x, w, y bfloat16, the convolution's compute type float).
class Descriptors {
 public:
  explicit Descriptors(const CudnnApi& api) : api_(api) {}
  ~Descriptors() {
    if (x != nullptr) api_.cudnnDestroyTensorDescriptor(x);
    if (y != nullptr) api_.cudnnDestroyTensorDescriptor(y);
    if (w != nullptr) api_.cudnnDestroyFilterDescriptor(w);
    if (conv != nullptr) api_.cudnnDestroyConvolutionDescriptor(conv);
  }
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;

  // REQUIRES: g's sizes fit int (FitsCudnn).
  Status Set(const ConvGeometry& g, bool bf16) {
    auto i = [](int64_t v) { return static_cast<int>(v); };
    const cudnnDataType_t data = bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
    SLUICE_CUDNN_CALL(api_, cudnnCreateTensorDescriptor, &x);
    SLUICE_CUDNN_CALL(api_, cudnnCreateTensorDescriptor, &y);
    SLUICE_CUDNN_CALL(api_, cudnnCreateFilterDescriptor, &w);
    SLUICE_CUDNN_CALL(api_, cudnnCreateConvolutionDescriptor, &conv);
    SLUICE_CUDNN_CALL(api_, cudnnSetTensor4dDescriptor, x, CUDNN_TENSOR_NHWC, data, i(g.batch),
                      i(g.in_c), i(g.in_h), i(g.in_w));
    SLUICE_CUDNN_CALL(api_, cudnnSetTensor4dDescriptor, y, CUDNN_TENSOR_NHWC, data, i(g.batch),
                      i(g.out_c), i(g.out_h), i(g.out_w));
    SLUICE_CUDNN_CALL(api_, cudnnSetFilter4dDescriptor, w, data, CUDNN_TENSOR_NHWC, i(g.out_c),
                      i(g.in_c), i(g.kernel_h), i(g.kernel_w));
    SLUICE_CUDNN_CALL(api_, cudnnSetConvolution2dDescriptor, conv, i(g.pad_top), i(g.pad_left),
                      i(g.stride_h), i(g.stride_w), 1, 1, CUDNN_CROSS_CORRELATION,
                      CUDNN_DATA_FLOAT);
    SLUICE_CUDNN_CALL(api_, cudnnSetConvolutionMathType, conv,
                      bf16 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH);
    return Status::OK();
  }

  // cuDNN's output dims {n, c, h, w}.
  Result<std::array<int, 4>> OutputDims() const {
    std::array<int, 4> d{};
    SLUICE_CUDNN_CALL(api_, cudnnGetConvolution2dForwardOutputDim, conv, x, w, &d[0], &d[1], &d[2],
                      &d[3]);
    return d;
  }

  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;

 private:
  const CudnnApi& api_;
};

// Whether cuDNN's legacy API can take g: every size positive, dims in
// int, and fewer than 2^31 elements per tensor.
bool FitsCudnn(const ConvGeometry& g) {
  constexpr int64_t kMax = INT_MAX;
  for (int64_t v :
       {g.batch, g.in_h, g.in_w, g.in_c, g.out_h, g.out_w, g.out_c, g.kernel_h, g.kernel_w}) {
    if (v <= 0 || v > kMax) return false;
  }
  auto fits = [&](int64_t a, int64_t b, int64_t c, int64_t d) {
    return a <= kMax / b && a * b <= kMax / c && a * b * c <= kMax / d;
  };
  return fits(g.batch, g.in_h, g.in_w, g.in_c) && fits(g.batch, g.out_h, g.out_w, g.out_c) &&
         fits(g.kernel_h, g.kernel_w, g.in_c, g.out_c);
}

// An algorithm (the value of op's cudnnConvolution*Algo_t), the
// workspace bytes it needs, and how it was chosen.
struct Algo {
  int algo = 0;
  size_t workspace = 0;
  bool measured = false;  // by cudnnFind*AlgorithmEx (else heuristics)
  float time_ms = -1;     // cuDNN's measured time, when measured
  bool deterministic = true;
  // The graph API's engine, where it timed faster than `algo` (which
  // still runs for operands the plan's alignment does not take).
  std::shared_ptr<const GraphConvPlan> graph;
  float legacy_ms = -1;  // `algo` timed beside the graph engines
  int graph_timed = 0;   // graph engine configurations timed
};

// The entry of cuDNN's ranking to use: the first that worked (for float32,
// without tensor-op math; measured ones within the workspace limit); with
// the deterministic policy, the first deterministic one where cuDNN has
// one. The ranking is by measured time for
// cudnnFind*, by expected speed for the heuristics. nullptr when none
// qualifies.
template <typename Perf>
const Perf* PickAlgo(const Perf* perf, int count, bool tensor_ops, bool measured) {
  const CudnnPolicy& policy = GetCudnnPolicy();
  auto usable = [&](const Perf& p) {
    if (p.status != CUDNN_STATUS_SUCCESS) return false;
    if (!tensor_ops && (p.mathType == CUDNN_TENSOR_OP_MATH ||
                        p.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)) {
      return false;
    }
    return !measured || p.memory <= policy.workspace_limit;
  };
  if (policy.deterministic) {
    for (int i = 0; i < count; ++i) {
      if (usable(perf[i]) && perf[i].determinism == CUDNN_DETERMINISTIC) return &perf[i];
    }
  }
  for (int i = 0; i < count; ++i) {
    if (usable(perf[i])) return &perf[i];
  }
  return nullptr;
}

// One backend's cuDNN handle, bound to its stream; handle null when cuDNN
// does not serve this backend (kept, so the lookup is not repeated).
struct DnnState {
  const CudnnApi* api = nullptr;
  cudnnHandle_t handle = nullptr;
  int ordinal = -1;
  std::mutex mu;                                       // one call sequence at a time on the handle
  using Key = std::tuple<ConvOp, bool, ConvGeometry>;  // bool: bfloat16
  std::map<Key, Algo> algos;                           // guarded by mu

  DnnState() = default;
  DnnState(const DnnState&) = delete;
  DnnState& operator=(const DnnState&) = delete;
  ~DnnState() {
    if (handle == nullptr) return;
    gpu_internal::ScopedDevice scope(ordinal);
    algos.clear();  // the plans first: they were built on the handle
    (void)api->cudnnDestroy(handle);
  }
};

Result<std::shared_ptr<DnnState>> MakeState(GpuBackend& backend) {
  auto state = std::make_shared<DnnState>();
  const CudnnLibrary& lib = GetCudnnLibrary();
  if (!lib.load.loaded) return state;
  SLUICE_ASSIGN_OR_RETURN(const gpu_internal::DeviceRuntime* runtime,
                          gpu_internal::GetDeviceRuntime(backend.gpu_device()));
  gpu_internal::ScopedDevice scope(runtime->cuda_ordinal);
  if (!scope.status().ok()) return state;
  cudnnHandle_t handle = nullptr;
  if (lib.api.cudnnCreate(&handle) != CUDNN_STATUS_SUCCESS) return state;
  if (lib.api.cudnnSetStream(handle, static_cast<cudaStream_t>(backend.stream().native_handle())) !=
      CUDNN_STATUS_SUCCESS) {
    (void)lib.api.cudnnDestroy(handle);
    return state;
  }
  state->api = &lib.api;
  state->handle = handle;
  state->ordinal = runtime->cuda_ordinal;
  return state;
}

// The tensors of one call: x and dy as inputs where op reads them, the
// HWIO filter (input, or the output of kBackwardFilter), and out (y or dx);
// float32, or bfloat16 when bf16 (dfilter: when dfilter_bf16).
struct Operands {
  const void* x = nullptr;
  const void* dy = nullptr;
  const void* filter = nullptr;
  void* dfilter = nullptr;
  void* out = nullptr;
  bool bf16 = false;
  bool dfilter_bf16 = false;
};

// The buffers cudnnFind*AlgorithmEx runs op on: the call's own operands
// (outputs it may overwrite: the call writes them next), the KRSC filter
// scratch `w` and a workspace of `ws_size` bytes.
struct FindBuffers {
  const Operands* v = nullptr;
  void* w = nullptr;
  void* ws = nullptr;
  size_t ws_size = 0;
};

// op's algorithm for g, from the cache, else measured with cudnnFind on
// `find` (null: cuDNN's heuristics, not cached, so a later eager call
// measures). REQUIRES: s.mu held.
Result<Algo> ChooseAlgo(DnnState& s, ConvOp op, const ConvGeometry& g, bool bf16,
                        const Descriptors& d, const FindBuffers* find) {
  const DnnState::Key key{op, bf16, g};
  if (auto it = s.algos.find(key); it != s.algos.end()) return it->second;
  const CudnnApi& api = *s.api;
  Algo a;
  bool found = false;
  int count = 0;
  auto take = [&](const auto* p, bool measured) {
    if (p == nullptr) return;
    found = true;
    a.algo = static_cast<int>(p->algo);
    a.measured = measured;
    a.time_ms = measured ? p->time : -1.0f;
    a.deterministic = p->determinism == CUDNN_DETERMINISTIC;
  };
  switch (op) {
    case ConvOp::kForward: {
      cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      if (find != nullptr && api.cudnnFindConvolutionForwardAlgorithmEx(
                                 s.handle, d.x, find->v->x, d.w, find->w, d.conv, d.y, find->v->out,
                                 CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, perf, find->ws,
                                 find->ws_size) == CUDNN_STATUS_SUCCESS) {
        take(PickAlgo(perf, count, bf16, true), true);
      }
      if (!found) {
        SLUICE_CUDNN_CALL(api, cudnnGetConvolutionForwardAlgorithm_v7, s.handle, d.x, d.w, d.conv,
                          d.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, perf);
        take(PickAlgo(perf, count, bf16, false), false);
        if (!found) break;
      }
      SLUICE_CUDNN_CALL(api, cudnnGetConvolutionForwardWorkspaceSize, s.handle, d.x, d.w, d.conv,
                        d.y, static_cast<cudnnConvolutionFwdAlgo_t>(a.algo), &a.workspace);
      break;
    }
    case ConvOp::kBackwardData: {
      cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
      if (find != nullptr && api.cudnnFindConvolutionBackwardDataAlgorithmEx(
                                 s.handle, d.w, find->w, d.y, find->v->dy, d.conv, d.x,
                                 find->v->out, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &count, perf,
                                 find->ws, find->ws_size) == CUDNN_STATUS_SUCCESS) {
        take(PickAlgo(perf, count, bf16, true), true);
      }
      if (!found) {
        SLUICE_CUDNN_CALL(api, cudnnGetConvolutionBackwardDataAlgorithm_v7, s.handle, d.w, d.y,
                          d.conv, d.x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &count, perf);
        take(PickAlgo(perf, count, bf16, false), false);
        if (!found) break;
      }
      SLUICE_CUDNN_CALL(api, cudnnGetConvolutionBackwardDataWorkspaceSize, s.handle, d.w, d.y,
                        d.conv, d.x, static_cast<cudnnConvolutionBwdDataAlgo_t>(a.algo),
                        &a.workspace);
      break;
    }
    case ConvOp::kBackwardFilter: {
      cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
      if (find != nullptr && api.cudnnFindConvolutionBackwardFilterAlgorithmEx(
                                 s.handle, d.x, find->v->x, d.y, find->v->dy, d.conv, d.w, find->w,
                                 CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &count, perf, find->ws,
                                 find->ws_size) == CUDNN_STATUS_SUCCESS) {
        take(PickAlgo(perf, count, bf16, true), true);
      }
      if (!found) {
        SLUICE_CUDNN_CALL(api, cudnnGetConvolutionBackwardFilterAlgorithm_v7, s.handle, d.x, d.y,
                          d.conv, d.w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &count, perf);
        take(PickAlgo(perf, count, bf16, false), false);
        if (!found) break;
      }
      SLUICE_CUDNN_CALL(api, cudnnGetConvolutionBackwardFilterWorkspaceSize, s.handle, d.x, d.y,
                        d.conv, d.w, static_cast<cudnnConvolutionBwdFilterAlgo_t>(a.algo),
                        &a.workspace);
      break;
    }
  }
  if (!found) {
    return Status::FailedPrecondition("cuDNN offers no algorithm without tensor-op math");
  }
  if (find != nullptr) s.algos.emplace(key, a);
  return a;
}

// Sets `d` for g; an error when cuDNN cannot serve the call.
Status SetUp(const ConvGeometry& g, bool bf16, Descriptors& d) {
  SLUICE_RETURN_IF_ERROR(d.Set(g, bf16));
  SLUICE_ASSIGN_OR_RETURN(const auto dims, d.OutputDims());
  const std::array<int, 4> want = {static_cast<int>(g.batch), static_cast<int>(g.out_c),
                                   static_cast<int>(g.out_h), static_cast<int>(g.out_w)};
  if (dims != want) return Status::FailedPrecondition("cuDNN's output shape differs");
  return Status::OK();
}

// Whether `backend`'s stream is recording a graph (cudnnFind would break
// the capture: it waits for the device).
bool Capturing(GpuBackend& backend) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  const cudaError_t e =
      cudaStreamIsCapturing(static_cast<cudaStream_t>(backend.stream().native_handle()), &status);
  return e != cudaSuccess || status != cudaStreamCaptureStatusNone;
}

// Queues op's convolution: x or dy and the KRSC filter `w` in, v.out or
// (kBackwardFilter) `w` out, with `ws` (algo.workspace bytes).
Status Execute(const DnnState& s, ConvOp op, const Descriptors& d, const Algo& algo, void* ws,
               void* w, const Operands& v) {
  const CudnnApi& api = *s.api;
  const float one = 1.0f, zero = 0.0f;
  switch (op) {
    case ConvOp::kForward:
      SLUICE_CUDNN_CALL(api, cudnnConvolutionForward, s.handle, &one, d.x, v.x, d.w, w, d.conv,
                        static_cast<cudnnConvolutionFwdAlgo_t>(algo.algo), ws, algo.workspace,
                        &zero, d.y, v.out);
      return Status::OK();
    case ConvOp::kBackwardData:
      SLUICE_CUDNN_CALL(api, cudnnConvolutionBackwardData, s.handle, &one, d.w, w, d.y, v.dy,
                        d.conv, static_cast<cudnnConvolutionBwdDataAlgo_t>(algo.algo), ws,
                        algo.workspace, &zero, d.x, v.out);
      return Status::OK();
    case ConvOp::kBackwardFilter:
      SLUICE_CUDNN_CALL(api, cudnnConvolutionBackwardFilter, s.handle, &one, d.x, v.x, d.y, v.dy,
                        d.conv, static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo.algo), ws,
                        algo.workspace, &zero, d.w, w);
      return Status::OK();
  }
  return Status::Internal("unknown convolution");
}

// Times op's graph-API engines (cudnn_graph.h) beside the legacy
// algorithm `a` just chosen, on the same buffers and the same clock, and
// keeps the faster in `a`. Nothing changes when the operands miss the
// graph's alignment or no engine runs. REQUIRES: s.mu held; the stream is
// not capturing; find's workspace holds a.workspace bytes.
void AddGraphEngine(DnnState& s, GpuBackend& backend, ConvOp op, const ConvGeometry& g,
                    const Descriptors& d, const FindBuffers& find, Algo& a) {
  const Operands& v = *find.v;
  void* x = op == ConvOp::kBackwardData ? v.out : const_cast<void*>(v.x);
  void* y = op == ConvOp::kForward ? v.out : const_cast<void*>(v.dy);
  if (!GraphConvPlan::Aligned(x, find.w, y)) return;
  void* stream = backend.stream().native_handle();
  Result<float> legacy =
      TimeOnStream(stream, [&] { return Execute(s, op, d, a, find.ws, find.w, v); });
  if (!legacy.ok()) return;
  a.legacy_ms = *legacy;
  Result<GraphConvChoice> choice = FindGraphConvPlan(*s.api, s.handle, stream, op, g, v.bf16, x,
                                                     find.w, y, find.ws, find.ws_size);
  if (!choice.ok()) return;
  a.graph_timed = choice->timed;
  if (choice->time_ms < *legacy) {
    a.deterministic = choice->plan->deterministic();
    a.time_ms = choice->time_ms;
    a.graph = std::move(choice->plan);
  }
}

Result<bool> Run(GpuBackend& backend, ConvOp op, const ConvGeometry& g, const Operands& v) {
  // cuDNN pads both sides alike: asymmetric SAME padding (an even kernel,
  // or a stride that leaves an odd total) stays with the caller's kernels.
  if (!backend.on_gpu() || !g.symmetric_padding() || !FitsCudnn(g)) return false;
  Result<DnnState*> state =
      backend.State<DnnState>(GpuBackend::Slot::kDnn, [&backend] { return MakeState(backend); });
  if (!state.ok()) return state.status();
  DnnState& s = **state;
  if (s.handle == nullptr) return false;
  std::lock_guard lock(s.mu);
  gpu_internal::ScopedDevice scope(s.ordinal);
  if (!scope.status().ok()) return false;
  Descriptors d(*s.api);
  if (!SetUp(g, v.bf16, d).ok()) return false;
  Result<DeviceTensor> krsc = backend.Scratch(v.bf16 ? DType::kBFloat16 : DType::kFloat32,
                                              Shape{g.kernel_h * g.kernel_w * g.in_c * g.out_c});
  if (!krsc.ok()) return false;
  void* w = krsc->raw_data();
  const std::string_view method = ConvOpName(op);
  FilterTransposeArgs t{v.filter, w, g.kernel_h, g.kernel_w, g.in_c, g.out_c, true, v.bf16, v.bf16};
  // The filter goes to scratch first, so that measuring reads real values
  // (a false below leaves nothing but scratch written).
  if (op != ConvOp::kBackwardFilter) {
    SLUICE_RETURN_IF_ERROR(
        backend.Launch(method, [t](KernelTarget k) { return RunFilterTranspose(t, k); }));
  }
  // The first call of a geometry times every algorithm on the call's
  // own buffers (its outputs are written next anyway); while a step is
  // captured, cuDNN's heuristics choose instead (and nothing is cached).
  const CudnnPolicy& policy = GetCudnnPolicy();
  FindBuffers find{&v, w, nullptr, 0};
  Result<DeviceTensor> find_ws = Status::Unavailable("not measuring");
  if (policy.find && !s.algos.contains(DnnState::Key{op, v.bf16, g}) && !Capturing(backend)) {
    find_ws = backend.Scratch(DType::kUInt8, Shape{static_cast<int64_t>(policy.workspace_limit)});
    if (find_ws.ok()) {
      find.ws = find_ws->raw_data();
      find.ws_size = policy.workspace_limit;
    }
  }
  Result<Algo> algo = ChooseAlgo(s, op, g, v.bf16, d, find_ws.ok() ? &find : nullptr);
  if (!algo.ok()) return false;
  if (find_ws.ok() && policy.graph && algo->measured) {
    AddGraphEngine(s, backend, op, g, d, find, *algo);
    s.algos[DnnState::Key{op, v.bf16, g}] = *algo;
  }
  void* gx = op == ConvOp::kBackwardData ? v.out : const_cast<void*>(v.x);
  void* gy = op == ConvOp::kForward ? v.out : const_cast<void*>(v.dy);
  const bool graph = algo->graph != nullptr && GraphConvPlan::Aligned(gx, w, gy);
  const size_t ws_size = graph ? algo->graph->workspace() : algo->workspace;
  Result<DeviceTensor> workspace =
      backend.Scratch(DType::kUInt8, Shape{static_cast<int64_t>(ws_size)});
  if (!workspace.ok()) return false;
  void* ws = ws_size > 0 ? workspace->raw_data() : nullptr;
  if (graph) {
    SLUICE_RETURN_IF_ERROR(algo->graph->Execute(s.handle, gx, w, gy, ws).WithContext(method));
  } else {
    SLUICE_RETURN_IF_ERROR(Execute(s, op, d, *algo, ws, w, v).WithContext(method));
  }
  if (op == ConvOp::kBackwardFilter) {
    t = FilterTransposeArgs{w,       v.dfilter, g.kernel_h, g.kernel_w,    g.in_c,
                            g.out_c, false,     v.bf16,     v.dfilter_bf16};
    SLUICE_RETURN_IF_ERROR(
        backend.Launch(method, [t](KernelTarget k) { return RunFilterTranspose(t, k); }));
  }
  return true;
}

// cuDNN's name of op's algorithm `algo` (its enum without the prefix).
std::string AlgoName(ConvOp op, int algo) {
  static constexpr std::string_view kFwd[] = {
      "IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT", "FFT", "FFT_TILING",
      "WINOGRAD",      "WINOGRAD_NONFUSED"};
  static constexpr std::string_view kBwdData[] = {"ALGO_0",     "ALGO_1",   "FFT",
                                                  "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
  static constexpr std::string_view kBwdFilter[] = {
      "ALGO_0", "ALGO_1", "FFT", "ALGO_3", "WINOGRAD", "WINOGRAD_NONFUSED", "FFT_TILING"};
  std::span<const std::string_view> names;
  switch (op) {
    case ConvOp::kForward: names = kFwd; break;
    case ConvOp::kBackwardData: names = kBwdData; break;
    case ConvOp::kBackwardFilter: names = kBwdFilter; break;
  }
  if (algo >= 0 && static_cast<size_t>(algo) < names.size()) return std::string(names[algo]);
  return "algorithm " + std::to_string(algo);
}

}  // namespace

const CudnnLoad& LoadCudnn() { return GetCudnnLibrary().load; }

Result<std::array<int, 4>> CudnnForwardOutputDims(const ConvGeometry& g, bool bf16) {
  const CudnnLibrary& lib = GetCudnnLibrary();
  if (!lib.load.loaded) return Status::Unavailable(lib.load.error);
  if (!FitsCudnn(g)) return Status::InvalidArgument("the geometry does not fit cuDNN's dims");
  Descriptors d(lib.api);
  SLUICE_RETURN_IF_ERROR(d.Set(g, bf16));
  return d.OutputDims();
}

Result<bool> CudnnConv2DForward(GpuBackend& backend, const ConvGeometry& g, const void* x,
                                const void* filter, void* y, bool bf16) {
  return Run(backend, ConvOp::kForward, g,
             Operands{.x = x, .filter = filter, .out = y, .bf16 = bf16});
}

Result<bool> CudnnConv2DBackwardData(GpuBackend& backend, const ConvGeometry& g, const void* dy,
                                     const void* filter, void* dx, bool bf16) {
  return Run(backend, ConvOp::kBackwardData, g,
             Operands{.dy = dy, .filter = filter, .out = dx, .bf16 = bf16});
}

Result<bool> CudnnConv2DBackwardFilter(GpuBackend& backend, const ConvGeometry& g, const void* x,
                                       const void* dy, void* dfilter, bool bf16,
                                       bool dfilter_bf16) {
  return Run(
      backend, ConvOp::kBackwardFilter, g,
      Operands{.x = x, .dy = dy, .dfilter = dfilter, .bf16 = bf16, .dfilter_bf16 = dfilter_bf16});
}

std::vector<ConvAlgorithm> CudnnAlgorithms(GpuBackend& backend) {
  std::vector<ConvAlgorithm> out;
  if (!backend.on_gpu()) return out;
  Result<DnnState*> state =
      backend.State<DnnState>(GpuBackend::Slot::kDnn, [&backend] { return MakeState(backend); });
  if (!state.ok() || (*state)->handle == nullptr) return out;
  DnnState& s = **state;
  std::lock_guard lock(s.mu);
  for (const auto& [key, a] : s.algos) {
    const auto& [op, bf16, g] = key;
    ConvAlgorithm c;
    c.op = std::string(ConvOpName(op));
    c.geometry = fmt::format("x[{},{},{},{}] filter {}x{}x{}->{} stride {}x{} pad {},{}", g.batch,
                             g.in_h, g.in_w, g.in_c, g.kernel_h, g.kernel_w, g.in_c, g.out_c,
                             g.stride_h, g.stride_w, g.pad_top, g.pad_left);
    c.bfloat16 = bf16;
    c.algorithm = AlgoName(op, a.algo);
    if (a.graph != nullptr) {
      c.algorithm =
          fmt::format("graph {} (legacy {}: {:.3f} ms)", a.graph->name(), c.algorithm, a.legacy_ms);
    } else if (a.legacy_ms >= 0) {
      c.algorithm += fmt::format(" ({} graph engines timed, none faster)", a.graph_timed);
    }
    c.measured = a.measured;
    c.time_ms = a.time_ms;
    c.workspace_bytes =
        static_cast<int64_t>(a.graph != nullptr ? a.graph->workspace() : a.workspace);
    c.deterministic = a.deterministic;
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace sluice::gpu_backend_internal
