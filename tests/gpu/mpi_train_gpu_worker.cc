// One rank of MultiWorkerMirroredStrategy on a shared GPU, under mpirun:
//
//   mpirun -np 2 gpu_mpi_train_worker [--epochs N]
//
// Every rank puts its replica on gpu:0 (one GPU for all: NCCL refuses two
// ranks on one GPU, so the cross-device ops must be the host-staged MPI
// ones), then:
//   1. the cross-device ops are the host ones ("host (MPI ...)"), and their
//      AllReduceMean of a 16 MiB tensor on gpu:0 gives the mean of the
//      ranks' values (timed: GB/s per rank through the host);
//   2. W ranks of batch b train (SGD with momentum, 2 epochs) to the weights
//      of one model on gpu:0 with batch W*b, trained alone on every rank,
//      within 1e-4 (GEMMs of other batch sizes sum in another order), and
//      the ranks' weights are equal bit for bit.
// Without a GPU, gpu:0 runs the GPU backend's code on the host
// (RegisterNnBackendOnHost), so the same checks run anywhere.
// Prints "rank R: OK ..." lines; exits 1 with the reason otherwise.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "sluice/core/rng.h"
#include "sluice/device/physical_devices.h"
#include "sluice/distribute/communicator.h"
#include "sluice/nn/cross_device_ops.h"
#include "sluice/nn/cuda/cuda_backend.h"
#include "sluice/nn/cuda/nccl_ops.h"
#include "sluice/nn/layers.h"
#include "sluice/nn/sequential.h"
#include "sluice/nn/strategy.h"

namespace sluice::gpu {
namespace {

constexpr double kTolerance = 1e-4;
std::shared_ptr<Communicator> g_comm;

int Fail(const std::string& why) {
  std::fprintf(stderr, "gpu_mpi_train_worker: rank %d: %s\n", g_comm ? g_comm->rank() : -1,
               why.c_str());
  std::fflush(stderr);
  if (g_comm) g_comm->Abort(Status::Internal(why));
  return 1;
}

std::pair<Tensor, Tensor> Data(int64_t n) {
  Tensor x = *Tensor::Allocate(DType::kFloat32, Shape{n, 16});
  Tensor y = *Tensor::Allocate(DType::kInt64, Shape{n});
  Rng rng(7);
  for (int64_t i = 0; i < n; ++i) {
    float s = 0;
    for (int j = 0; j < 16; ++j) {
      const float v = rng.Uniform(-1, 1);
      x.flat<float>()[i * 16 + j] = v;
      s += v * static_cast<float>(j % 5 - 2);
    }
    y.flat<int64_t>()[i] = s > 1 ? 2 : (s > -1 ? 1 : 0);
  }
  return {x, y};
}

Result<std::unique_ptr<nn::Sequential>> Model(std::shared_ptr<nn::Strategy> strategy) {
  auto m = std::make_unique<nn::Sequential>();
  m->Add<nn::Dense>(64, nn::DenseOptions{.activation = nn::Activation::kRelu});
  m->Add<nn::Dense>(3);
  SLUICE_RETURN_IF_ERROR(m->SetDevice(Device::Gpu(0)));
  SLUICE_RETURN_IF_ERROR(
      m->Compile({.optimizer = std::make_shared<nn::SGD>(0.1f, 0.9f),
                  .loss = std::make_shared<nn::SparseCategoricalCrossentropy>(true),
                  .strategy = std::move(strategy)}));
  return m;
}

std::vector<float> Weights(nn::Sequential& m) {
  std::vector<float> all;
  for (nn::Variable* v : m.trainable_variables()) {
    Tensor t = *v->Read();
    all.insert(all.end(), t.flat<float>().begin(), t.flat<float>().end());
  }
  return all;
}

// Check 1: the host-staged ops serve two ranks on one GPU, exactly.
int CrossDeviceOps() {
  const int rank = g_comm->rank(), w = g_comm->size();
  Result<nn::Backend*> b = nn::GetBackend(Device::Gpu(0));
  if (!b.ok()) return Fail("gpu:0: " + b.status().ToString());
  Result<std::unique_ptr<nn::CrossDeviceOps>> ops = nn::MakeCrossDeviceOps(**b, *g_comm);
  if (!ops.ok()) return Fail("cross-device ops: " + ops.status().ToString());
  const std::string name = (*ops)->name();
  if (w > 1 && name.rfind("host", 0) != 0) {
    return Fail("ranks sharing gpu:0 got '" + name + "', not the host-staged ops");
  }
  const int64_t n = int64_t{4} << 20;  // 16 MiB of float32
  std::vector<float> mine(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) mine[i] = static_cast<float>((i % 1000) * (rank + 1));
  Result<DeviceTensor> t = (*b)->ToDevice(*Tensor::FromVector<float>(mine));
  if (!t.ok()) return Fail(t.status().ToString());
  DeviceTensor* list[] = {&*t};
  const int rounds = 5;
  double best = 1e30;
  for (int r = 0; r < rounds; ++r) {
    if (Status s = g_comm->Barrier(); !s.ok()) return Fail(s.ToString());
    const auto t0 = std::chrono::steady_clock::now();
    if (Status s = (*ops)->AllReduceMean(list); !s.ok()) return Fail("all-reduce: " + s.ToString());
    if (Status s = (*b)->Synchronize(); !s.ok()) return Fail(s.ToString());
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  // After `rounds` means of the same values, each element is its mean.
  Result<Tensor> back = (*b)->ToHost(*t);
  if (!back.ok()) return Fail(back.status().ToString());
  const double factor = (w + 1) / 2.0;  // mean of 1..w
  for (int64_t i = 0; i < n; i += 997) {
    const double want = (i % 1000) * factor, got = back->flat<float>()[i];
    if (std::fabs(got - want) > 1e-3 * std::max(1.0, want)) {
      return Fail("all-reduce mean at " + std::to_string(i) + ": " + std::to_string(got) +
                  " instead of " + std::to_string(want));
    }
  }
  std::printf("rank %d: OK %s: AllReduceMean of 16 MiB on gpu:0 in %.2f ms (%.2f GB/s)\n", rank,
              name.c_str(), best * 1e3, n * 4 / best / 1e9);
  return 0;
}

// Check 2: W ranks of batch b train as one model of batch W*b.
int Equivalence(int epochs) {
  const int rank = g_comm->rank();
  Result<std::shared_ptr<nn::MultiWorkerMirroredStrategy>> strategy =
      nn::MultiWorkerMirroredStrategy::Create({.device = "gpu:0", .communicator = g_comm});
  if (!strategy.ok()) return Fail(strategy.status().ToString());
  const int w = (*strategy)->num_replicas_in_sync();
  const int64_t b = 16;
  auto [x, y] = Data(512);
  nn::SetRandomSeed(11);
  Result<std::unique_ptr<nn::Sequential>> one = Model(nullptr);
  if (!one.ok()) return Fail("reference model: " + one.status().ToString());
  Result<nn::History> h1 = (*one)->Fit(Dataset::from_tensor_slices({x, y}).batch(w * b),
                                       {.epochs = epochs, .verbose = 0});
  if (!h1.ok()) return Fail("reference fit: " + h1.status().ToString());
  nn::SetRandomSeed(11);
  Result<std::unique_ptr<nn::Sequential>> model = Model(*strategy);
  if (!model.ok()) return Fail("model: " + model.status().ToString());
  nn::DistributedDataset train = (*strategy)->DistributeDatasets([&](const InputContext& c) {
    return Dataset::from_tensor_slices({x, y}).apply(distribute(c)).batch(b);
  });
  const auto t0 = std::chrono::steady_clock::now();
  Result<nn::History> h = (*model)->Fit(train, {.epochs = epochs, .verbose = 0});
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!h.ok()) return Fail("fit: " + h.status().ToString());
  const std::vector<float> ref = Weights(**one), got = Weights(**model);
  if (ref.size() != got.size()) return Fail("the models differ in size");
  double worst = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    worst = std::max(worst, std::fabs(double(ref[i]) - got[i]));
  }
  if (!(worst <= kTolerance)) {
    return Fail("weights differ from one model of batch " + std::to_string(w * b) + " by " +
                std::to_string(worst) + " (tolerance " + std::to_string(kTolerance) + ")");
  }
  std::string bytes(reinterpret_cast<const char*>(got.data()), got.size() * sizeof(float));
  Result<std::vector<std::string>> all = g_comm->AllGatherBytes(bytes);
  if (!all.ok()) return Fail(all.status().ToString());
  for (const std::string& other : *all) {
    if (other != bytes) return Fail("the ranks' weights differ");
  }
  std::printf(
      "rank %d: OK %d ranks of batch %lld on gpu:0 match one model of batch %lld within %.2g "
      "(tolerance %.0e) after %lld steps (%.2f s); weights equal on every rank; loss %.4f vs "
      "%.4f\n",
      rank, w, static_cast<long long>(b), static_cast<long long>(w * b), worst, kTolerance,
      static_cast<long long>(h->steps), secs, h->history["loss"].back(),
      h1->history["loss"].back());
  return 0;
}

int Main(int argc, char** argv) {
  int epochs = 2;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--epochs") == 0 && i + 1 < argc) {
      epochs = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: mpirun -np W gpu_mpi_train_worker [--epochs N]\n");
      return 2;
    }
  }
  const Status gpu = GpuAvailability();
  if (gpu.ok()) {
    RegisterNnBackend();
  } else {
    RegisterNnBackendOnHost();  // gpu:0's code path on the host
  }
  RegisterNcclCrossDeviceOps();  // consulted first; must decline a shared GPU
  Result<std::shared_ptr<Communicator>> c = Connect();
  if (!c.ok()) return Fail(c.status().ToString());
  g_comm = *c;
  if (g_comm->rank() == 0) {
    std::printf("gpu_mpi_train_worker: %d ranks on gpu:0 (%s); %s\n", g_comm->size(),
                gpu.ok() ? "a GPU" : "no GPU: the GPU backend on the host",
                g_comm->Describe().c_str());
    std::fflush(stdout);
  }
  if (int rc = CrossDeviceOps(); rc != 0) return rc;
  return Equivalence(epochs);
}

}  // namespace
}  // namespace sluice::gpu

int main(int argc, char** argv) { return sluice::gpu::Main(argc, argv); }
