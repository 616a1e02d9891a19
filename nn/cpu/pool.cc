// Pool2DForward / Pool2DBackward on oneDNN pooling primitives (NHWC).
//
// Max pooling keeps oneDNN's workspace (the argmax of each window) in the
// caller's `workspace` tensor as opaque bytes; oneDNN scans a window in
// row-major order and replaces the maximum only on a strictly greater
// value, so ties send the gradient to the first maximum, as TensorFlow
// does (backend_test checks it). Average pooling excludes padding.
#include "sluice/nn/cpu/cpu_backend.h"
#include "sluice/nn/cpu/dnnl_context.h"
#include "sluice/nn/cpu/scratch.h"
#include "sluice/nn/kit/backend_checks.h"
#include "sluice/nn/kit/conv_checks.h"
#include "sluice/nn/kit/float32_staging.h"

namespace sluice::nn::cpu {

using kit::Invalid;
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

struct PoolShape {
  memory::dims src, dst, strides, kernel, pad_l, pad_r;
  dnnl::algorithm algorithm;

  std::string Key(std::string_view kind) const {
    std::string k(kind);
    for (const memory::dims* d : {&src, &dst, &strides, &kernel, &pad_l, &pad_r}) {
      for (int64_t v : *d) k += "," + std::to_string(v);
      k += ';';
    }
    return k + std::to_string(static_cast<int>(algorithm));
  }
};

// oneDNN's view of a checked geometry.
PoolShape MakePoolShape(PoolMode mode, const kit::ConvGeometry& g) {
  PoolShape s;
  s.src = {g.batch, g.in_c, g.in_h, g.in_w};
  s.dst = {g.batch, g.out_c, g.out_h, g.out_w};
  s.strides = {g.stride_h, g.stride_w};
  s.kernel = {g.kernel_h, g.kernel_w};
  s.pad_l = {g.pad_top, g.pad_left};
  s.pad_r = {g.pad_bottom, g.pad_right};
  s.algorithm = mode == PoolMode::kMax ? dnnl::algorithm::pooling_max
                                       : dnnl::algorithm::pooling_avg_exclude_padding;
  return s;
}

struct Forward {
  dnnl::pooling_forward::primitive_desc pd;
  dnnl::pooling_forward prim;
};
struct Backward {
  dnnl::pooling_backward::primitive_desc pd;
  dnnl::pooling_backward prim;
};

dnnl::pooling_forward::primitive_desc ForwardPd(const PoolShape& s, bool training,
                                                const dnnl::engine& engine) {
  const dnnl::pooling_forward::desc d(
      training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference,
      s.algorithm, memory::desc(s.src, memory::data_type::f32, Tag::nhwc),
      memory::desc(s.dst, memory::data_type::f32, Tag::nhwc), s.strides, s.kernel, s.pad_l,
      s.pad_r);
  return {d, UserScratchpad(), engine};
}

}  // namespace

Status CpuBackend::Pool2DForward(PoolMode mode, const DeviceTensor& x, const Window2D& window,
                                 DeviceTensor* y, DeviceTensor* workspace) {
  // float32 or bfloat16 (staged); then all float32 below.
  constexpr std::string_view kMethod = "Pool2DForward";
  SLUICE_ASSIGN_OR_RETURN(
      kit::ConvGeometry g,
      kit::CheckPool2DForward(device_, x, window, y, kit::FloatTypes::kFloat32OrBFloat16));
  if (kit::AnyBFloat16({&x, y})) {
    return kit::in_float32::Pool2DForward(*this, mode, x, window, y, workspace);
  }
  const PoolShape s = MakePoolShape(mode, g);
  // Only max pooling needs a workspace to go backward.
  const bool training = workspace != nullptr && mode == PoolMode::kMax;
  if (workspace != nullptr && !training) {
    SLUICE_ASSIGN_OR_RETURN(*workspace, Allocate(DType::kUInt8, {0}));
  }
  if (y->num_elements() == 0) {
    if (training) {
      SLUICE_ASSIGN_OR_RETURN(*workspace, Allocate(DType::kUInt8, {0}));
    }
    return Status::OK();
  }
  UseThreads();
  return RunDnnl(kMethod, [&]() -> Status {
    const dnnl::engine& engine = dnnl_->engine;
    auto c = dnnl_->Get<Forward>(s.Key(training ? "fwd_train" : "fwd"), [&] {
      auto pd = ForwardPd(s, training, engine);
      return Forward{pd, dnnl::pooling_forward(pd)};
    });
    std::unordered_map<int, memory> a = {
        {DNNL_ARG_SRC, Wrap(c->pd.src_desc(), engine, x.raw_data())},
        {DNNL_ARG_DST, Wrap(c->pd.dst_desc(), engine, y->raw_data())}};
    if (training) {
      const memory::desc wd = c->pd.workspace_desc();
      SLUICE_ASSIGN_OR_RETURN(*workspace,
                              Allocate(DType::kUInt8, {static_cast<int64_t>(wd.get_size())}));
      a.emplace(DNNL_ARG_WORKSPACE, Wrap(wd, engine, workspace->raw_data()));
    }
    return Execute(kMethod, c->prim, c->pd, engine, std::move(a));
  });
}

Status CpuBackend::Pool2DBackward(PoolMode mode, const DeviceTensor& x, const DeviceTensor& y,
                                  const DeviceTensor& dy, const DeviceTensor& workspace,
                                  const Window2D& window, DeviceTensor* dx) {
  constexpr std::string_view kMethod = "Pool2DBackward";
  SLUICE_ASSIGN_OR_RETURN(
      kit::ConvGeometry g,
      kit::CheckPool2DBackward(device_, x, y, dy, window, dx, kit::FloatTypes::kFloat32OrBFloat16));
  if (kit::AnyBFloat16({&x, &y, &dy, dx})) {
    return kit::in_float32::Pool2DBackward(*this, mode, x, y, dy, workspace, window, dx);
  }
  const PoolShape s = MakePoolShape(mode, g);
  if (dx->num_elements() == 0) return Status::OK();
  if (dy.num_elements() == 0) return Fill(0.0f, dx);
  UseThreads();
  return RunDnnl(kMethod, [&]() -> Status {
    const dnnl::engine& engine = dnnl_->engine;
    auto c = dnnl_->Get<Backward>(s.Key("bwd"), [&] {
      const dnnl::pooling_backward::desc d(s.algorithm,
                                           memory::desc(s.src, memory::data_type::f32, Tag::nhwc),
                                           memory::desc(s.dst, memory::data_type::f32, Tag::nhwc),
                                           s.strides, s.kernel, s.pad_l, s.pad_r);
      const dnnl::pooling_backward::primitive_desc pd(d, UserScratchpad(), engine,
                                                      ForwardPd(s, true, engine));
      return Backward{pd, dnnl::pooling_backward(pd)};
    });
    std::unordered_map<int, memory> a = {
        {DNNL_ARG_DIFF_DST, Wrap(c->pd.diff_dst_desc(), engine, dy.raw_data())},
        {DNNL_ARG_DIFF_SRC, Wrap(c->pd.diff_src_desc(), engine, dx->raw_data())}};
    DeviceTensor ws = workspace;
    if (mode == PoolMode::kMax) {
      const memory::desc wd = c->pd.workspace_desc();
      if (ws.num_elements() == 0) {
        // No workspace from the forward call (it ran without one): make it
        // again from x.
        SLUICE_ASSIGN_OR_RETURN(DeviceTensor tmp_y, Allocate(DType::kFloat32, y.shape()));
        SLUICE_RETURN_IF_ERROR(Pool2DForward(mode, x, window, &tmp_y, &ws));
      }
      if (ws.dtype() != DType::kUInt8 || ws.byte_size() != wd.get_size()) {
        return Invalid(kMethod,
                       "workspace is not the one Pool2DForward made for these shapes (want " +
                           std::to_string(wd.get_size()) + " bytes)",
                       {{"x", &x}, {"workspace", &workspace}});
      }
      a.emplace(DNNL_ARG_WORKSPACE, Wrap(wd, engine, ws.raw_data()));
    }
    return Execute(kMethod, c->prim, c->pd, engine, std::move(a));
  });
}

}  // namespace sluice::nn::cpu
