// The graph API's convolution engines (cudnn_graph.h): descriptors built
// with cudnnBackendSetAttribute and finalized, engine configurations from
// cuDNN's heuristics, each finalized into an execution plan and timed with
// CUDA events.
#include "sluice/nn/cuda/internal/cudnn_graph.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <span>
#include <utility>

#include <fmt/format.h>

namespace sluice::gpu_backend_internal {
namespace {

using nn::kit::ConvGeometry;
using Desc = std::shared_ptr<void>;

constexpr int64_t kAlignment = 16;
constexpr int kMaxCandidates = 16;
constexpr int64_t kX = 1, kW = 2, kY = 3;  // the tensors' unique ids

Result<Desc> Make(const CudnnApi& api, cudnnBackendDescriptorType_t type) {
  cudnnBackendDescriptor_t d = nullptr;
  SLUICE_CUDNN_CALL(api, cudnnBackendCreateDescriptor, type, &d);
  const CudnnApi* a = &api;
  return Desc(d, [a](void* p) { (void)a->cudnnBackendDestroyDescriptor(p); });
}

template <typename T>
Status Set(const CudnnApi& api, const Desc& d, cudnnBackendAttributeName_t name,
           cudnnBackendAttributeType_t type, std::span<const T> values) {
  SLUICE_CUDNN_CALL(api, cudnnBackendSetAttribute, d.get(), name, type,
                    static_cast<int64_t>(values.size()), values.data());
  return Status::OK();
}

template <typename T>
Status Set1(const CudnnApi& api, const Desc& d, cudnnBackendAttributeName_t name,
            cudnnBackendAttributeType_t type, const T& value) {
  return Set(api, d, name, type, std::span<const T>(&value, 1));
}

Status Finalize(const CudnnApi& api, const Desc& d) {
  SLUICE_CUDNN_CALL(api, cudnnBackendFinalize, d.get());
  return Status::OK();
}

// A tensor of dims {n, c, h, w} (a filter: {k, c, r, s}) stored channel
// last (NHWC; KRSC), packed.
Result<Desc> Tensor(const CudnnApi& api, int64_t uid, cudnnDataType_t type,
                    std::array<int64_t, 4> dims) {
  SLUICE_ASSIGN_OR_RETURN(Desc t, Make(api, CUDNN_BACKEND_TENSOR_DESCRIPTOR));
  const auto [n, c, h, w] = dims;
  const std::array<int64_t, 4> strides = {c * h * w, 1, w * c, c};
  (void)n;
  SLUICE_RETURN_IF_ERROR(Set1(api, t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, type));
  SLUICE_RETURN_IF_ERROR(
      Set(api, t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, std::span<const int64_t>(dims)));
  SLUICE_RETURN_IF_ERROR(
      Set(api, t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, std::span<const int64_t>(strides)));
  SLUICE_RETURN_IF_ERROR(Set1(api, t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, uid));
  SLUICE_RETURN_IF_ERROR(
      Set1(api, t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, kAlignment));
  SLUICE_RETURN_IF_ERROR(Finalize(api, t));
  return t;
}

Result<Desc> Convolution(const CudnnApi& api, const ConvGeometry& g) {
  SLUICE_ASSIGN_OR_RETURN(Desc c, Make(api, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR));
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const int64_t spatial = 2;
  const std::array<int64_t, 2> dilation = {1, 1}, stride = {g.stride_h, g.stride_w},
                               pad = {g.pad_top, g.pad_left};
  auto i64 = [](const std::array<int64_t, 2>& a) { return std::span<const int64_t>(a); };
  SLUICE_RETURN_IF_ERROR(
      Set1(api, c, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, compute));
  SLUICE_RETURN_IF_ERROR(
      Set1(api, c, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, mode));
  SLUICE_RETURN_IF_ERROR(
      Set1(api, c, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, spatial));
  SLUICE_RETURN_IF_ERROR(
      Set(api, c, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, i64(dilation)));
  SLUICE_RETURN_IF_ERROR(
      Set(api, c, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, i64(stride)));
  SLUICE_RETURN_IF_ERROR(
      Set(api, c, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, i64(pad)));
  SLUICE_RETURN_IF_ERROR(
      Set(api, c, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, i64(pad)));
  SLUICE_RETURN_IF_ERROR(Finalize(api, c));
  return c;
}

// op on g as a finalized operation descriptor; the descriptors it refers
// to are appended to `keep` (they must outlive it).
Result<Desc> Operation(const CudnnApi& api, ConvOp op, const ConvGeometry& g, bool bf16,
                       std::vector<Desc>& keep) {
  const cudnnDataType_t data = bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
  SLUICE_ASSIGN_OR_RETURN(Desc x, Tensor(api, kX, data, {g.batch, g.in_c, g.in_h, g.in_w}));
  SLUICE_ASSIGN_OR_RETURN(Desc w, Tensor(api, kW, data, {g.out_c, g.in_c, g.kernel_h, g.kernel_w}));
  SLUICE_ASSIGN_OR_RETURN(Desc y, Tensor(api, kY, data, {g.batch, g.out_c, g.out_h, g.out_w}));
  SLUICE_ASSIGN_OR_RETURN(Desc conv, Convolution(api, g));
  cudnnBackendDescriptorType_t type = CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR;
  std::array<cudnnBackendAttributeName_t, 6> names = {
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA};
  if (op == ConvOp::kBackwardData) {
    type = CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR;
    names = {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
             CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
             CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
             CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
             CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
             CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA};
  } else if (op == ConvOp::kBackwardFilter) {
    type = CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR;
    names = {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
             CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
             CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
             CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
             CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
             CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA};
  }
  SLUICE_ASSIGN_OR_RETURN(Desc operation, Make(api, type));
  void* xd = x.get();
  void* wd = w.get();
  void* yd = y.get();
  void* cd = conv.get();
  const float alpha = 1.0f, beta = 0.0f;
  SLUICE_RETURN_IF_ERROR(Set1(api, operation, names[0], CUDNN_TYPE_BACKEND_DESCRIPTOR, xd));
  SLUICE_RETURN_IF_ERROR(Set1(api, operation, names[1], CUDNN_TYPE_BACKEND_DESCRIPTOR, wd));
  SLUICE_RETURN_IF_ERROR(Set1(api, operation, names[2], CUDNN_TYPE_BACKEND_DESCRIPTOR, yd));
  SLUICE_RETURN_IF_ERROR(Set1(api, operation, names[3], CUDNN_TYPE_BACKEND_DESCRIPTOR, cd));
  SLUICE_RETURN_IF_ERROR(Set1(api, operation, names[4], CUDNN_TYPE_FLOAT, alpha));
  SLUICE_RETURN_IF_ERROR(Set1(api, operation, names[5], CUDNN_TYPE_FLOAT, beta));
  SLUICE_RETURN_IF_ERROR(Finalize(api, operation));
  keep.insert(keep.end(), {x, w, y, conv});
  return operation;
}

// The operation graph of op on g; its parts are appended to `keep`.
Result<Desc> OperationGraph(const CudnnApi& api, cudnnHandle_t handle, ConvOp op,
                            const ConvGeometry& g, bool bf16, std::vector<Desc>& keep) {
  SLUICE_ASSIGN_OR_RETURN(Desc operation, Operation(api, op, g, bf16, keep));
  keep.push_back(operation);
  SLUICE_ASSIGN_OR_RETURN(Desc graph, Make(api, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR));
  void* od = operation.get();
  SLUICE_RETURN_IF_ERROR(
      Set1(api, graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, od));
  SLUICE_RETURN_IF_ERROR(
      Set1(api, graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, handle));
  SLUICE_RETURN_IF_ERROR(Finalize(api, graph));
  return graph;
}

// The engine configurations heuristics `mode` offers for graph.
Result<std::vector<Desc>> Configs(const CudnnApi& api, const Desc& graph,
                                  cudnnBackendHeurMode_t mode) {
  SLUICE_ASSIGN_OR_RETURN(Desc heur, Make(api, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR));
  void* gd = graph.get();
  SLUICE_RETURN_IF_ERROR(
      Set1(api, heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, gd));
  SLUICE_RETURN_IF_ERROR(Set1(api, heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, mode));
  SLUICE_RETURN_IF_ERROR(Finalize(api, heur));
  int64_t count = 0;
  SLUICE_CUDNN_CALL(api, cudnnBackendGetAttribute, heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr);
  std::vector<Desc> configs;
  std::vector<void*> raw;
  for (int64_t i = 0; i < count; ++i) {
    SLUICE_ASSIGN_OR_RETURN(Desc c, Make(api, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
    raw.push_back(c.get());
    configs.push_back(std::move(c));
  }
  int64_t got = 0;
  if (count > 0) {
    SLUICE_CUDNN_CALL(api, cudnnBackendGetAttribute, heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                      CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, raw.data());
  }
  configs.resize(static_cast<size_t>(std::min(got, count)));
  return configs;
}

// What a configuration's engine says of itself.
struct EngineInfo {
  int64_t index = -1;
  std::vector<cudnnBackendNumericalNote_t> numerical;
  std::vector<cudnnBackendBehaviorNote_t> behavior;
  bool Has(cudnnBackendNumericalNote_t n) const {
    return std::find(numerical.begin(), numerical.end(), n) != numerical.end();
  }
  bool Has(cudnnBackendBehaviorNote_t n) const {
    return std::find(behavior.begin(), behavior.end(), n) != behavior.end();
  }
};

Result<EngineInfo> Info(const CudnnApi& api, const Desc& config) {
  SLUICE_ASSIGN_OR_RETURN(Desc engine, Make(api, CUDNN_BACKEND_ENGINE_DESCRIPTOR));
  void* ed = engine.get();
  int64_t n = 0;
  SLUICE_CUDNN_CALL(api, cudnnBackendGetAttribute, config.get(), CUDNN_ATTR_ENGINECFG_ENGINE,
                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &ed);
  EngineInfo info;
  SLUICE_CUDNN_CALL(api, cudnnBackendGetAttribute, ed, CUDNN_ATTR_ENGINE_GLOBAL_INDEX,
                    CUDNN_TYPE_INT64, 1, &n, &info.index);
  std::array<cudnnBackendNumericalNote_t, CUDNN_NUMERICAL_NOTE_TYPE_COUNT> notes{};
  SLUICE_CUDNN_CALL(api, cudnnBackendGetAttribute, ed, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                    CUDNN_TYPE_NUMERICAL_NOTE, static_cast<int64_t>(notes.size()), &n,
                    notes.data());
  info.numerical.assign(notes.begin(), notes.begin() + std::clamp<int64_t>(n, 0, notes.size()));
  std::array<cudnnBackendBehaviorNote_t, CUDNN_BEHAVIOR_NOTE_TYPE_COUNT> behavior{};
  SLUICE_CUDNN_CALL(api, cudnnBackendGetAttribute, ed, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE,
                    CUDNN_TYPE_BEHAVIOR_NOTE, static_cast<int64_t>(behavior.size()), &n,
                    behavior.data());
  info.behavior.assign(behavior.begin(),
                       behavior.begin() + std::clamp<int64_t>(n, 0, behavior.size()));
  return info;
}

std::string EngineName(const EngineInfo& info) {
  std::string name = fmt::format("engine {}", info.index);
  std::string notes;
  auto note = [&](cudnnBackendNumericalNote_t n, std::string_view text) {
    if (info.Has(n)) notes += (notes.empty() ? "" : " ") + std::string(text);
  };
  note(CUDNN_NUMERICAL_NOTE_FFT, "FFT");
  note(CUDNN_NUMERICAL_NOTE_WINOGRAD, "WINOGRAD");
  note(CUDNN_NUMERICAL_NOTE_TENSOR_CORE, "TENSOR_CORE");
  note(CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC, "NONDETERMINISTIC");
  return notes.empty() ? name : name + " [" + notes + "]";
}

// Whether the policy lets a configuration with `info` run op's data.
bool Allowed(const EngineInfo& info, bool bf16, const CudnnPolicy& policy) {
  if (!bf16 && (info.Has(CUDNN_NUMERICAL_NOTE_TENSOR_CORE) ||
                info.Has(CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS))) {
    return false;  // TF32 or half-precision inputs for float32 data
  }
  if (info.Has(CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION)) return false;
  if (info.Has(CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION)) return false;
  if (policy.deterministic && info.Has(CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC)) return false;
  return true;
}

Result<Desc> Plan(const CudnnApi& api, cudnnHandle_t handle, const Desc& config) {
  SLUICE_ASSIGN_OR_RETURN(Desc plan, Make(api, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR));
  void* cd = config.get();
  SLUICE_RETURN_IF_ERROR(
      Set1(api, plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, handle));
  SLUICE_RETURN_IF_ERROR(
      Set1(api, plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, cd));
  SLUICE_RETURN_IF_ERROR(Finalize(api, plan));
  return plan;
}

Status CudaStatus(cudaError_t e, std::string_view what) {
  if (e == cudaSuccess) return Status::OK();
  return Status::Internal(std::string(what) + " failed: " + cudaGetErrorString(e));
}

// Two events for timing on one stream.
class EventPair {
 public:
  EventPair() { ok_ = cudaEventCreate(&a_) == cudaSuccess && cudaEventCreate(&b_) == cudaSuccess; }
  ~EventPair() {
    if (a_ != nullptr) (void)cudaEventDestroy(a_);
    if (b_ != nullptr) (void)cudaEventDestroy(b_);
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;

  // run's time on stream, ms.
  Result<float> Time(cudaStream_t stream, const std::function<Status()>& run) {
    if (!ok_) return Status::Internal("cudaEventCreate failed");
    SLUICE_RETURN_IF_ERROR(CudaStatus(cudaEventRecord(a_, stream), "cudaEventRecord"));
    SLUICE_RETURN_IF_ERROR(run());
    SLUICE_RETURN_IF_ERROR(CudaStatus(cudaEventRecord(b_, stream), "cudaEventRecord"));
    SLUICE_RETURN_IF_ERROR(CudaStatus(cudaEventSynchronize(b_), "cudaEventSynchronize"));
    float ms = 0;
    SLUICE_RETURN_IF_ERROR(CudaStatus(cudaEventElapsedTime(&ms, a_, b_), "cudaEventElapsedTime"));
    return ms;
  }

 private:
  cudaEvent_t a_ = nullptr, b_ = nullptr;
  bool ok_ = false;
};

}  // namespace

GraphConvPlan::GraphConvPlan(const CudnnApi& api, std::vector<std::shared_ptr<void>> keep,
                             void* plan, size_t workspace, std::string name, bool deterministic)
    : api_(api),
      keep_(std::move(keep)),
      plan_(plan),
      workspace_(workspace),
      name_(std::move(name)),
      deterministic_(deterministic) {}

bool GraphConvPlan::Aligned(const void* x, const void* w, const void* y) {
  auto ok = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % kAlignment == 0; };
  return ok(x) && ok(w) && ok(y);
}

Status GraphConvPlan::Execute(cudnnHandle_t handle, void* x, void* w, void* y,
                              void* workspace) const {
  SLUICE_ASSIGN_OR_RETURN(Desc pack, Make(api_, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR));
  const std::array<int64_t, 3> uids = {kX, kW, kY};
  const std::array<void*, 3> pointers = {x, w, y};
  SLUICE_RETURN_IF_ERROR(Set(api_, pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64,
                             std::span<const int64_t>(uids)));
  SLUICE_RETURN_IF_ERROR(Set(api_, pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
                             std::span<void* const>(pointers)));
  SLUICE_RETURN_IF_ERROR(
      Set1(api_, pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, workspace));
  SLUICE_RETURN_IF_ERROR(Finalize(api_, pack));
  SLUICE_CUDNN_CALL(api_, cudnnBackendExecute, handle, plan_, pack.get());
  return Status::OK();
}

Result<float> TimeOnStream(void* stream, const std::function<Status()>& run) {
  EventPair events;
  const auto s = static_cast<cudaStream_t>(stream);
  SLUICE_RETURN_IF_ERROR(events.Time(s, run).status());
  return events.Time(s, run);
}

Result<GraphConvChoice> FindGraphConvPlan(const CudnnApi& api, cudnnHandle_t handle, void* stream,
                                          ConvOp op, const ConvGeometry& g, bool bf16, void* x,
                                          void* w, void* y, void* ws, size_t ws_size) {
  const CudnnPolicy& policy = GetCudnnPolicy();
  std::vector<Desc> parts;
  SLUICE_ASSIGN_OR_RETURN(Desc graph, OperationGraph(api, handle, op, g, bf16, parts));
  parts.push_back(graph);
  std::vector<Desc> configs;
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    Result<std::vector<Desc>> offered = Configs(api, graph, mode);
    if (!offered.ok()) continue;  // a mode without results for this graph
    for (Desc& c : *offered) configs.push_back(std::move(c));
  }
  GraphConvChoice choice;
  choice.offered = static_cast<int>(configs.size());
  EventPair events;
  const auto s = static_cast<cudaStream_t>(stream);
  const auto start = std::chrono::steady_clock::now();
  int tried = 0;
  for (const Desc& config : configs) {
    if (tried >= kMaxCandidates ||
        std::chrono::steady_clock::now() - start > std::chrono::seconds(1)) {
      break;
    }
    Result<EngineInfo> info = Info(api, config);
    if (!info.ok() || !Allowed(*info, bf16, policy)) continue;
    Result<Desc> plan = Plan(api, handle, config);
    if (!plan.ok()) continue;  // the engine does not support this graph
    int64_t workspace = 0, n = 0;
    if (api.cudnnBackendGetAttribute(plan->get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                     CUDNN_TYPE_INT64, 1, &n, &workspace) != CUDNN_STATUS_SUCCESS ||
        workspace < 0 || static_cast<uint64_t>(workspace) > ws_size) {
      continue;
    }
    ++tried;
    std::vector<Desc> keep = parts;
    keep.insert(keep.end(), {config, *plan});
    auto candidate = std::make_unique<GraphConvPlan>(
        api, std::move(keep), plan->get(), static_cast<size_t>(workspace), EngineName(*info),
        !info->Has(CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC));
    auto run = [&] { return candidate->Execute(handle, x, w, y, workspace > 0 ? ws : nullptr); };
    Result<float> warm = events.Time(s, run);
    if (!warm.ok()) {
      (void)cudaGetLastError();  // a launch refused: not this engine
      continue;
    }
    float ms = *warm;
    const bool contender = choice.plan == nullptr || *warm < 4 * choice.time_ms + 10;
    if (contender) {
      Result<float> timed = events.Time(s, run);
      if (!timed.ok()) continue;
      ms = *timed;
    }
    ++choice.timed;
    if (choice.plan == nullptr || ms < choice.time_ms) {
      choice.plan = std::move(candidate);
      choice.time_ms = ms;
    }
  }
  if (choice.plan == nullptr) {
    return Status::NotFound(fmt::format("no graph engine ran ({} offered)", choice.offered));
  }
  return choice;
}

Status CudnnGraphOperationsCheck(const ConvGeometry& g, bool bf16) {
  const CudnnLibrary& lib = GetCudnnLibrary();
  if (!lib.load.loaded) return Status::Unavailable(lib.load.error);
  for (ConvOp op : {ConvOp::kForward, ConvOp::kBackwardData, ConvOp::kBackwardFilter}) {
    std::vector<Desc> keep;
    SLUICE_RETURN_IF_ERROR(
        Operation(lib.api, op, g, bf16, keep).status().WithContext(ConvOpName(op)));
  }
  return Status::OK();
}

}  // namespace sluice::gpu_backend_internal
