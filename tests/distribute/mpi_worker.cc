// One rank of the multi-process tests (mpi_test.sh runs it under mpirun):
//
//   mpi_worker collectives          every collective, checked on every rank
//   mpi_worker input DIR POLICY     rank 0 writes TFRecord files, then every
//                                   rank reads its share (RECORD, FILE, DATA)
//                                   and the shares are checked together
//   mpi_worker save DIR N           read N elements of a globally shuffled
//                                   epoch, save the iterator to DIR
//   mpi_worker restore DIR          restore (from a run on another number of
//                                   ranks) and check the rest of the epoch
//   mpi_worker die STEP             rank 1 exits at STEP of a training-like
//                                   loop; the job must end, naming it
//   mpi_worker hang                 rank 1 stops taking part; rank 0's
//                                   collective times out naming it, and aborts
//
// Prints "rank R: OK ..." on success; exits 1 with the reason otherwise.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sluice/distribute/cluster_resolver.h"
#include "sluice/distribute/communicator.h"
#include "sluice/distribute/distribute.h"
#include "sluice/records/tfrecord_writer.h"

namespace sluice {
namespace {

int Fail(const std::string& why, Communicator* comm = nullptr) {
  std::fprintf(stderr, "mpi_worker: %s\n", why.c_str());
  std::fflush(stderr);
  if (comm) comm->Abort(Status::Internal(why));
  return 1;
}

#define CHECK_OK(expr)                                                               \
  do {                                                                               \
    const Status check_st_ = (expr);                                                 \
    if (!check_st_.ok()) return Fail(#expr ": " + check_st_.ToString(), comm.get()); \
  } while (0)
#define CHECK_TRUE(cond, msg)                               \
  do {                                                      \
    if (!(cond)) return Fail(std::string(msg), comm.get()); \
  } while (0)

int Collectives(std::shared_ptr<Communicator> comm) {
  const int r = comm->rank(), w = comm->size();
  Result<ClusterSpec> cluster = ClusterResolver::FromEnvironment();
  CHECK_OK(cluster.status());
  CHECK_TRUE(cluster->rank == r && cluster->world_size == w, "resolver and MPI disagree");
  CHECK_OK(comm->Barrier());
  std::vector<int64_t> b = {r == w - 1 ? 42 : 0, r == w - 1 ? 7 : 0};
  CHECK_OK(comm->Broadcast(b.data(), b.size() * 8, w - 1));
  CHECK_TRUE(b[0] == 42 && b[1] == 7, "broadcast");
  std::vector<int32_t> all(static_cast<size_t>(w));
  const int32_t mine = r * 3;
  CHECK_OK(comm->AllGather(&mine, all.data(), sizeof(mine)));
  for (int k = 0; k < w; ++k) CHECK_TRUE(all[static_cast<size_t>(k)] == k * 3, "all-gather");
  // Float sums of 1M values: the same bits on every rank.
  std::vector<float> v(1 << 20);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = 0.1f * static_cast<float>((i % 97) + static_cast<size_t>(r));
  CHECK_OK(comm->AllReduce(v.data(), v.size(), DType::kFloat32, ReduceOp::kMean));
  if (w == 2) {  // MPI's pass halves the sum: the same bits as sum, then divide
    for (size_t i = 0; i < v.size(); ++i) {
      const float a = 0.1f * static_cast<float>(i % 97), b = 0.1f * static_cast<float>(i % 97 + 1);
      const float want = (a + b) / 2.0f;
      CHECK_TRUE(std::memcmp(&v[i], &want, 4) == 0, "the mean of 2 ranks is not (a + b) / 2");
    }
  }
  uint64_t hash = 1469598103934665603ull;
  for (float f : v) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    hash = (hash ^ bits) * 1099511628211ull;
  }
  std::vector<uint64_t> hashes(static_cast<size_t>(w));
  CHECK_OK(comm->AllGather(&hash, hashes.data(), sizeof(hash)));
  for (uint64_t h : hashes) CHECK_TRUE(h == hash, "all-reduce results differ between ranks");
  Result<int64_t> lo = comm->AllReduceInt(10 - r, ReduceOp::kMin);
  Result<int64_t> hi = comm->AllReduceInt(r, ReduceOp::kMax);
  CHECK_TRUE(lo.ok() && *lo == 10 - (w - 1) && hi.ok() && *hi == w - 1, "min/max");
  // A duplicate used from another thread at the same time.
  Result<std::unique_ptr<Communicator>> dup = comm->Duplicate();
  CHECK_OK(dup.status());
  bool dup_ok = true;
  std::thread other([&] {
    for (int i = 0; i < 100; ++i) {
      Result<int64_t> s = (*dup)->AllReduceInt(1, ReduceOp::kSum);
      dup_ok = dup_ok && s.ok() && *s == w;
    }
  });
  for (int i = 0; i < 100; ++i) {
    Result<int64_t> s = comm->AllReduceInt(2, ReduceOp::kSum);
    CHECK_TRUE(s.ok() && *s == 2 * w, "sum on the first channel");
  }
  other.join();
  CHECK_TRUE(dup_ok, "sum on the duplicate channel");
  Result<std::vector<std::string>> words =
      comm->AllGatherBytes(std::string(static_cast<size_t>(r) + 1, 'a' + static_cast<char>(r)));
  CHECK_OK(words.status());
  for (int k = 0; k < w; ++k)
    CHECK_TRUE((*words)[static_cast<size_t>(k)].size() == static_cast<size_t>(k) + 1, "bytes");
  std::printf("rank %d: OK collectives (%s)\n", r, comm->Describe().c_str());
  return 0;
}

std::vector<std::string> Files(const std::string& dir, int n) {
  std::vector<std::string> f;
  for (int i = 0; i < n; ++i) f.push_back(dir + "/part-" + std::to_string(i) + ".tfrecord");
  return f;
}

int64_t ValueOf(const Element& e) {
  return std::stoll(std::string(e[0].scalar<std::string_view>().substr(1)));
}

int Input(std::shared_ptr<Communicator> comm, const std::string& dir, const std::string& policy) {
  const int r = comm->rank(), w = comm->size();
  const std::vector<int> counts = {17, 30, 8, 25, 11};
  const auto files = Files(dir, static_cast<int>(counts.size()));
  if (r == 0) {
    int next = 0;
    for (size_t f = 0; f < files.size(); ++f) {
      TFRecordWriterOptions o;
      o.write_index = policy != "FILE";
      Result<TFRecordWriter> wr = TFRecordWriter::Open(files[f], o);
      CHECK_OK(wr.status());
      for (int k = 0; k < counts[f]; ++k) CHECK_OK(wr->Write("r" + std::to_string(next++)));
      CHECK_OK(wr->Close());
    }
  }
  CHECK_OK(comm->Barrier());
  DistributeOptions o;
  Dataset source = TFRecordDataset(files);
  if (policy == "RECORD") {
    o.policy = DistributePolicy::kRecord;
    source = source.global_shuffle({.seed = 5});
  } else if (policy == "FILE") {
    o.policy = DistributePolicy::kFile;
  } else {
    o.policy = DistributePolicy::kData;
    source = source.take(-1).filter([](const Element&) -> Result<bool> { return true; });
  }
  const InputContext ctx = InputContext::FromCommunicator(comm);
  Result<DistributePlan> plan = PlanDistribution(source, ctx, o);
  CHECK_OK(plan.status());
  std::vector<int64_t> mine;
  for (const Element& e : source.apply(distribute(ctx, o))) mine.push_back(ValueOf(e));
  // Equal counts, disjoint shares.
  Result<int64_t> lo = comm->AllReduceInt(static_cast<int64_t>(mine.size()), ReduceOp::kMin);
  Result<int64_t> hi = comm->AllReduceInt(static_cast<int64_t>(mine.size()), ReduceOp::kMax);
  // DATA does not know the size in advance: 91 records, complete rounds.
  const int64_t per_rank = plan->per_rank >= 0 ? plan->per_rank : 91 / w;
  CHECK_TRUE(lo.ok() && hi.ok() && *lo == *hi && *lo == per_rank, "unequal step counts");
  std::string bytes(reinterpret_cast<const char*>(mine.data()), mine.size() * 8);
  Result<std::vector<std::string>> all = comm->AllGatherBytes(bytes);
  CHECK_OK(all.status());
  std::set<int64_t> seen;
  for (const std::string& s : *all) {
    for (size_t k = 0; k < s.size() / 8; ++k) {
      int64_t v;
      std::memcpy(&v, s.data() + 8 * k, 8);
      CHECK_TRUE(seen.insert(v).second, "an element read by two ranks");
    }
  }
  CHECK_TRUE(static_cast<int64_t>(seen.size()) == per_rank * w, "shares do not add up");
  if (policy != "FILE") {
    // Rank r's k-th element is position k * w + r of the one-process order.
    std::vector<int64_t> global;
    for (const Element& e : source) global.push_back(ValueOf(e));
    for (size_t k = 0; k < mine.size(); ++k) {
      CHECK_TRUE(mine[k] == global[k * static_cast<size_t>(w) + static_cast<size_t>(r)],
                 "the order depends on the number of ranks");
    }
  }
  std::printf("rank %d: OK input %s\n", r, plan->ToString().c_str());
  return 0;
}

Dataset EpochFor(const InputContext& ctx) {
  return Dataset::range(1000)
      .global_shuffle({.seed = 3})
      .apply(distribute(ctx))
      .map([](Element e) { return e; }, {.parallelism = 2})
      .batch(4)
      .prefetch(2);
}

int Save(std::shared_ptr<Communicator> comm, const std::string& dir, int n) {
  const InputContext ctx = InputContext::FromCommunicator(comm);
  Result<Iterator> it = EpochFor(ctx).iterator();
  CHECK_OK(it.status());
  for (int k = 0; k < n; ++k) {
    Result<std::optional<Element>> b = it->next();
    CHECK_OK(b.status());
  }
  Result<std::string> state = it->save();
  CHECK_OK(state.status());
  std::ofstream(dir + "/state." + std::to_string(comm->rank()), std::ios::binary) << *state;
  std::ofstream(dir + "/saved_world") << comm->size() << " " << n;
  std::printf("rank %d: OK saved after %d batches\n", comm->rank(), n);
  return 0;
}

int Restore(std::shared_ptr<Communicator> comm, const std::string& dir) {
  const int r = comm->rank(), w = comm->size();
  int saved_w = 0, n = 0;
  std::ifstream(dir + "/saved_world") >> saved_w >> n;
  CHECK_TRUE(saved_w > 0, "no saved_world file");
  std::ifstream in(dir + "/state." + std::to_string(r % saved_w), std::ios::binary);
  std::stringstream state;
  state << in.rdbuf();
  const InputContext ctx = InputContext::FromCommunicator(comm);
  Result<Iterator> it = EpochFor(ctx).iterator();
  CHECK_OK(it.status());
  CHECK_OK(it->restore(state.str()));
  std::vector<int64_t> rest;
  for (;;) {
    Result<std::optional<Element>> b = it->next();
    CHECK_OK(b.status());
    if (!b->has_value()) break;
    for (int64_t v : (**b)[0].flat<int64_t>()) rest.push_back(v);
  }
  std::vector<int64_t> global;
  for (const Element& e : Dataset::range(1000).global_shuffle({.seed = 3})) {
    global.push_back(e[0].scalar<int64_t>());
  }
  const size_t done = static_cast<size_t>(4 * n * saved_w);
  CHECK_TRUE(rest.size() == (1000 - done) / static_cast<size_t>(w),
             "restored share has " + std::to_string(rest.size()) + " elements");
  for (size_t k = 0; k < rest.size(); ++k) {
    CHECK_TRUE(rest[k] == global[done + k * static_cast<size_t>(w) + static_cast<size_t>(r)],
               "restored order differs at " + std::to_string(k));
  }
  std::printf("rank %d: OK restored a %d-rank state on %d ranks: %zu more elements\n", r, saved_w,
              w, rest.size());
  return 0;
}

int Die(std::shared_ptr<Communicator> comm, int step) {
  const InputContext ctx = InputContext::FromCommunicator(comm);
  int k = 0;
  for (const Element& batch : Dataset::range(10000).apply(distribute(ctx)).batch(8)) {
    (void)batch;
    if (comm->rank() == 1 && k == step) {
      std::fprintf(stderr, "mpi_worker: rank 1 exits at step %d\n", k);
      std::fflush(stderr);
      _exit(3);
    }
    // The step's gradient all-reduce.
    std::vector<float> grad(1024, 1.0f);
    CHECK_OK(comm->AllReduce(grad.data(), grad.size(), DType::kFloat32, ReduceOp::kMean));
    ++k;
  }
  return Fail("the loop ended without rank 1 dying", comm.get());
}

int Hang(std::shared_ptr<Communicator> comm) {
  if (comm->rank() == 1) {
    std::this_thread::sleep_for(std::chrono::seconds(120));
    return 0;
  }
  Status s = comm->Barrier();
  if (s.ok()) return Fail("a barrier without rank 1 completed", comm.get());
  std::fprintf(stderr, "mpi_worker: rank %d: %s\n", comm->rank(), s.ToString().c_str());
  comm->Abort(s);
  return 1;
}

int Main(int argc, char** argv) {
  if (argc < 2) return Fail("usage: mpi_worker collectives|input|save|restore|die|hang ...");
  const std::string mode = argv[1];
  Result<std::shared_ptr<Communicator>> c = Connect();
  if (!c.ok()) return Fail("connect: " + c.status().ToString());
  std::shared_ptr<Communicator> comm = *c;
  if (mode == "collectives") return Collectives(comm);
  if (mode == "input" && argc == 4) return Input(comm, argv[2], argv[3]);
  if (mode == "save" && argc == 4) return Save(comm, argv[2], std::atoi(argv[3]));
  if (mode == "restore" && argc == 3) return Restore(comm, argv[2]);
  if (mode == "die" && argc == 3) return Die(comm, std::atoi(argv[2]));
  if (mode == "hang") return Hang(comm);
  return Fail("bad arguments for " + mode, comm.get());
}

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) { return sluice::Main(argc, argv); }
