// One rank of the multi-process training tests (mpi_train_test.sh):
//
//   mpi_train_worker equivalence   W ranks of batch b train to the weights of
//                                  one model of batch W*b (computed on every
//                                  rank alone), equal bit for bit across ranks
//   mpi_train_worker die STEP      rank 1 exits during Fit at STEP: the job
//                                  must end, naming it
//
// Prints "rank R: OK ..." on success; exits 1 with the reason otherwise.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "sluice/core/rng.h"
#include "sluice/nn/layers.h"
#include "sluice/nn/sequential.h"
#include "sluice/nn/strategy.h"

namespace sluice::nn {
namespace {

std::shared_ptr<Communicator> g_comm;

int Fail(const std::string& why) {
  std::fprintf(stderr, "mpi_train_worker: %s\n", why.c_str());
  std::fflush(stderr);
  if (g_comm) g_comm->Abort(Status::Internal(why));
  return 1;
}

std::pair<Tensor, Tensor> Data(int64_t n) {
  Tensor x = *Tensor::Allocate(DType::kFloat32, Shape{n, 6});
  Tensor y = *Tensor::Allocate(DType::kInt64, Shape{n});
  Rng rng(5);
  for (int64_t i = 0; i < n; ++i) {
    float* xi = x.flat<float>().data() + i * 6;
    float s = 0;
    for (int j = 0; j < 6; ++j) s += (xi[j] = rng.Uniform(-1, 1)) * static_cast<float>(j - 2);
    y.flat<int64_t>()[i] = s > 0.5f ? 2 : (s > -0.5f ? 1 : 0);
  }
  return {x, y};
}

std::unique_ptr<Sequential> Model(std::shared_ptr<Strategy> strategy) {
  auto m = std::make_unique<Sequential>();
  m->Add<Dense>(12, DenseOptions{.activation = Activation::kTanh});
  m->Add<Dense>(3);
  Status s = m->Compile({.optimizer = std::make_shared<Adam>(0.02f),
                         .loss = std::make_shared<SparseCategoricalCrossentropy>(true),
                         .metrics = {std::make_shared<SparseCategoricalAccuracy>()},
                         .strategy = std::move(strategy)});
  if (!s.ok()) std::abort();
  return m;
}

std::vector<float> Weights(Sequential& m) {
  std::vector<float> all;
  for (Variable* v : m.trainable_variables()) {
    Tensor t = *v->Read();
    all.insert(all.end(), t.flat<float>().begin(), t.flat<float>().end());
  }
  return all;
}

int Equivalence(std::shared_ptr<MultiWorkerMirroredStrategy> strategy) {
  const int w = strategy->num_replicas_in_sync(), rank = g_comm->rank();
  const int64_t b = 8;
  auto [x, y] = Data(240);
  SetRandomSeed(3);
  auto one = Model(nullptr);
  Result<History> h1 =
      one->Fit(Dataset::from_tensor_slices({x, y}).batch(w * b), {.epochs = 3, .verbose = 0});
  if (!h1.ok()) return Fail("reference: " + h1.status().ToString());
  SetRandomSeed(3);
  auto model = Model(strategy);
  DistributedDataset train = strategy->DistributeDatasets([&](const InputContext& ctx) {
    return Dataset::from_tensor_slices({x, y}).apply(distribute(ctx)).batch(b);
  });
  Result<History> h = model->Fit(train, {.epochs = 3, .verbose = 0});
  if (!h.ok()) return Fail("fit: " + h.status().ToString());
  const std::vector<float> ref = Weights(*one), got = Weights(*model);
  double worst = 0;
  for (size_t i = 0; i < ref.size(); ++i)
    worst = std::max(worst, std::fabs(double(ref[i]) - got[i]));
  if (worst > 1e-5)
    return Fail("weights differ from the one-process run by " + std::to_string(worst));
  // Every rank holds the same bits.
  std::string bytes(reinterpret_cast<const char*>(got.data()), got.size() * sizeof(float));
  Result<std::vector<std::string>> all = g_comm->AllGatherBytes(bytes);
  if (!all.ok()) return Fail(all.status().ToString());
  for (const std::string& other : *all) {
    if (other != bytes) return Fail("the ranks' weights differ");
  }
  std::printf(
      "rank %d: OK %d ranks of batch %lld match one model of batch %lld within %.2g "
      "after %lld steps; weights equal on every rank; loss %.4f vs %.4f\n",
      rank, w, static_cast<long long>(b), static_cast<long long>(w * b), worst,
      static_cast<long long>(h->steps), h->history["loss"].back(), h1->history["loss"].back());
  return 0;
}

int Die(std::shared_ptr<MultiWorkerMirroredStrategy> strategy, int at) {
  auto [x, y] = Data(4000);
  auto model = Model(strategy);
  DistributedDataset train = strategy->DistributeDatasets([&](const InputContext& ctx) {
    return Dataset::from_tensor_slices({x, y}).apply(distribute(ctx)).batch(4);
  });
  FitOptions o{.epochs = 1, .verbose = 0};
  o.on_batch_end = [&](const StepInfo& info) -> Status {
    if (g_comm->rank() == 1 && info.step == at) {
      std::fprintf(stderr, "mpi_train_worker: rank 1 exits at step %d\n", at);
      std::fflush(stderr);
      _exit(3);
    }
    return Status::OK();
  };
  Result<History> h = model->Fit(train, o);
  return Fail("fit returned without rank 1 dying: " + h.status().ToString());
}

int Main(int argc, char** argv) {
  if (argc < 2) return Fail("usage: mpi_train_worker equivalence|die STEP [overlap]");
  Result<std::shared_ptr<Communicator>> c = Connect();
  if (!c.ok()) return Fail(c.status().ToString());
  g_comm = *c;
  MultiWorkerOptions options{.communicator = g_comm};
  // "overlap" last: buckets of 256 bytes all-reduced on the ops' thread
  // while the backward pass goes on.
  const bool overlap = std::string(argv[argc - 1]) == "overlap";
  if (overlap) options.cross_device = {.bucket_bytes = 256, .overlap = true};
  Result<std::shared_ptr<MultiWorkerMirroredStrategy>> s =
      MultiWorkerMirroredStrategy::Create(options);
  if (!s.ok()) return Fail(s.status().ToString());
  const std::string mode = argv[1];
  const int args = argc - (overlap ? 1 : 0);
  if (mode == "equivalence" && args == 2) return Equivalence(*s);
  if (mode == "die" && args == 3) return Die(*s, std::atoi(argv[2]));
  return Fail("bad arguments");
}

}  // namespace
}  // namespace sluice::nn

int main(int argc, char** argv) { return sluice::nn::Main(argc, argv); }
