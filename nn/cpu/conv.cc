// Conv2DForward / BackwardData / BackwardFilter on oneDNN convolution
// primitives: activations NHWC, filters HWIO as the callers store them.
//
// Weights: the primitives choose their layout (format_tag::any) and the
// HWIO filter is reordered into it every call (the filter gradient back
// out of it). The reorder touches only the small filter, while with plain
// HWIO weights oneDNN falls back to its im2col + GEMM kernels: on the
// tutorial CNN's shapes (bench/nn/backend_bench.cc) blocked weights made
// forward 2.1-2.7x and backward-filter 1.7-3.4x faster. Backward-data is
// the exception for inputs with few channels: blocked kernels pad the
// channels to a full vector block (16 floats), and with 1 or 3 channels
// HWIO was 1.7-2.1x faster.
#include <optional>

#include "sluice/nn/cpu/cpu_backend.h"
#include "sluice/nn/cpu/dnnl_context.h"
#include "sluice/nn/cpu/scratch.h"
#include "sluice/nn/kit/conv_checks.h"
#include "sluice/nn/kit/float32_staging.h"

namespace sluice::nn::cpu {

namespace {

using dnnl::memory;
using Tag = memory::format_tag;

// Input channels below which backward-data uses HWIO weights (above).
constexpr int64_t kMinBlockedBackwardDataChannels = 16;

memory::desc Md(const memory::dims& dims, Tag tag) {
  return memory::desc(dims, memory::data_type::f32, tag);
}

// A convolution's geometry in oneDNN's terms (dims are NCHW / OIHW logical
// order whatever the memory layout).
struct ConvShape {
  memory::dims src, weights, bias, dst, strides, pad_l, pad_r;

  std::string Key(std::string_view kind, bool with_bias) const {
    std::string k(kind);
    for (const memory::dims* d : {&src, &weights, &dst, &strides, &pad_l, &pad_r}) {
      for (int64_t v : *d) k += "," + std::to_string(v);
      k += ';';
    }
    return k + (with_bias ? "b" : "");
  }
};

// oneDNN's view of a checked geometry.
ConvShape MakeConvShape(const kit::ConvGeometry& g) {
  ConvShape s;
  s.src = {g.batch, g.in_c, g.in_h, g.in_w};
  s.weights = {g.out_c, g.in_c, g.kernel_h, g.kernel_w};
  s.bias = {g.out_c};
  s.dst = {g.batch, g.out_c, g.out_h, g.out_w};
  s.strides = {g.stride_h, g.stride_w};
  s.pad_l = {g.pad_top, g.pad_left};
  s.pad_r = {g.pad_bottom, g.pad_right};
  return s;
}

dnnl::convolution_forward::primitive_desc ForwardPd(const ConvShape& s, bool with_bias,
                                                    const dnnl::engine& engine) {
  const memory::desc w = Md(s.weights, Tag::any);
  const auto prop = dnnl::prop_kind::forward_training;
  const auto alg = dnnl::algorithm::convolution_direct;
  const auto d =
      with_bias
          ? dnnl::convolution_forward::desc(prop, alg, Md(s.src, Tag::nhwc), w, Md(s.bias, Tag::x),
                                            Md(s.dst, Tag::nhwc), s.strides, s.pad_l, s.pad_r)
          : dnnl::convolution_forward::desc(prop, alg, Md(s.src, Tag::nhwc), w,
                                            Md(s.dst, Tag::nhwc), s.strides, s.pad_l, s.pad_r);
  return {d, UserScratchpad(), engine};
}

// A primitive plus the reorder between the callers' HWIO filter and the
// layout the primitive wants (absent when they agree).
template <typename Pd, typename Prim>
struct Cached {
  Pd pd;
  Prim prim;
  std::optional<dnnl::reorder> weights_reorder;
};
using Forward = Cached<dnnl::convolution_forward::primitive_desc, dnnl::convolution_forward>;
using BackwardData =
    Cached<dnnl::convolution_backward_data::primitive_desc, dnnl::convolution_backward_data>;
using BackwardWeights =
    Cached<dnnl::convolution_backward_weights::primitive_desc, dnnl::convolution_backward_weights>;

std::optional<dnnl::reorder> Reorder(const memory::desc& from, const memory::desc& to,
                                     const dnnl::engine& engine) {
  if (from == to) return std::nullopt;
  return dnnl::reorder(dnnl::reorder::primitive_desc(engine, from, engine, to));
}

// Memory in `md` for the weights: the callers' bytes when no reorder is
// needed, else the per-thread weights scratch.
Result<memory> WeightsMemory(std::string_view method, const memory::desc& md,
                             const dnnl::engine& engine, bool reordered, void* user) {
  if (!reordered) return memory(md, engine, user);
  void* p = ThreadScratch(ScratchSlot::kWeights, md.get_size());
  if (p == nullptr) return Status::ResourceExhausted(std::string(method) + ": out of memory");
  return memory(md, engine, p);
}

}  // namespace

Status CpuBackend::Conv2DForward(const DeviceTensor& x, const DeviceTensor& filter,
                                 const DeviceTensor* bias, const Window2D& window,
                                 DeviceTensor* y) {
  if (kit::AnyBFloat16({&x, &filter, bias, y})) {
    return kit::in_float32::Conv2DForward(*this, x, filter, bias, window, y);
  }
  constexpr std::string_view kMethod = "Conv2DForward";
  SLUICE_ASSIGN_OR_RETURN(kit::ConvGeometry g,
                          kit::CheckConv2DForward(device_, x, filter, bias, window, y));
  const ConvShape s = MakeConvShape(g);
  if (y->num_elements() == 0) return Status::OK();
  UseThreads();
  return RunDnnl(kMethod, [&]() -> Status {
    const dnnl::engine& engine = dnnl_->engine;
    auto c = dnnl_->Get<Forward>(s.Key("fwd", bias != nullptr), [&] {
      auto pd = ForwardPd(s, bias != nullptr, engine);
      return Forward{pd, dnnl::convolution_forward(pd),
                     Reorder(Md(s.weights, Tag::hwio), pd.weights_desc(), engine)};
    });
    memory user_w = Wrap(Md(s.weights, Tag::hwio), engine, filter.raw_data());
    SLUICE_ASSIGN_OR_RETURN(
        memory w, WeightsMemory(kMethod, c->pd.weights_desc(), engine,
                                c->weights_reorder.has_value(), user_w.get_data_handle()));
    dnnl::stream stream(engine);
    if (c->weights_reorder) {
      c->weights_reorder->execute(stream, user_w, w);
      stream.wait();
    }
    std::unordered_map<int, memory> a = {
        {DNNL_ARG_SRC, Wrap(c->pd.src_desc(), engine, x.raw_data())},
        {DNNL_ARG_WEIGHTS, w},
        {DNNL_ARG_DST, Wrap(c->pd.dst_desc(), engine, y->raw_data())}};
    if (bias != nullptr)
      a.emplace(DNNL_ARG_BIAS, Wrap(c->pd.bias_desc(), engine, bias->raw_data()));
    return Execute(kMethod, c->prim, c->pd, engine, std::move(a));
  });
}

Status CpuBackend::Conv2DBackwardData(const DeviceTensor& dy, const DeviceTensor& filter,
                                      const Window2D& window, DeviceTensor* dx) {
  if (kit::AnyBFloat16({&dy, &filter, dx})) {
    return kit::in_float32::Conv2DBackwardData(*this, dy, filter, window, dx);
  }
  constexpr std::string_view kMethod = "Conv2DBackwardData";
  SLUICE_ASSIGN_OR_RETURN(kit::ConvGeometry g,
                          kit::CheckConv2DBackwardData(device_, dy, filter, window, dx));
  const ConvShape s = MakeConvShape(g);
  if (dx->num_elements() == 0) return Status::OK();
  UseThreads();
  return RunDnnl(kMethod, [&]() -> Status {
    const dnnl::engine& engine = dnnl_->engine;
    auto c = dnnl_->Get<BackwardData>(s.Key("bwd_data", false), [&] {
      const bool blocked = s.weights[1] >= kMinBlockedBackwardDataChannels;
      const memory::desc w = Md(s.weights, blocked ? Tag::any : Tag::hwio);
      const dnnl::convolution_backward_data::desc d(dnnl::algorithm::convolution_direct,
                                                    Md(s.src, Tag::nhwc), w, Md(s.dst, Tag::nhwc),
                                                    s.strides, s.pad_l, s.pad_r);
      const dnnl::convolution_backward_data::primitive_desc pd(d, UserScratchpad(), engine,
                                                               ForwardPd(s, false, engine));
      return BackwardData{pd, dnnl::convolution_backward_data(pd),
                          Reorder(Md(s.weights, Tag::hwio), pd.weights_desc(), engine)};
    });
    memory user_w = Wrap(Md(s.weights, Tag::hwio), engine, filter.raw_data());
    SLUICE_ASSIGN_OR_RETURN(
        memory w, WeightsMemory(kMethod, c->pd.weights_desc(), engine,
                                c->weights_reorder.has_value(), user_w.get_data_handle()));
    dnnl::stream stream(engine);
    if (c->weights_reorder) {
      c->weights_reorder->execute(stream, user_w, w);
      stream.wait();
    }
    return Execute(kMethod, c->prim, c->pd, engine,
                   {{DNNL_ARG_DIFF_DST, Wrap(c->pd.diff_dst_desc(), engine, dy.raw_data())},
                    {DNNL_ARG_WEIGHTS, w},
                    {DNNL_ARG_DIFF_SRC, Wrap(c->pd.diff_src_desc(), engine, dx->raw_data())}});
  });
}

Status CpuBackend::Conv2DBackwardFilter(const DeviceTensor& x, const DeviceTensor& dy,
                                        const Window2D& window, DeviceTensor* dfilter,
                                        DeviceTensor* dbias) {
  if (kit::AnyBFloat16({&x, &dy, dfilter, dbias})) {
    return kit::in_float32::Conv2DBackwardFilter(*this, x, dy, window, dfilter, dbias);
  }
  constexpr std::string_view kMethod = "Conv2DBackwardFilter";
  SLUICE_ASSIGN_OR_RETURN(kit::ConvGeometry g,
                          kit::CheckConv2DBackwardFilter(device_, x, dy, window, dfilter, dbias));
  const ConvShape s = MakeConvShape(g);
  if (dy.num_elements() == 0) {
    // An empty batch: the gradients are zero sums.
    SLUICE_RETURN_IF_ERROR(Fill(0.0f, dfilter));
    return dbias != nullptr ? Fill(0.0f, dbias) : Status::OK();
  }
  UseThreads();
  const bool with_bias = dbias != nullptr;
  return RunDnnl(kMethod, [&]() -> Status {
    const dnnl::engine& engine = dnnl_->engine;
    auto c = dnnl_->Get<BackwardWeights>(s.Key("bwd_weights", with_bias), [&] {
      const memory::desc w = Md(s.weights, Tag::any);
      const auto alg = dnnl::algorithm::convolution_direct;
      const auto d = with_bias ? dnnl::convolution_backward_weights::desc(
                                     alg, Md(s.src, Tag::nhwc), w, Md(s.bias, Tag::x),
                                     Md(s.dst, Tag::nhwc), s.strides, s.pad_l, s.pad_r)
                               : dnnl::convolution_backward_weights::desc(
                                     alg, Md(s.src, Tag::nhwc), w, Md(s.dst, Tag::nhwc), s.strides,
                                     s.pad_l, s.pad_r);
      const dnnl::convolution_backward_weights::primitive_desc pd(d, UserScratchpad(), engine,
                                                                  ForwardPd(s, with_bias, engine));
      // The reorder goes the other way: blocked gradient -> HWIO.
      return BackwardWeights{pd, dnnl::convolution_backward_weights(pd),
                             Reorder(pd.diff_weights_desc(), Md(s.weights, Tag::hwio), engine)};
    });
    memory user_dw = Wrap(Md(s.weights, Tag::hwio), engine, dfilter->raw_data());
    SLUICE_ASSIGN_OR_RETURN(
        memory dw, WeightsMemory(kMethod, c->pd.diff_weights_desc(), engine,
                                 c->weights_reorder.has_value(), user_dw.get_data_handle()));
    std::unordered_map<int, memory> a = {
        {DNNL_ARG_SRC, Wrap(c->pd.src_desc(), engine, x.raw_data())},
        {DNNL_ARG_DIFF_DST, Wrap(c->pd.diff_dst_desc(), engine, dy.raw_data())},
        {DNNL_ARG_DIFF_WEIGHTS, dw}};
    if (with_bias) {
      a.emplace(DNNL_ARG_DIFF_BIAS, Wrap(c->pd.diff_bias_desc(), engine, dbias->raw_data()));
    }
    SLUICE_RETURN_IF_ERROR(Execute(kMethod, c->prim, c->pd, engine, std::move(a)));
    if (c->weights_reorder) {
      dnnl::stream stream(engine);
      c->weights_reorder->execute(stream, dw, user_dw);
      stream.wait();
    }
    return Status::OK();
  });
}

}  // namespace sluice::nn::cpu
