// The sluice side of the peer comparison (scripts/bench-peers.sh): cases
// 1-4 of docs/perf.md's "Peers side by side" and the file formats of issue
// 40 (text, csv, fixedlength), written with the public pipeline API the way
// a user would, and timed for --seconds after --warmup seconds. Prints one
// JSON line:
//   {"system":"sluice","case":"decode","items_per_s":...,"items":...,"seconds":...}
//
//   sluice_cases --case decode|fused|folder|wds|read|parse|text|csv|fixedlength --files GLOB
//       [--cores N]
//       [--seconds 10] [--warmup 3] [--batch B] [--parallel-reads N]
//       [--fusion 0|1] [--ops fused|separate] [--loop 1] [--parallelism N]
//       [--cpu-budget N] [--max-threads N] [--stats 1] [--loop-rows R]
//       [--cache 1]
//   sluice_cases --make-records PREFIX [--count 400000] [--shards 4]
//   sluice_cases --make-files text|csv|fixed --out PREFIX [--count N] [--shards S]
//
// decode: TFRecords of `sluice convert images` -> map(parse, full decode,
//   random resized crop to 224x224, random flip, normalize; kAutotune) ->
//   batch(128) -> prefetch(kAutotune). Items: images. The map is written as
//   docs/ops.md recommends: one ops::DecodeRandomCropResizeInto (fused =
//   false: every row decoded at full resolution, resized, mirrored and
//   normalized as the decoder produces it) into ctx.AllocateOutput (the
//   image's row of its batch). --ops separate writes it as four ops instead
//   (DecodeJpeg, RandomResizedCrop, RandomFlipLeftRight, Normalize): the
//   same pixels, for comparison.
// fused: the same with the crop-window decode (fused = true: only the
//   window's iMCU rows and columns, DCT-scaled).
// folder (case 7): --files is an image folder (DIR/CLASS/NAME.JPEG, listed
//   by ScanImageFolder) -> from_tensor_slices(file names, labels) ->
//   shuffle(all, every epoch) -> repeat -> map(ReadFile, then decode's
//   fused op) -> batch(128) -> prefetch. Every peer reads the files.
// wds (case 8): WebDataset tar shards (KEY.jpg, KEY.cls; make_wds.py) ->
//   WebDatasetDataset({jpg, cls}, num_parallel_reads = kAutotune) -> map
//   (the label from cls's text, decode's fused op) -> batch(128) -> prefetch.
// read: the records, CRCs checked, batched by B (4096) so the Python peer's
//   per-batch cost does not count. Items: records.
// parse: batch(B = 1024) -> map(ExampleParser::ParseBatch, kAutotune) of
//   the small Examples --make-records writes. Items: Examples.
// text: TextLineDataset -> batch(B = 4096) -> prefetch. Items: lines.
// csv: CsvDataset (6 typed columns, header; CsvSpec below) -> batch(B =
//   4096) -> prefetch. Items: rows.
// fixedlength: FixedLengthRecordDataset(record_bytes = 3073, CIFAR-10's
//   binary format: a label byte and 32x32x3 pixels) -> batch(B = 1024) ->
//   prefetch. Items: records.
// --make-files KIND writes the files of those cases, deterministically
//   (seed 42), through core/file.h's OutputFile: text:
//   PREFIX-0000i-of-0000S.txt, --count lines in all (default 2,000,000 of
//   ~120 bytes, log-like: 4 files of ~60 MB); csv: PREFIX-...csv, a header
//   and --count rows (default 2,000,000 of ~43 bytes; some weights empty,
//   some names quoted with a comma inside); fixed: PREFIX-...bin, --count
//   records of 3073 bytes (default 50,000: CIFAR-10's train set, which
//   bench-peers.sh writes in 5 files as CIFAR's data_batch_1..5). tfdata_cases.py and
//   python_cases.py read them with the same settings.
// --make-records writes PREFIX-0000i-of-0000S.tfrecord: `count` Examples of
//   ~330 bytes (4 int64 scalars, 2 float lists of 4, an int64 list of 8,
//   bytes of 16 and 100, a float scalar); tfdata_cases.py has the same spec.
//
// Image shards are read in parallel (num_parallel_reads = kAutotune), small
// records, lines, rows and fixed-length records one file at a time
// (--parallel-reads N overrides, -1: kAutotune); the dataset
// repeats forever, and with_options caps the CPU budget at --cores.
// --fusion 0 turns map-and-batch fusion off (Options::map_and_batch_fusion),
// to measure what it brings.
// --batch 1 in the read case iterates record by record (no batch).
// --loop 1 (decode and fused cases) calls the case's map function in a plain
//   loop on --cores threads over the records held in memory, each output a
//   new tensor: the same work per image with no pipeline, the ceiling a
//   pipeline could reach with these ops. Prints "system":"loop".
// --loop-rows R (with --loop 1): each thread writes its images into the
//   rows of its own batch-sized buffer of R images (row i % R), as a fused
//   map writes into its batch, instead of a new tensor per image that stays
//   in the core's cache: the loop's cost of writing to memory.
// --parallelism N: the image map's parallelism fixed at N instead of
//   kAutotune. --cpu-budget N: Options::cpu_budget (default --cores).
// --max-threads N: Options::max_threads, the task arena's threads (default
//   4 x the CPU budget).
// --cache 1: the records are read from the files once and then held in
//   memory (TFRecordDataset -> cache() -> repeat()): the same pipeline with
//   no file reading in the pull of the stage above, to tell the reads' cost
//   from the rest.
// --stats 1: adds the image map's final parallelism and busy threads to the
//   JSON line; --stats 2 also prints the iterator's stats to stderr.
#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/args.h"
#include "peer_util.h"
#include "sluice/core/file.h"
#include "sluice/core/rng.h"
#include "sluice/ops/decode_crop_resize.h"
#include "sluice/ops/image_ops.h"
#include "sluice/ops/jpeg.h"
#include "sluice/ops/read_file.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/pipeline/fixed_length_record_dataset.h"
#include "sluice/pipeline/image_folder.h"
#include "sluice/pipeline/parse_example.h"
#include "sluice/pipeline/text_datasets.h"
#include "sluice/pipeline/webdataset.h"
#include "sluice/records/example_builder.h"
#include "sluice/records/example_parser.h"
#include "sluice/records/tfrecord_writer.h"

namespace sluice::bench {
namespace {

struct Args {
  std::string kase;
  std::string files;
  int cores = 0;
  double seconds = 10;
  double warmup = 3;
  int64_t batch = 0;  // 0: the case's default
  std::string make_records;
  std::string make_files;  // text, csv or fixed (with --out)
  std::string out;
  int64_t count = 0;  // 0: the generator's default
  int shards = 4;
  int64_t parallel_reads = 0;  // 0: the case's default
  int fusion = 1;              // Options::map_and_batch_fusion
  std::string ops = "fused";   // or "separate" (decode case)
  int loop = 0;                // 1: the map function in a plain loop (RunLoop)
  int64_t loop_rows = 0;       // > 0: RunLoop writes into rows of a buffer
  int64_t parallelism = 0;     // 0: kAutotune (decode and fused cases)
  int cpu_budget = 0;          // 0: --cores
  int max_threads = 0;         // 0: Options' default
  int stats = 0;               // 1: stats in the JSON line and on stderr
  int cache = 0;               // 1: records cached in memory after one read
};

constexpr char kProgram[] = "sluice_cases";

[[noreturn]] void Die(const std::string& message) { peers::Die(kProgram, message); }

Args ParseArgs(int argc, char** argv) {
  Args a;
  bench::CommandLine args(
      kProgram,
      "--case decode|fused|folder|wds|read|parse|text|csv|fixedlength --files GLOB ... | "
      "--make-records "
      "PREFIX | --make-files text|csv|fixed --out PREFIX");
  args.Add("--case", &a.kase)
      .Add("--files", &a.files)
      .Add("--cores", &a.cores)
      .Add("--seconds", &a.seconds)
      .Add("--warmup", &a.warmup)
      .Add("--batch", &a.batch)
      .Add("--make-records", &a.make_records)
      .Add("--make-files", &a.make_files)
      .Add("--out", &a.out)
      .Add("--count", &a.count)
      .Add("--shards", &a.shards)
      .Add("--parallel-reads", &a.parallel_reads)
      .Add("--fusion", &a.fusion)
      .Add("--ops", &a.ops)
      .Add("--loop", &a.loop)
      .Add("--loop-rows", &a.loop_rows)
      .Add("--parallelism", &a.parallelism)
      .Add("--cpu-budget", &a.cpu_budget)
      .Add("--max-threads", &a.max_threads)
      .Add("--stats", &a.stats)
      .Add("--cache", &a.cache)
      .Parse(argc, argv);
  if (a.ops != "fused" && a.ops != "separate") {
    args.UsageError("--ops is fused or separate, not " + a.ops);
  }
  if (!a.make_files.empty()) {
    if (a.make_files != "text" && a.make_files != "csv" && a.make_files != "fixed") {
      args.UsageError("--make-files is text, csv or fixed, not " + a.make_files);
    }
    if (a.out.empty()) args.UsageError("--make-files needs --out PREFIX");
  } else if (a.make_records.empty() && (a.kase.empty() || a.files.empty())) {
    args.UsageError("need --case and --files (or --make-records, --make-files)");
  }
  return a;
}

// Cases 1, 2 (and 6), 7 and 8: images to 224x224 batches.
bool IsImageCase(const std::string& kase) {
  return kase == "decode" || kase == "fused" || kase == "folder" || kase == "wds";
}

// The small Example of cases 3 and 4.
ParseSpec SmallSpec() {
  return {{"id", FixedLenFeature(DType::kInt64, {})},
          {"label", FixedLenFeature(DType::kInt64, {})},
          {"width", FixedLenFeature(DType::kInt64, {})},
          {"height", FixedLenFeature(DType::kInt64, {})},
          {"bbox", FixedLenFeature(DType::kFloat32, {4})},
          {"scores", FixedLenFeature(DType::kFloat32, {4})},
          {"tokens", FixedLenFeature(DType::kInt64, {8})},
          {"key", FixedLenFeature(DType::kString, {})},
          {"text", FixedLenFeature(DType::kString, {})},
          {"weight", FixedLenFeature(DType::kFloat32, {})}};
}

int MakeRecords(const Args& a) {
  Rng rng(42);
  const int64_t count = a.count > 0 ? a.count : 400000;
  std::string text(100, ' '), key(16, ' ');
  int64_t written = 0;
  for (int s = 0; s < a.shards; ++s) {
    char name[64];
    std::snprintf(name, sizeof(name), "-%05d-of-%05d.tfrecord", s, a.shards);
    auto writer = TFRecordWriter::Open(a.make_records + name, {.write_index = true});
    if (!writer.ok()) Die(writer.status().ToString());
    const int64_t n = count / a.shards + (s < count % a.shards ? 1 : 0);
    for (int64_t i = 0; i < n; ++i, ++written) {
      for (char& c : text) c = static_cast<char>('a' + rng.NextU32() % 26);
      for (char& c : key) c = static_cast<char>('0' + rng.NextU32() % 10);
      const float u = static_cast<float>(rng.NextU32() % 1000) / 1000.0f;
      const int64_t tokens[8] = {written, 1, 2, 3, 5, 8, 13, rng.NextU32() % 30000};
      ExampleBuilder b;
      b.AddInt64("id", written)
          .AddInt64("label", rng.NextU32() % 1000)
          .AddInt64("width", 500)
          .AddInt64("height", 375)
          .AddFloatList("bbox", {0.1f, 0.2f, 0.7f + u * 0.1f, 0.9f})
          .AddFloatList("scores", {u, 1 - u, u / 2, 0.25f})
          .AddInt64List("tokens", std::span<const int64_t>(tokens, 8))
          .AddBytes("key", key)
          .AddBytes("text", text)
          .AddFloat("weight", u);
      Status st = writer->Write(b.Serialize());
      if (!st.ok()) Die(st.ToString());
    }
    Status st = writer->Close();
    if (!st.ok()) Die(st.ToString());
  }
  std::fprintf(stderr, "sluice_cases: wrote %lld Examples in %d shards at %s-*\n",
               static_cast<long long>(written), a.shards, a.make_records.c_str());
  return 0;
}

// The record size of the fixedlength case: CIFAR-10's binary format, a
// label byte and 32x32x3 pixels (planes R, G, B).
constexpr int64_t kFixedRecordBytes = 3073;

// The columns of the csv case (header "id,label,x,y,weight,name"): id and
// label required, weight 1.0 when empty, name "" when empty.
std::vector<CsvDefault> CsvSpec() {
  return {CsvDefault::Required(DType::kInt64),
          CsvDefault::Required(DType::kInt32),
          CsvDefault::Required(DType::kFloat32),
          CsvDefault::Required(DType::kFloat32),
          CsvDefault::Value(1.0f),
          CsvDefault::Value("")};
}

// Appends one line (or row, or record) of `kind` to `out`; `i` counts them
// over all files.
void AppendItem(const std::string& kind, int64_t i, Rng& rng, std::string& out) {
  char line[256];
  int n = 0;
  if (kind == "text") {
    static constexpr const char* kLevels[] = {"INFO ", "INFO ", "INFO ", "DEBUG", "WARN ", "ERROR"};
    static constexpr const char* kVerbs[] = {"GET", "GET", "POST", "PUT", "DELETE"};
    static constexpr int kStatus[] = {200, 200, 200, 201, 204, 304, 404, 500};
    const int64_t ms = i * 7;
    n = std::snprintf(line, sizeof(line),
                      "2026-12-01T%02lld:%02lld:%02lld.%03lldZ %s [worker-%02u] %s "
                      "/api/v1/items/%u status=%d bytes=%u latency_ms=%.1f req=%08x\n",
                      static_cast<long long>(ms / 3600000 % 24),
                      static_cast<long long>(ms / 60000 % 60),
                      static_cast<long long>(ms / 1000 % 60), static_cast<long long>(ms % 1000),
                      kLevels[rng.UniformInt(6)], static_cast<unsigned>(rng.UniformInt(32)),
                      kVerbs[rng.UniformInt(5)], static_cast<unsigned>(rng.UniformInt(1000000)),
                      kStatus[rng.UniformInt(8)], static_cast<unsigned>(rng.UniformInt(100000)),
                      rng.UniformDouble() * 250, rng.NextU32());
  } else if (kind == "csv") {
    const unsigned who = static_cast<unsigned>(rng.UniformInt(10000));
    const uint64_t shape = rng.UniformInt(100);
    char weight[32] = "";
    if (shape >= 3) std::snprintf(weight, sizeof(weight), "%.3f", rng.UniformDouble());
    char name[48];
    if (shape >= 95) {
      std::snprintf(name, sizeof(name), "\"user_%04u, team %u\"", who, who % 17);
    } else {
      std::snprintf(name, sizeof(name), "user_%04u", who);
    }
    n = std::snprintf(line, sizeof(line), "%lld,%u,%.4f,%.4f,%s,%s\n", static_cast<long long>(i),
                      static_cast<unsigned>(rng.UniformInt(1000)), rng.Normal(),
                      rng.UniformDouble() * 100 - 50, weight, name);
  } else {
    const size_t at = out.size();
    out.resize(at + kFixedRecordBytes);
    out[at] = static_cast<char>(rng.UniformInt(10));
    for (int64_t b = 1; b < kFixedRecordBytes; b += 8) {
      const uint64_t v = rng.NextU64();
      std::memcpy(&out[at + static_cast<size_t>(b)], &v,
                  static_cast<size_t>(std::min<int64_t>(8, kFixedRecordBytes - b)));
    }
    return;
  }
  out.append(line, static_cast<size_t>(n));
}

// --make-files KIND --out PREFIX: the files of the text, csv and
// fixedlength cases (the header comment).
int MakeFiles(const Args& a) {
  const std::string& kind = a.make_files;
  const int64_t count = a.count > 0      ? a.count
                        : kind == "text" ? 2000000
                        : kind == "csv"  ? 2000000
                                         : 50000;
  const int shards = a.shards > 0 ? a.shards : 4;
  const char* ext = kind == "text" ? "txt" : kind == "csv" ? "csv" : "bin";
  Rng rng(42);
  int64_t written = 0, bytes = 0;
  std::string chunk;
  for (int s = 0; s < shards; ++s) {
    char name[64];
    std::snprintf(name, sizeof(name), "-%05d-of-%05d.%s", s, shards, ext);
    Result<std::unique_ptr<OutputFile>> file = OutputFile::Create(a.out + name);
    if (!file.ok()) Die(file.status().ToString());
    chunk.clear();
    if (kind == "csv") chunk = "id,label,x,y,weight,name\n";
    const int64_t n = count / shards + (s < count % shards ? 1 : 0);
    for (int64_t i = 0; i < n; ++i, ++written) {
      AppendItem(kind, written, rng, chunk);
      if (chunk.size() >= (1 << 20)) {
        bytes += static_cast<int64_t>(chunk.size());
        if (Status st = (*file)->Append(chunk); !st.ok()) Die(st.ToString());
        chunk.clear();
      }
    }
    bytes += static_cast<int64_t>(chunk.size());
    if (Status st = (*file)->Append(chunk); !st.ok()) Die(st.ToString());
    if (Status st = (*file)->Commit(); !st.ok()) Die(st.ToString());
  }
  std::fprintf(stderr, "sluice_cases: wrote %lld %s items (%.1f MB) in %d files at %s-*.%s\n",
               static_cast<long long>(written), kind.c_str(), static_cast<double>(bytes) * 1e-6,
               shards, a.out.c_str(), ext);
  return 0;
}

constexpr float kMean[3] = {123.675f, 116.28f, 103.53f};
constexpr float kStd[3] = {58.395f, 57.12f, 57.375f};

// The output of one image in --loop-rows mode: row (n % rows) of the
// calling thread's own buffer of `rows` images, n counting its images.
Result<Tensor> LoopRow(int64_t rows) {
  constexpr int64_t kImage = 224 * 224 * 3;
  thread_local Buffer buffer;
  thread_local int64_t n = 0;
  if (!buffer) {
    SLUICE_ASSIGN_OR_RETURN(buffer, Buffer::Allocate(rows * kImage * sizeof(float)));
  }
  const size_t offset = static_cast<size_t>(n++ % rows) * kImage * sizeof(float);
  return Tensor::FromBuffer(DType::kFloat32, Shape{224, 224, 3}, buffer, offset);
}

// Where an image case's records come from: the element its map gets.
enum class ImageInput {
  kExample,  // a serialized tf.train.Example (cases 1, 2, 6): parsed, views
  kFile,     // (file name, label) of an image folder (case 7): read
  kTar,      // a WebDataset sample (__key__, jpg, cls) (case 8)
};

// The map function of case 1 (fused = false) and case 2 (fused = true);
// `separate`: case 1 as four ops. loop_rows > 0: outputs go to LoopRow.
// `input`: what the element holds (the JPEG's bytes and its label).
MapFn ImageAugment(bool fused, bool separate, int64_t loop_rows = 0,
                   ImageInput input = ImageInput::kExample) {
  ParseSpec spec = {{"image/encoded", FixedLenFeature(DType::kString, {})},
                    {"image/class/label", FixedLenFeature(DType::kInt64, {})}};
  auto parser = std::make_shared<ExampleParser>(ExampleParser::Create(spec).value());
  auto names =
      std::make_shared<const std::vector<std::string>>(std::vector<std::string>{"image", "label"});
  auto options = std::make_shared<const ops::DecodeCropResizeOptions>(
      ops::DecodeCropResizeOptions{.size = {224, 224},
                                   .fused = fused,
                                   .mirror = ops::Mirror::kRandom,
                                   .mean = {kMean[0], kMean[1], kMean[2]},
                                   .stddev = {kStd[0], kStd[1], kStd[2]}});
  auto augment = [parser, names, options, separate, loop_rows, input](
                     Element e, const MapContext& ctx) -> Result<Element> {
    Tensor bytes, label;  // bytes: the file's (kFile); otherwise views into e
    Element parsed;       // kExample: views into e[0]
    std::string_view jpeg;
    if (input == ImageInput::kFile) {
      SLUICE_ASSIGN_OR_RETURN(bytes, ops::ReadFile(std::string(e[0].scalar<std::string_view>())));
      jpeg = bytes.scalar<std::string_view>();
      label = e[1];
    } else if (input == ImageInput::kTar) {
      jpeg = e[1].scalar<std::string_view>();
      const std::string_view cls = e[2].scalar<std::string_view>();
      int64_t id = 0;
      if (std::from_chars(cls.data(), cls.data() + cls.size(), id).ec != std::errc()) {
        return Status::InvalidArgument("sample " + std::string(e[0].scalar<std::string_view>()) +
                                       ": cls is not a number");
      }
      label = Tensor::Scalar<int64_t>(id);
    } else {
      SLUICE_ASSIGN_OR_RETURN(parsed, parser->ParseSingle(e[0]));  // views, no copy
      jpeg = parsed[0].scalar<std::string_view>();
      label = parsed[1];
    }
    Rng rng = ctx.rng();
    Tensor image;
    if (separate) {
      SLUICE_ASSIGN_OR_RETURN(Tensor full, ops::DecodeJpeg(jpeg, {.channels = 3}));
      SLUICE_ASSIGN_OR_RETURN(image, ops::RandomResizedCrop(full, {224, 224}, rng));
      SLUICE_ASSIGN_OR_RETURN(image, ops::RandomFlipLeftRight(std::move(image), rng));
      SLUICE_ASSIGN_OR_RETURN(image, ops::Normalize(std::move(image), kMean, kStd));
    } else {
      if (loop_rows > 0) {
        SLUICE_ASSIGN_OR_RETURN(image, LoopRow(loop_rows));
      } else {
        SLUICE_ASSIGN_OR_RETURN(image, ctx.AllocateOutput(0, DType::kFloat32, Shape{224, 224, 3}));
      }
      SLUICE_RETURN_IF_ERROR(ops::DecodeRandomCropResizeInto(jpeg, rng, *options, &image));
    }
    return Element({std::move(image), std::move(label)}, names);
  };
  return augment;
}

Dataset ImagePipeline(Dataset records, bool fused, bool separate, int64_t batch,
                      int64_t parallelism, ImageInput input) {
  return records
      .map(ImageAugment(fused, separate, 0, input),
           {.parallelism = parallelism > 0 ? parallelism : kAutotune,
            .name = fused ? "fused" : "decode"})
      .batch(batch, {.drop_remainder = true})
      .prefetch(kAutotune);
}

// --loop: the case's map function called in a plain loop on --cores
// threads over the records held in memory, each output a new tensor: the
// same per-image work with no pipeline (no reading, batching, hand-offs or
// scheduling), so the ceiling any pipeline could reach with these ops.
int RunLoop(const Args& a) {
  if (a.kase != "decode" && a.kase != "fused") Die("--loop is for --case decode or fused");
  if (a.cores < 1) Die("--loop needs --cores N (threads)");
  std::vector<Element> records;
  {
    Result<Iterator> it = TFRecordDataset(peers::GlobRecordFiles(kProgram, a.files)).iterator();
    if (!it.ok()) Die(it.status().ToString());
    for (;;) {
      Result<std::optional<Element>> e = it->next();
      if (!e.ok()) Die(e.status().ToString());
      if (!e->has_value()) break;
      records.push_back(std::move(**e));
    }
  }
  if (records.empty()) Die("no records in " + a.files);
  if (a.loop_rows > 0 && a.ops == "separate") Die("--loop-rows is for --ops fused");
  const MapFn augment = ImageAugment(a.kase == "fused", a.ops == "separate", a.loop_rows);
  auto work = [&](int t, const std::atomic<bool>& stop) {
    double n = 0;
    for (int64_t i = t; !stop.load(std::memory_order_relaxed); i += a.cores, ++n) {
      const MapContext ctx{.index = i, .seed = 1};
      Result<Element> out = augment(records[static_cast<size_t>(i) % records.size()], ctx);
      if (!out.ok()) Die(out.status().ToString());
    }
    return n;
  };
  double elapsed = 0;
  peers::RunFor(a.cores, a.warmup, work, &elapsed);  // warm-up, not counted
  const peers::Usage usage = peers::Usage::Now();
  const double items = peers::RunFor(a.cores, a.seconds, work, &elapsed);
  const std::string used = peers::Usage::Json(usage, elapsed);
  std::printf(
      "{\"system\":\"loop\",\"case\":\"%s\",\"items_per_s\":%.1f,\"items\":%lld,"
      "\"seconds\":%.3f,\"cores\":%d,\"loop_rows\":%lld%s}\n",
      a.kase.c_str(), items / elapsed, static_cast<long long>(items), elapsed, a.cores,
      static_cast<long long>(a.loop_rows), used.c_str());
  return 0;
}

// Case 4: parse_example fused with batch (the records are batched as views,
// then each batch is parsed at once).
Dataset ParsePipeline(Dataset records, int64_t batch) {
  return records.map(parse_example(SmallSpec()), {.parallelism = kAutotune, .name = "parse"})
      .batch(batch, {.drop_remainder = true})
      .prefetch(kAutotune);
}

// The case's pipeline over `records`; sets *batch to the batch size used.
Dataset CasePipeline(const Args& a, Dataset records, int64_t* batch) {
  *batch = a.batch;
  if (a.ops == "separate" && a.kase != "decode") Die("--ops separate is for --case decode");
  if (IsImageCase(a.kase)) {
    if (*batch == 0) *batch = 128;
    const ImageInput input = a.kase == "folder" ? ImageInput::kFile
                             : a.kase == "wds"  ? ImageInput::kTar
                                                : ImageInput::kExample;
    return ImagePipeline(records, a.kase == "fused", a.ops == "separate", *batch, a.parallelism,
                         input);
  }
  if (a.kase == "read") {
    if (*batch == 0) *batch = 4096;
    if (*batch == 1) return records;  // record by record, no batch or prefetch
    return records.batch(*batch, {.drop_remainder = true}).prefetch(kAutotune);
  }
  if (a.kase == "parse") {
    if (*batch == 0) *batch = 1024;
    return ParsePipeline(records, *batch);
  }
  if (a.kase == "text" || a.kase == "csv" || a.kase == "fixedlength") {
    if (*batch == 0) *batch = a.kase == "fixedlength" ? 1024 : 4096;
    return records.batch(*batch, {.drop_remainder = true}).prefetch(kAutotune);
  }
  Die("unknown --case " + a.kase +
      " (decode, fused, folder, wds, read, parse, text, csv, fixedlength)");
}

// --stats: ,"map_parallelism":P (and at the start of the timing: _t0),
// "map_busy":B,"map_wait":W,"map_input_wait":I,"map_room_wait":R,
// "map_input_hold":H,"map_lock_wait":L,"cpu_wait":C, for the records (TFRecordDataset, parallel
// reads) "reads_ahead":A,"reads_in_place":N,"read_wait":RW, and
// "map_tuner":"its last tuner decision", between two snapshots (B: the image
// map's calls' busy time per second, the threads it kept busy; W: the
// consumer's time blocked on it per second; I and R: its workers' time
// blocked on the input's lock and waiting for room, per second; H: the
// time the input's lock was held, per second (the serial pull upstream:
// near 1, reading is the wall); L: its workers' and consumer's time waiting
// for its own lock, per second; C: all threads' time waiting for the
// cpu_budget, per second; A and N: buffers of records read by a task and
// taken, read in place instead; RW: the time per second waited for a read
// in progress), and with --stats 2 the final stats table on stderr.
std::string StatsJson(const Args& args, const IteratorStats& s0, const IteratorStats& s1) {
  if (args.stats > 1) std::fprintf(stderr, "%s\n", s1.ToString().c_str());
  const double seconds = static_cast<double>(s1.elapsed_ns - s0.elapsed_ns) * 1e-9;
  std::string reads;
  for (size_t i = 0; i < s1.stages.size() && i < s0.stages.size(); ++i) {
    const StageStats &a = s0.stages[i], &b = s1.stages[i];
    if (b.kind != "TFRecordDataset") continue;
    char out[160];
    std::snprintf(out, sizeof(out),
                  ",\"reads_ahead\":%lld,\"reads_in_place\":%lld,\"read_wait\":%.3f",
                  static_cast<long long>(b.reads_ahead - a.reads_ahead),
                  static_cast<long long>(b.reads_in_place - a.reads_in_place),
                  static_cast<double>(b.read_wait_ns - a.read_wait_ns) * 1e-9 / seconds);
    reads = out;
  }
  for (size_t i = 0; i < s1.stages.size() && i < s0.stages.size(); ++i) {
    const StageStats &a = s0.stages[i], &b = s1.stages[i];
    if (b.kind != "map") continue;
    std::string reason;
    for (char c : b.tuner_reason) reason += c == '"' || c == '\\' ? '\'' : c;
    auto per_s = [&](int64_t ns) { return static_cast<double>(ns) * 1e-9 / seconds; };
    char out[400];
    std::snprintf(out, sizeof(out),
                  ",\"map_parallelism\":%lld,\"map_parallelism_t0\":%lld,\"map_busy\":%.2f,"
                  "\"map_wait\":%.3f,\"map_input_wait\":%.3f,\"map_room_wait\":%.3f,"
                  "\"map_input_hold\":%.3f,\"map_lock_wait\":%.3f,\"cpu_wait\":%.3f",
                  static_cast<long long>(b.parallelism), static_cast<long long>(a.parallelism),
                  per_s(b.busy_ns - a.busy_ns), per_s(b.wait_ns - a.wait_ns),
                  per_s(b.input_wait_ns - a.input_wait_ns), per_s(b.room_wait_ns - a.room_wait_ns),
                  per_s(b.input_hold_ns - a.input_hold_ns), per_s(b.lock_wait_ns - a.lock_wait_ns),
                  per_s(s1.cpu_wait_ns - s0.cpu_wait_ns));
    return out + reads + (",\"map_tuner\":\"" + reason + "\"");
  }
  return reads;
}

// The case's records: TFRecords, the (file name, label) pairs of an image
// folder (case 7: the file names shuffled every epoch, as the peers'
// folder readers do), WebDataset samples (case 8), or the lines, rows or
// fixed-length records of the format cases, `reads` files at once.
Dataset Source(const Args& a, int64_t reads) {
  if (a.kase == "folder") {
    Result<ImageFolder> folder = ScanImageFolder(a.files);
    if (!folder.ok()) Die(folder.status().ToString());
    if (folder->files.empty()) Die("no images under " + a.files);
    std::vector<std::string> paths;
    std::vector<int64_t> labels;
    for (const ImageFile& f : folder->files) {
      paths.push_back(folder->root + "/" + f.relative);
      labels.push_back(f.label);
    }
    const auto n = static_cast<int64_t>(paths.size());
    return Dataset::from_tensor_slices(
               {Tensor::FromStrings(paths).value(), Tensor::FromVector(labels).value()},
               {"filename", "label"})
        .shuffle(n);
  }
  std::vector<std::string> files = peers::GlobRecordFiles(kProgram, a.files);
  if (a.kase == "wds") {
    return WebDatasetDataset(std::move(files),
                             {.extensions = {"jpg", "cls"}, .num_parallel_reads = reads});
  }
  if (a.kase == "text") return TextLineDataset(std::move(files), {.num_parallel_reads = reads});
  if (a.kase == "csv") {
    return CsvDataset(std::move(files), CsvSpec(), {.header = true, .num_parallel_reads = reads});
  }
  if (a.kase == "fixedlength") {
    return FixedLengthRecordDataset(std::move(files), kFixedRecordBytes,
                                    {.num_parallel_reads = reads});
  }
  return TFRecordDataset(std::move(files), {.num_parallel_reads = reads});
}

int Run(const Args& a) {
  // Image records: files in parallel, as the tutorials do. Small records:
  // one file at a time on both sides (tf.data's parallel interleave costs
  // it ~6 us per record; sluice is within 10% either way).
  // Lines, rows and fixed-length records likewise (equal settings in
  // tfdata_cases.py).
  int64_t reads = a.parallel_reads;
  if (reads == 0) reads = IsImageCase(a.kase) ? kAutotune : 1;
  Dataset records = Source(a, reads);
  if (a.cache) records = records.cache();
  records = records.repeat();
  int64_t batch = 0;
  Dataset ds = CasePipeline(a, records, &batch);
  Options options;
  if (a.cores > 0) options.cpu_budget = a.cores;
  if (a.cpu_budget > 0) options.cpu_budget = a.cpu_budget;
  if (a.max_threads > 0) options.max_threads = a.max_threads;
  options.map_and_batch_fusion = a.fusion != 0;
  ds = ds.with_options(options);
  if (!ds.status().ok()) Die(ds.status().ToString());
  Result<Iterator> it = ds.iterator();
  if (!it.ok()) Die(it.status().ToString());

  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  std::optional<Clock::time_point> t0;
  peers::Usage usage;
  IteratorStats stats0;
  int64_t items = 0;
  double elapsed = 0;
  while (true) {
    Result<std::optional<Element>> next = it->next();
    if (!next.ok()) Die(next.status().ToString());
    if (!next->has_value()) Die("the dataset ended");
    const Clock::time_point now = Clock::now();
    if (!t0) {
      if (std::chrono::duration<double>(now - start).count() >= a.warmup) {
        t0 = now;
        usage = peers::Usage::Now();
        if (a.stats) stats0 = it->stats();
      }
      continue;
    }
    const Shape& shape = (**next)[0].shape();
    items += shape.rank() == 0 ? 1 : shape.dim(0);
    elapsed = std::chrono::duration<double>(now - *t0).count();
    if (elapsed >= a.seconds) break;
  }
  const std::string used = peers::Usage::Json(usage, elapsed);
  std::string extra;
  if (a.stats) extra = StatsJson(a, stats0, it->stats());
  std::printf(
      "{\"system\":\"sluice\",\"case\":\"%s\",\"items_per_s\":%.1f,\"items\":%lld,"
      "\"seconds\":%.3f,\"batch\":%lld,\"cores\":%d,\"parallelism\":%lld,"
      "\"cpu_budget\":%d,\"max_threads\":%d,\"cache\":%d%s%s}\n",
      a.kase.c_str(), items / elapsed, static_cast<long long>(items), elapsed,
      static_cast<long long>(batch), a.cores, static_cast<long long>(a.parallelism),
      options.cpu_budget.value_or(0), options.max_threads.value_or(0), a.cache, used.c_str(),
      extra.c_str());
  return 0;
}

}  // namespace
}  // namespace sluice::bench

int main(int argc, char** argv) {
  sluice::bench::Args a = sluice::bench::ParseArgs(argc, argv);
  if (!a.make_records.empty()) return sluice::bench::MakeRecords(a);
  if (!a.make_files.empty()) return sluice::bench::MakeFiles(a);
  return a.loop ? sluice::bench::RunLoop(a) : sluice::bench::Run(a);
}
