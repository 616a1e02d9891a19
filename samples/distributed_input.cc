// The input of data-parallel training across processes: every rank reads its
// exact share of the records, in the order one process would read them all.
//
//   build/samples/distributed_input --make-demo /tmp/dist   # one process
//   mpirun -np 2 build/samples/distributed_input /tmp/dist  # two ranks
//
// With --make-demo, rank 0 writes the demo files (6 indexed TFRecord files
// of 1,000 tf.train.Examples) while the others wait; every rank then runs
//   TFRecordDataset(files).global_shuffle(seed)
//       .apply(distribute(input_context))   // RECORD: positions r, r+W, ...
//       .map(parse).batch(per_replica_batch)
// and the ranks compare notes through the communicator: the same number of
// steps everywhere, every record read once, none twice.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "command_line.h"
#include "sluice/distribute/communicator.h"
#include "sluice/distribute/distribute.h"
#include "sluice/pipeline/parse_example.h"
#include "sluice/records/example_builder.h"
#include "sluice/records/tfrecord_writer.h"

namespace {

using sluice::Status;

Status MakeDemo(const std::string& dir, int files, int records) {
  std::filesystem::create_directories(dir);
  int id = 0;
  for (int f = 0; f < files; ++f) {
    sluice::TFRecordWriterOptions o;
    o.write_index = true;  // .idx files: record-level sharding
    const std::string path = dir + "/train-" + std::to_string(f) + ".tfrecord";
    SLUICE_ASSIGN_OR_RETURN(sluice::TFRecordWriter w, sluice::TFRecordWriter::Open(path, o));
    for (int r = 0; r < records; ++r, ++id) {
      sluice::ExampleBuilder b;
      b.AddInt64("id", id).AddInt64("label", id % 10).AddBytes("image", std::string(64, 'x'));
      SLUICE_RETURN_IF_ERROR(w.Write(b.Serialize()));
    }
    SLUICE_RETURN_IF_ERROR(w.Close());
  }
  return Status::OK();
}

int Run(const std::string& dir, bool make_demo, int64_t batch, uint64_t seed) {
  // The communicator: MPI under mpirun or srun, a single rank otherwise.
  auto comm = sluice::Connect();
  if (!comm.ok()) {
    std::fprintf(stderr, "%s\n", comm.status().ToString().c_str());
    return 1;
  }
  sluice::Communicator& c = **comm;
  auto fail = [&](const Status& s) {
    std::fprintf(stderr, "rank %d: %s\n", c.rank(), s.ToString().c_str());
    c.Abort(s);  // the other ranks must not wait for this one
    return 1;
  };
  if (make_demo) {  // rank 0 writes, the others wait for it
    if (c.rank() == 0) {
      Status s = MakeDemo(dir, 6, 1000);
      if (!s.ok()) return fail(s);
    }
    Status s = c.Barrier();
    if (!s.ok()) return fail(s);
  }
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".tfrecord") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) return fail(Status::NotFound("no .tfrecord files in " + dir));

  const sluice::InputContext input = sluice::InputContext::FromCommunicator(*comm);
  sluice::Dataset records = sluice::TFRecordDataset(files).global_shuffle({.seed = seed});
  auto plan = sluice::PlanDistribution(records, input);
  if (!plan.ok()) return fail(plan.status());
  // parse_example runs on whole batches (it is fused with batch).
  sluice::Dataset ds = records.apply(sluice::distribute(input))
                           .map(sluice::parse_example(
                               {{"id", sluice::FixedLenFeature(sluice::DType::kInt64, {})},
                                {"label", sluice::FixedLenFeature(sluice::DType::kInt64, {})}}))
                           .batch(batch, {.drop_remainder = true});
  if (c.rank() == 0) std::printf("%s\n", plan->ToString().c_str());

  int64_t steps = 0, first = -1;
  std::vector<int64_t> ids;
  auto it = ds.iterator();
  if (!it.ok()) return fail(it.status());
  for (;;) {
    auto b = it->next();
    if (!b.ok()) return fail(b.status());
    if (!b->has_value()) break;
    for (int64_t id : (**b)[0].flat<int64_t>()) ids.push_back(id);
    if (first < 0) first = (**b)[0].flat<int64_t>()[0];
    ++steps;
  }
  std::printf("rank %d of %d: %lld steps of %lld, first record id %lld\n", c.rank(), c.size(),
              static_cast<long long>(steps), static_cast<long long>(batch),
              static_cast<long long>(first));
  std::fflush(stdout);

  // Compare notes: equal steps, and every id read once across the ranks.
  auto lo = c.AllReduceInt(steps, sluice::ReduceOp::kMin);
  auto hi = c.AllReduceInt(steps, sluice::ReduceOp::kMax);
  if (!lo.ok() || !hi.ok()) return fail(!lo.ok() ? lo.status() : hi.status());
  std::string mine(reinterpret_cast<const char*>(ids.data()), ids.size() * sizeof(int64_t));
  auto all = c.AllGatherBytes(mine);
  if (!all.ok()) return fail(all.status());
  if (c.rank() == 0) {
    std::vector<int64_t> seen;
    for (const std::string& s : *all) {
      const auto* v = reinterpret_cast<const int64_t*>(s.data());
      seen.insert(seen.end(), v, v + s.size() / sizeof(int64_t));
    }
    std::sort(seen.begin(), seen.end());
    const bool unique = std::adjacent_find(seen.begin(), seen.end()) == seen.end();
    std::printf("every rank ran %s steps (%lld..%lld); %zu records read, %s\n",
                *lo == *hi ? "the same number of" : "DIFFERENT numbers of",
                static_cast<long long>(*lo), static_cast<long long>(*hi), seen.size(),
                unique ? "each once" : "SOME TWICE");
    if (*lo != *hi || !unique) return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Every rank reads its exact share of indexed TFRecords (run under mpirun)"};
  std::string dir, demo;
  int64_t batch = 32;
  uint64_t seed = 7;
  app.add_option("dir", dir, "Folder of indexed .tfrecord files");
  app.add_option("--make-demo", demo,
                 "Write 6 indexed demo files of 1000 Examples into this folder, then read them");
  app.add_option("--batch", batch, "Per-replica batch size")->check(CLI::PositiveNumber);
  app.add_option("--seed", seed, "Seed of the global shuffle");
  if (std::optional<int> status = samples::ParseCommandLine(app, argc, argv)) return *status;
  if (!demo.empty()) dir = demo;
  if (dir.empty()) {
    std::fprintf(stderr, "give a folder of .tfrecord files, or --make-demo FOLDER\n");
    return 2;
  }
  return Run(dir, !demo.empty(), batch, seed);
}
