// CPU backend throughput on the shapes of the tutorials' Fashion-MNIST CNN
// (batch 64): conv 28x28x1 -> 32 3x3 valid, conv 13x13x32 -> 32 5x5 valid,
// 2x2 max pooling on 26x26x32, dense products, and a loss + Adam step.
//
// Same-run references, alternated with ours inside each timed loop:
//   * convolutions: the bare oneDNN primitive with the weights in the
//     layout it prefers (format_tag::any), already reordered: the best
//     oneDNN does on this machine. `ratio` > 1 is time lost to our HWIO
//     filters, argument checks and caching.
//   * MatMul: oneDNN's matmul primitive (created once) on the same
//     operands, which the backend also uses; `sgemm_us` times dnnl_sgemm,
//     the alternative.
//   * pooling, CrossEntropy + Adam: memcpy of the bytes the op must read
//     (the physical limit of a memory-bound pass).
// The counters use the process's CPU time (all threads), so a busy machine
// does not skew them; the Time column is wall-clock. For one thread:
//
//   taskset -c 0 bench/nn/backend_bench --benchmark_min_time=0.5
#include <benchmark/benchmark.h>

#include <time.h>

#include <cstdlib>
#include <cstring>
#include <dnnl.hpp>
#include <random>
#include <string>
#include <vector>

#include "sluice/nn/backend.h"

namespace sluice::nn {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

Backend* Cpu() {
  static Backend* b = GetBackend(Device::Cpu()).value();
  return b;
}

DeviceTensor Random(const Shape& shape, uint32_t seed) {
  Tensor t = Tensor::Allocate(DType::kFloat32, shape).value();
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& v : t.flat<float>()) v = dist(gen);
  return Cpu()->ToDevice(t).value();
}

void Check(const Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    std::abort();
  }
}

// CPU seconds used by the whole process (every OpenMP thread): on a shared
// machine, preemption then costs nothing, while spinning threads still do.
double CpuNow() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Times ours() and theirs() alternately and reports both and their ratio.
template <typename Ours, typename Theirs>
void Alternate(benchmark::State& state, double flops, const char* theirs_name, Ours ours,
               Theirs theirs) {
  ours();  // first calls build and cache primitives
  theirs();
  double t_ours = 0, t_theirs = 0;
  for (auto _ : state) {
    double t0 = CpuNow();
    theirs();
    t_theirs += CpuNow() - t0;
    t0 = CpuNow();
    ours();
    t_ours += CpuNow() - t0;
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["ours_us"] = 1e6 * t_ours / n;
  state.counters[std::string(theirs_name) + "_us"] = 1e6 * t_theirs / n;
  state.counters["ratio"] = t_ours / t_theirs;
  if (flops > 0) state.counters["GFLOP_per_cpu_s"] = flops * n / t_ours / 1e9;
  state.SetLabel(Cpu()->name());
}

// --- Convolutions ------------------------------------------------------------

struct ConvSpec {
  int64_t n, h, w, c, k, o;
  int64_t oh() const { return h - k + 1; }  // valid padding, stride 1
  int64_t ow() const { return w - k + 1; }
  double flops() const { return 2.0 * n * oh() * ow() * k * k * c * o; }
};
constexpr ConvSpec kConvs[] = {
    {64, 28, 28, 1, 3, 32}, {64, 13, 13, 32, 5, 32}, {64, 32, 32, 3, 3, 32}};

enum Pass { kForward, kBackwardData, kBackwardFilter };

// The bare oneDNN primitive for one pass, weights in its preferred layout,
// with a bias (and its gradient) like the backend calls below.
class BareConv {
 public:
  BareConv(const ConvSpec& s, Pass pass) : stream_(engine_) {
    const memory::dims src{s.n, s.c, s.h, s.w}, wei{s.o, s.c, s.k, s.k},
        dst{s.n, s.o, s.oh(), s.ow()};
    const memory::dims strides{1, 1}, pad{0, 0};
    auto md = [](const memory::dims& d, Tag t) {
      return memory::desc(d, memory::data_type::f32, t);
    };
    const auto alg = dnnl::algorithm::convolution_direct;
    const memory::desc bmd = md({s.o}, Tag::x);
    const dnnl::convolution_forward::primitive_desc fwd(
        {dnnl::prop_kind::forward_training, alg, md(src, Tag::nhwc), md(wei, Tag::any), bmd,
         md(dst, Tag::nhwc), strides, pad, pad},
        engine_);
    memory::desc wd = fwd.weights_desc();
    if (pass == kForward) {
      prim_ = dnnl::convolution_forward(fwd);
    } else if (pass == kBackwardData) {
      dnnl::convolution_backward_data::primitive_desc pd(
          {alg, md(src, Tag::nhwc), md(wei, Tag::any), md(dst, Tag::nhwc), strides, pad, pad},
          engine_, fwd);
      wd = pd.weights_desc();
      prim_ = dnnl::convolution_backward_data(pd);
    } else {
      dnnl::convolution_backward_weights::primitive_desc pd(
          {alg, md(src, Tag::nhwc), md(wei, Tag::any), bmd, md(dst, Tag::nhwc), strides, pad, pad},
          engine_, fwd);
      wd = pd.diff_weights_desc();
      prim_ = dnnl::convolution_backward_weights(pd);
    }
    memory x(md(src, Tag::nhwc), engine_), w(wd, engine_), y(md(dst, Tag::nhwc), engine_),
        b(bmd, engine_);
    for (memory* m : {&x, &w, &y, &b}) {
      std::memset(m->get_data_handle(), 0, m->get_desc().get_size());
    }
    if (pass == kForward) {
      args_ = {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_BIAS, b}, {DNNL_ARG_DST, y}};
    }
    if (pass == kBackwardData) {
      args_ = {{DNNL_ARG_DIFF_SRC, x}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DIFF_DST, y}};
    }
    if (pass == kBackwardFilter) {
      args_ = {{DNNL_ARG_SRC, x},
               {DNNL_ARG_DIFF_WEIGHTS, w},
               {DNNL_ARG_DIFF_BIAS, b},
               {DNNL_ARG_DIFF_DST, y}};
    }
  }
  void Run() {
    prim_.execute(stream_, args_);
    stream_.wait();
  }

 private:
  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream_;
  dnnl::primitive prim_;
  std::unordered_map<int, memory> args_;
};

void BM_Conv(benchmark::State& state, Pass pass) {
  const ConvSpec& s = kConvs[state.range(0)];
  const Window2D w{static_cast<int>(s.k), static_cast<int>(s.k), 1, 1, Padding::kValid};
  DeviceTensor x = Random({s.n, s.h, s.w, s.c}, 1), f = Random({s.k, s.k, s.c, s.o}, 2);
  DeviceTensor b = Random({s.o}, 3), y = Random({s.n, s.oh(), s.ow(), s.o}, 4);
  DeviceTensor dx = Random(x.shape(), 5), df = Random(f.shape(), 6), db = Random(b.shape(), 7);
  BareConv bare(s, pass);
  Alternate(
      state, s.flops(), "onednn_blocked",
      [&] {
        if (pass == kForward) Check(Cpu()->Conv2DForward(x, f, &b, w, &y));
        if (pass == kBackwardData) Check(Cpu()->Conv2DBackwardData(y, f, w, &dx));
        if (pass == kBackwardFilter) Check(Cpu()->Conv2DBackwardFilter(x, y, w, &df, &db));
      },
      [&] { bare.Run(); });
}
void BM_Conv2DForward(benchmark::State& state) { BM_Conv(state, kForward); }
void BM_Conv2DBackwardData(benchmark::State& state) { BM_Conv(state, kBackwardData); }
void BM_Conv2DBackwardFilter(benchmark::State& state) { BM_Conv(state, kBackwardFilter); }
// Arg 0: [64,28,28,1] -> 32 3x3; arg 1: [64,13,13,32] -> 32 5x5; arg 2: an
// RGB input, [64,32,32,3] -> 32 3x3 (CIFAR-10's first layer).
BENCHMARK(BM_Conv2DForward)->DenseRange(0, 2)->UseRealTime();
BENCHMARK(BM_Conv2DBackwardData)->DenseRange(0, 2)->UseRealTime();
BENCHMARK(BM_Conv2DBackwardFilter)->DenseRange(0, 2)->UseRealTime();

// --- Pooling -------------------------------------------------------------------

void BM_MaxPool(benchmark::State& state, bool backward) {
  const Window2D w{2, 2, 2, 2, Padding::kValid};
  DeviceTensor x = Random({64, 26, 26, 32}, 8), y = Random({64, 13, 13, 32}, 9), ws;
  DeviceTensor dx = Random(x.shape(), 10);
  Check(Cpu()->Pool2DForward(PoolMode::kMax, x, w, &y, &ws));
  std::vector<char> copy(x.byte_size());
  Alternate(
      state, 0, "memcpy_x",
      [&] {
        if (!backward) Check(Cpu()->Pool2DForward(PoolMode::kMax, x, w, &y, &ws));
        if (backward) Check(Cpu()->Pool2DBackward(PoolMode::kMax, x, y, y, ws, w, &dx));
      },
      [&] {
        std::memcpy(copy.data(), x.raw_data(), copy.size());
        benchmark::DoNotOptimize(copy.data());
      });
}
void BM_MaxPool2x2Forward(benchmark::State& state) { BM_MaxPool(state, false); }
void BM_MaxPool2x2Backward(benchmark::State& state) { BM_MaxPool(state, true); }
BENCHMARK(BM_MaxPool2x2Forward)->UseRealTime();
BENCHMARK(BM_MaxPool2x2Backward)->UseRealTime();

// --- MatMul --------------------------------------------------------------------

// oneDNN's matmul primitive for c[m,n] = op(a) · op(b), created once.
class BareMatMul {
 public:
  BareMatMul(int64_t m, int64_t k, int64_t n, bool ta, bool tb, DeviceTensor& a, DeviceTensor& b,
             DeviceTensor& c)
      : stream_(engine_) {
    auto md = [](memory::dims d, bool t) {
      // A transposed operand is the stored matrix read column-major.
      return memory::desc(d, memory::data_type::f32, t ? Tag::ba : Tag::ab);
    };
    const memory::desc amd = md({m, k}, ta), bmd = md({k, n}, tb), cmd = md({m, n}, false);
    prim_ = dnnl::matmul(dnnl::matmul::primitive_desc({amd, bmd, cmd}, engine_));
    args_ = {{DNNL_ARG_SRC, memory(amd, engine_, a.raw_data())},
             {DNNL_ARG_WEIGHTS, memory(bmd, engine_, b.raw_data())},
             {DNNL_ARG_DST, memory(cmd, engine_, c.raw_data())}};
  }
  void Run() {
    prim_.execute(stream_, args_);
    stream_.wait();
  }

 private:
  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream_;
  dnnl::primitive prim_;
  std::unordered_map<int, memory> args_;
};

// Args: m, k, n, transposes (0: a·b, 1: a·b^T as in Dense's dx, 2: a^T·b as
// in its dW). Also times dnnl_sgemm on the same operands (`sgemm_us`), the
// alternative the backend was measured against.
void BM_MatMul(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  const bool ta = state.range(3) == 2, tb = state.range(3) == 1;
  DeviceTensor a = Random(ta ? Shape{k, m} : Shape{m, k}, 11);
  DeviceTensor b = Random(tb ? Shape{n, k} : Shape{k, n}, 12);
  DeviceTensor c = Random({m, n}, 13), c2 = Random({m, n}, 14);
  BareMatMul bare(m, k, n, ta, tb, a, b, c2);
  double t_sgemm = 0;
  Alternate(
      state, 2.0 * m * k * n, "matmul_primitive",
      [&] { Check(Cpu()->MatMul(a, ta, b, tb, 0.0f, &c)); },
      [&] {
        bare.Run();
        const double t0 = CpuNow();
        dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a.data<float>(), a.dim(1),
                   b.data<float>(), b.dim(1), 0.0f, c2.data<float>(), n);
        t_sgemm += CpuNow() - t0;
      });
  // Alternate() timed primitive + sgemm as "theirs": take sgemm back out.
  const double iters = static_cast<double>(state.iterations());
  const double sgemm_us = 1e6 * t_sgemm / iters;
  state.counters["sgemm_us"] = sgemm_us;
  state.counters["matmul_primitive_us"] = state.counters["matmul_primitive_us"] - sgemm_us;
  state.counters["ratio"] = state.counters["ours_us"] / state.counters["matmul_primitive_us"];
}
BENCHMARK(BM_MatMul)
    ->Args({64, 800, 64, 0})
    ->Args({64, 784, 128, 0})
    ->Args({64, 1152, 64, 0})
    ->Args({64, 128, 784, 1})
    ->Args({784, 64, 128, 2})
    ->UseRealTime();

// --- Loss + optimizer ------------------------------------------------------------

// One step's tail: sparse CrossEntropy on [64, 10] logits with its gradient,
// then Adam on 100k parameters.
void BM_CrossEntropyAdam100k(benchmark::State& state) {
  constexpr int64_t kParams = 100000;
  DeviceTensor logits = Random({64, 10}, 15), dlogits = Random({64, 10}, 16);
  DeviceTensor loss = Random({64}, 17);
  std::vector<int32_t> ids(64);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i % 10);
  DeviceTensor labels =
      Cpu()
          ->ToDevice(Tensor::FromVector<int32_t>(std::span<const int32_t>(ids), {64}).value())
          .value();
  DeviceTensor grad = Random({kParams}, 18), var = Random({kParams}, 19);
  DeviceTensor m = Cpu()->Zeros(DType::kFloat32, {kParams}).value();
  DeviceTensor v = Cpu()->Zeros(DType::kFloat32, {kParams}).value();
  AdamStep step;
  // Reference: copying the 4 arrays Adam reads (grad, var, m, v).
  std::vector<float> copy(4 * kParams);
  Alternate(
      state, 0, "memcpy_4x100k",
      [&] {
        Check(Cpu()->CrossEntropy(logits, labels, true, 1.0f / 64, &loss, &dlogits));
        Check(Cpu()->AdamUpdate(grad, step, &var, &m, &v));
        ++step.step;
      },
      [&] {
        for (int i = 0; i < 4; ++i) {
          const DeviceTensor& src = i == 0 ? grad : i == 1 ? var : i == 2 ? m : v;
          std::memcpy(copy.data() + i * kParams, src.raw_data(), src.byte_size());
        }
        benchmark::DoNotOptimize(copy.data());
      });
}
BENCHMARK(BM_CrossEntropyAdam100k)->UseRealTime();

}  // namespace
}  // namespace sluice::nn

BENCHMARK_MAIN();
