// BiasAdd and BiasGrad (dense_kernels.h), run on a GPU or on the host.
//
// BiasAdd: one thread per run of kBiasAddVec elements of y (one vector
// access each) when the channel count and the pointers allow, else one per
// element. Memory: y read and written once, bias from cache.
//
// BiasGrad: pass 1 gives one block of kBiasGradThreads threads to each
// chunk of BiasGradChunkRows(c) rows of dy (c <= 256): thread t is lane
// t / c of channel t % c, so a block reads its chunk's contiguous memory
// coalesced, every thread adding kBiasGradRowsPerThread rows in double; the
// lanes are then added in order through shared memory into one partial per
// (chunk, channel). With c > 256 a thread per (chunk, channel) adds its
// rows (one lane). Pass 2 gives a block to each channel: thread t adds the
// partials of chunks t, t + 256, ... in order, then a fixed halving tree
// adds the 256 thread sums. No atomics: the bits depend on the shape only.
// Memory: dy read once, plus chunks · c doubles written and read.
//
// The host path runs the same functions, thread by thread and block by
// block, in the same order.
#include <cstdint>

#include "sluice/nn/cuda/internal/dense_kernels.h"
#include "sluice/nn/cuda/internal/vector_access.cuh"

namespace sluice::gpu_backend_internal {
namespace {

constexpr int kBiasAddVec = 8;

template <typename B, typename Y, int V>
int BiasAdd(const BiasAddArgs& a, KernelTarget target) {
  const B* bias = static_cast<const B*>(a.bias);
  Y* y = static_cast<Y*>(a.y);
  const int64_t c = a.channels;
  // channels % V == 0: a run of V elements stays inside one row.
  return ForEach(a.rows * c / V, target, [=] __host__ __device__(int64_t i) {
    const Vec<Y, V> yv = LoadVec<Y, V>(y + i * V);
    const Vec<B, V> bv = LoadVec<B, V>(bias + (i * V) % c);
    Vec<Y, V> out;
    for (int k = 0; k < V; ++k) out.v[k] = FromFloat<Y>(Add(AsFloat(yv.v[k]), AsFloat(bv.v[k])));
    StoreVec<Y, V>(y + i * V, out);
  });
}

// Correctly rounded double operations on both sides (no FMA contraction).
SLUICE_HD double AddD(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
SLUICE_HD double MulD(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

// Rows of dy a pass-1 thread's lane steps over at a time.
SLUICE_HD int64_t Lanes(int64_t c) { return c <= kBiasGradThreads ? kBiasGradThreads / c : 1; }

// Lane `lane` of channel j in chunk q: rows q · chunk rows + lane + k · lanes
// for k < kBiasGradRowsPerThread (those below `rows`), in order of k.
template <typename T>
SLUICE_HD double LaneSum(const T* dy, int64_t rows, int64_t c, int64_t q, int64_t lane, int64_t j) {
  const int64_t lanes = Lanes(c);
  const int64_t r0 = q * lanes * kBiasGradRowsPerThread + lane;  // BiasGradChunkRows(c)
  double acc = 0.0;
#ifdef __CUDA_ARCH__
#pragma unroll 8  // loads in flight together (not a host pragma)
#endif
  for (int64_t k = 0; k < kBiasGradRowsPerThread; ++k) {
    const int64_t r = r0 + k * lanes;
    if (r < rows) acc = AddD(acc, static_cast<double>(AsFloat(dy[r * c + j])));
  }
  return acc;
}

// Channel j's partial from the lane sums s[lane · c + j], in lane order.
SLUICE_HD double CombineLanes(const double* s, int64_t lanes, int64_t c, int64_t j) {
  double acc = s[j];
  for (int64_t l = 1; l < lanes; ++l) acc = AddD(acc, s[l * c + j]);
  return acc;
}

// Pass-1 thread t's sum (0 for the threads past lanes · c).
template <typename T>
SLUICE_HD double ChunkThreadSum(const T* dy, int64_t rows, int64_t c, int64_t q, int64_t t) {
  return t < Lanes(c) * c ? LaneSum(dy, rows, c, q, t / c, t % c) : 0.0;
}

template <typename T>
__global__ void __launch_bounds__(kBiasGradThreads)
    BiasGradChunkKernel(const T* dy, double* partial, int64_t rows, int64_t c) {
  __shared__ double s[kBiasGradThreads];
  const int64_t q = blockIdx.x, t = threadIdx.x;
  s[t] = ChunkThreadSum(dy, rows, c, q, t);
  __syncthreads();
  if (t < c) partial[q * c + t] = CombineLanes(s, Lanes(c), c, t);
}

// Pass-2 thread t's sum of channel j's partials: chunks t, t + 256, ...
SLUICE_HD double PartialsThreadSum(const double* partial, int64_t chunks, int64_t c, int64_t j,
                                   int64_t t) {
  double acc = 0.0;
  for (int64_t q = t; q < chunks; q += kBiasGradThreads) acc = AddD(acc, partial[q * c + j]);
  return acc;
}

// db[j] from the tree's total: + beta · db[j] when beta != 0, rounded once.
template <typename D>
SLUICE_HD void StoreBiasGrad(D* db, int64_t j, double sum, double beta) {
  if (beta != 0.0) sum = AddD(sum, MulD(beta, static_cast<double>(AsFloat(db[j]))));
  db[j] = FromFloat<D>(static_cast<float>(sum));
}

template <typename D>
__global__ void __launch_bounds__(kBiasGradThreads)
    BiasGradFinishKernel(const double* partial, D* db, int64_t chunks, int64_t c, double beta) {
  __shared__ double s[kBiasGradThreads];
  const int64_t j = blockIdx.x, t = threadIdx.x;
  s[t] = PartialsThreadSum(partial, chunks, c, j, t);
  for (int64_t half = kBiasGradThreads / 2; half > 0; half /= 2) {
    __syncthreads();
    if (t < half) s[t] = AddD(s[t], s[t + half]);
  }
  if (t == 0) StoreBiasGrad(db, j, s[0], beta);
}

int LastError() { return static_cast<int>(cudaGetLastError()); }

template <typename T, typename D>
int BiasGrad(const BiasGradArgs& a, KernelTarget target) {
  const T* dy = static_cast<const T*>(a.dy);
  D* db = static_cast<D*>(a.db);
  double* partial = a.partial;
  const int64_t rows = a.rows, c = a.channels;
  const int64_t chunks = BiasGradChunks(rows, c);
  const double beta = a.beta;
  auto stream = static_cast<cudaStream_t>(target.cuda_stream);
  const bool on_host = target.cuda_stream == nullptr;
  // Pass 1.
  if (chunks > 0 && c <= kBiasGradThreads) {
    if (on_host) {
      double s[kBiasGradThreads];
      for (int64_t q = 0; q < chunks; ++q) {
        for (int64_t t = 0; t < kBiasGradThreads; ++t) s[t] = ChunkThreadSum(dy, rows, c, q, t);
        for (int64_t j = 0; j < c; ++j) partial[q * c + j] = CombineLanes(s, Lanes(c), c, j);
      }
    } else {
      BiasGradChunkKernel<T>
          <<<static_cast<unsigned>(chunks), kBiasGradThreads, 0, stream>>>(dy, partial, rows, c);
      if (const int err = LastError(); err != 0) return err;
    }
  } else if (chunks > 0) {
    const int err = ForEach(chunks * c, target, [=] __host__ __device__(int64_t i) {
      partial[i] = LaneSum(dy, rows, c, i / c, 0, i % c);
    });
    if (err != 0) return err;
  }
  // Pass 2.
  if (on_host) {
    double s[kBiasGradThreads];
    for (int64_t j = 0; j < c; ++j) {
      for (int64_t t = 0; t < kBiasGradThreads; ++t) {
        s[t] = PartialsThreadSum(partial, chunks, c, j, t);
      }
      for (int64_t half = kBiasGradThreads / 2; half > 0; half /= 2) {
        for (int64_t t = 0; t < half; ++t) s[t] = AddD(s[t], s[t + half]);
      }
      StoreBiasGrad(db, j, s[0], beta);
    }
    return 0;
  }
  BiasGradFinishKernel<D>
      <<<static_cast<unsigned>(c), kBiasGradThreads, 0, stream>>>(partial, db, chunks, c, beta);
  return LastError();
}

}  // namespace

int RunBiasAdd(const BiasAddArgs& a, KernelTarget target) {
  return VisitFloatType(a.bias_bf16, [&](auto bt) {
    return VisitFloatType(a.y_bf16, [&](auto yt) {
      using B = decltype(bt);
      using Y = decltype(yt);
      const bool vec = a.channels % kBiasAddVec == 0 && VecAligned<B, kBiasAddVec>(a.bias) &&
                       VecAligned<Y, kBiasAddVec>(a.y);
      return vec ? BiasAdd<B, Y, kBiasAddVec>(a, target) : BiasAdd<B, Y, 1>(a, target);
    });
  });
}

int RunBiasGrad(const BiasGradArgs& a, KernelTarget target) {
  return VisitFloatType(a.dy_bf16, [&](auto dt) {
    return VisitFloatType(a.db_bf16,
                          [&](auto bt) { return BiasGrad<decltype(dt), decltype(bt)>(a, target); });
  });
}

}  // namespace sluice::gpu_backend_internal
