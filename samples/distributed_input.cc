// The input of data-parallel training across processes: every rank reads its
// exact share of the records, in the order one process would read them all.
//
//   build/samples/distributed_input --make-demo /tmp/dist   # one process
//   mpirun -np 2 build/samples/distributed_input /tmp/dist  # two ranks
//   sluice convert images photos --out /tmp/photos/train --index
//   mpirun -np 2 build/samples/distributed_input /tmp/photos --batch 8
//
// The input: a folder of indexed .tfrecord files (a .idx beside each) of
// tf.train.Examples with an int64 label, "image/class/label" unless --label
// says otherwise: what `sluice convert images ... --index` writes. With
// --make-demo, rank 0 first writes 6 such files of 1,000 Examples while the
// others wait. Every rank then runs
//   TFRecordDataset(files).enumerate()       // each record's position
//       .global_shuffle(seed)
//       .apply(distribute(input_context))   // RECORD: positions r, r+W, ...
//       .map(parse).batch(per_replica_batch)
// and the ranks compare notes through the communicator: the same number of
// steps everywhere, every record (by its position in the files) read once,
// none twice.
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

// Examples of the schema `sluice convert images` writes, without the image.
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
      const std::string text = "class" + std::to_string(id % 10);
      b.AddInt64("image/class/label", id % 10)
          .AddBytes("image/class/text", text)
          .AddBytes("image/filename", text + "/record-" + std::to_string(id));
      SLUICE_RETURN_IF_ERROR(w.Write(b.Serialize()));
    }
    SLUICE_RETURN_IF_ERROR(w.Close());
  }
  return Status::OK();
}

int Run(const std::string& dir, bool make_demo, int64_t batch, uint64_t seed,
        const std::string& label) {
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
  // (position, record): the position is what the ranks compare notes on.
  sluice::Dataset records =
      sluice::TFRecordDataset(files).enumerate().global_shuffle({.seed = seed});
  auto plan = sluice::PlanDistribution(records, input);
  if (!plan.ok()) return fail(plan.status());
  // parse_example parses component 0 and keeps the others; it runs on whole
  // batches (it is fused with batch).
  auto record_first = [](sluice::Element e) -> sluice::Result<sluice::Element> {
    return sluice::Element({e[1], e[0]}, {"record", "position"});
  };
  sluice::Dataset ds =
      records.apply(sluice::distribute(input))
          .map(record_first)
          .map(sluice::parse_example({{label, sluice::FixedLenFeature(sluice::DType::kInt64, {})}}))
          .batch(batch, {.drop_remainder = true});
  if (c.rank() == 0) std::printf("%s\n", plan->ToString().c_str());

  int64_t steps = 0, first = -1, first_label = -1;
  std::vector<int64_t> positions;
  auto it = ds.iterator();
  if (!it.ok()) return fail(it.status());
  for (;;) {
    auto b = it->next();
    if (!b.ok()) return fail(b.status());
    if (!b->has_value()) break;
    const sluice::Element& e = **b;  // (label, position), batched
    for (int64_t p : e.find("position")->flat<int64_t>()) positions.push_back(p);
    if (first < 0) {
      first = e.find("position")->flat<int64_t>()[0];
      first_label = e.find(label)->flat<int64_t>()[0];
    }
    ++steps;
  }
  std::printf("rank %d of %d: %lld steps of %lld, first record %lld (label %lld)\n", c.rank(),
              c.size(), static_cast<long long>(steps), static_cast<long long>(batch),
              static_cast<long long>(first), static_cast<long long>(first_label));
  std::fflush(stdout);

  // Compare notes: equal steps, and every position read once across the ranks.
  auto lo = c.AllReduceInt(steps, sluice::ReduceOp::kMin);
  auto hi = c.AllReduceInt(steps, sluice::ReduceOp::kMax);
  if (!lo.ok() || !hi.ok()) return fail(!lo.ok() ? lo.status() : hi.status());
  std::string mine(reinterpret_cast<const char*>(positions.data()),
                   positions.size() * sizeof(int64_t));
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
    std::printf("every rank ran %s steps (%lld..%lld); %zu of %lld records read, %s\n",
                *lo == *hi ? "the same number of" : "DIFFERENT numbers of",
                static_cast<long long>(*lo), static_cast<long long>(*hi), seen.size(),
                static_cast<long long>(records.cardinality()), unique ? "each once" : "SOME TWICE");
    if (*lo != *hi || !unique) return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Every rank reads its exact share of indexed TFRecords (run under mpirun). DIR holds "
      ".tfrecord files, each with its .idx, of tf.train.Examples with an int64 label feature: "
      "what `sluice convert images DIR --out OUT/train --index` writes, or --make-demo."};
  std::string dir, demo, label = "image/class/label";
  int64_t batch = 32;
  uint64_t seed = 7;
  app.add_option("DIR", dir, "Folder of indexed .tfrecord files");
  app.add_option("--make-demo", demo,
                 "Write 6 indexed demo files of 1000 Examples into this folder, then read them");
  app.add_option("--label", label, "The int64 feature parsed as the label")->capture_default_str();
  app.add_option("--batch", batch, "Per-replica batch size")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--seed", seed, "Seed of the global shuffle")->capture_default_str();
  if (std::optional<int> status = samples::ParseCommandLine(app, argc, argv)) return *status;
  if (!demo.empty()) dir = demo;
  if (dir.empty()) {
    std::fprintf(stderr, "distributed_input: give DIR, or --make-demo DIR\n\n%s",
                 app.help().c_str());
    return 2;
  }
  return Run(dir, !demo.empty(), batch, seed, label);
}
