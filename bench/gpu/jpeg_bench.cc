// gpu_jpeg_bench: JPEG decode throughput of gpu::JpegDecoder (nvJPEG's
// hardware engines, GPU_HYBRID, its CPU path) against libjpeg-turbo on N
// host threads in the same run, and how far the GPU's pixels are from the
// CPU decode's. One JSON object per line on stdout.
//
//   gpu_jpeg_bench --images DIR [--batches 128,256] [--seconds 2] [--threads 16]
//                  [--device gpu|cpu] [--states 1,2,3]
//
// DIR holds *.jpg / *.JPEG files (subfolders too), e.g. the bundle's
// images/ (scripts/make-imagenet-like.sh). --device cpu runs the decoder on
// the host device (libjpeg-turbo standing in for nvJPEG) to try the binary
// without a GPU; its "hardware"/"gpu_hybrid" numbers mean nothing.
//
// Lines: {"case":"cpu_threads",...} libjpeg-turbo (ops::DecodeJpeg) on
// --threads threads; {"case":"decoder","mode":"hardware"|"gpu_hybrid"|"cpu",
// "batch":B,...}: Decode() of B images at a time then a stream
// synchronize, images/s, the images each backend took, the host CPU time
// per second of wall time (host_cores), the ratio to cpu_threads, and the
// max/mean absolute difference of the decoded pixels to ops::DecodeJpeg's
// (fancy upsampling, TF's default) and to a decode without fancy upsampling;
// {"case":"decode_rrc224_flip_normalize","batch":B,...}: the training recipe
// on the device (DecodeRandomResizedCropBatch) against the hardware mode's
// decode alone (ratio_to_decode); {"case":"stage_rrc224_flip_normalize",...}:
// the same through the pipeline stage JpegBatchesToDevice (the images as a
// repeated, batched string Dataset in memory; one batch in flight), with
// stage_input / stage_decode / stage_augment: the seconds per second its
// batch-making thread spent waiting for the input's next batch, in the
// decoder's host part, and queueing the augmentation (JpegStageTimes);
// {"case":"decode_overlap",...}: the hardware decode alone with batch k+1
// queued before batch k is waited for; {"case":"decode_rrc224_overlap",...}:
// the recipe the same way, decode on the decoder's stream and the fused
// augmentation on a second stream (DecodeRandomResizedCropBatch's
// augment_stream), ratio_to_decode against the decoder line's hardware
// rate (issue 29's target: at least 0.8) and ratio_to_decode_overlap
// against decode_overlap; {"case":"decode_overlap_states","states":S,...}:
// the hardware decode alone with up to 3 batches in flight (batch k queued,
// then batch k-2 waited for) on a fresh decoder with S nvJPEG decode states
// per backend (JpegDecoderOptions::nvjpeg_states, each --states value; 1 is
// the single state, where call k+1 waits inside the decoder for call k's
// decode), ratio_to_one_state against the S=1 line and state_waits (calls
// that blocked for their state's previous call), at the last --batches
// value only. host_cores everywhere: CPU-seconds (the process's CPU
// clock: user + system, all threads) per second of wall time.
#include <glob.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/args.h"
#include "common/timing.h"
#include "sluice/device/device_memory.h"
#include "sluice/device/physical_devices.h"
#include "sluice/device/stream.h"
#include "sluice/ops/cuda/jpeg_augment.h"
#include "sluice/ops/cuda/jpeg_decoder.h"
#include "sluice/ops/jpeg.h"
#include "sluice/pipeline/cuda/jpeg_batches.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/pipeline/parse_example.h"

namespace sluice::gpu {
namespace {

using bench::Clock;
using bench::Since;

// The process's CPU seconds (user + system, all threads).
double CpuSeconds() { return bench::ProcessCpuSeconds(); }

struct Args {
  std::string images;
  std::vector<int> batches = {128, 256};
  double seconds = 2;
  int threads = 16;
  std::string device = "gpu";
  std::vector<int> states = {1, 2, 3};  // decode_overlap_states' nvjpeg_states values
  std::string tfrecords;                // the stage reads these (a glob) when set
  std::vector<int> prefetch = {0, 2};   // the stage's JpegBatchesOptions::prefetch values
};

constexpr char kProgram[] = "gpu_jpeg_bench";
constexpr char kSynopsis[] =
    "--images DIR [--batches 128,256] [--seconds 2] [--threads 16] [--device gpu|cpu]\n"
    "      [--states 1,2,3] [--tfrecords GLOB (sluice convert's image records, for the stage)]\n"
    "      [--prefetch 0,2]";

bench::CommandLine Parser(Args* a) {
  bench::CommandLine p(kProgram, kSynopsis);
  p.Add("--images", &a->images)
      .Add("--batches", &a->batches, 1, 4096)
      .Add("--tfrecords", &a->tfrecords)
      .Add("--prefetch", &a->prefetch, 0, 16)
      .Add("--seconds", &a->seconds, 1e-3, bench::kUnbounded)
      .Add("--threads", &a->threads, 1)
      .Add("--device", &a->device)
      .Add("--states", &a->states, 1, 8);
  return p;
}

// A bad command line: why, and the usage, on stderr; exit status 2.
[[noreturn]] void Usage(const std::string& why) {
  Args unused;
  Parser(&unused).UsageError(why);
}

Args Parse(int argc, char** argv) {
  Args a;
  Parser(&a).Parse(argc, argv);
  if (a.images.empty()) Usage("--images is required");
  return a;
}

std::vector<std::string> ReadJpegs(const std::string& dir, std::vector<std::string>* names) {
  std::vector<std::string> out;
  std::vector<std::filesystem::path> paths;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    const std::string ext = e.path().extension().string();
    if (e.is_regular_file() && (ext == ".jpg" || ext == ".JPEG" || ext == ".jpeg")) {
      paths.push_back(e.path());
    }
  }
  std::sort(paths.begin(), paths.end());
  for (const auto& p : paths) {
    std::ifstream f(p, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    out.push_back(ss.str());
    names->push_back(p.filename().string());
  }
  return out;
}

// libjpeg-turbo on `threads` threads, each decoding the images round-robin.
double CpuThreadsImagesPerSecond(const std::vector<std::string>& jpegs, int threads, double seconds,
                                 double* host_cores) {
  std::atomic<int64_t> done{0};
  std::atomic<bool> stop{false};
  const double cpu0 = CpuSeconds();
  const auto t0 = Clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      ops::DecodeJpegOptions o;
      o.channels = 3;
      for (size_t i = static_cast<size_t>(t); !stop.load(std::memory_order_relaxed); ++i) {
        if (ops::DecodeJpeg(jpegs[i % jpegs.size()], o).ok()) done.fetch_add(1);
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (std::thread& t : pool) t.join();
  const double wall = Since(t0);
  *host_cores = (CpuSeconds() - cpu0) / wall;
  return static_cast<double>(done.load()) / wall;
}

struct Diff {
  int max = 0;
  double mean = 0;
};

// The decoder's pixels against `reference` (one tensor per image).
Result<Diff> Compare(JpegDecoder& decoder, Stream& stream, const std::vector<EncodedJpeg>& jpegs,
                     const std::vector<Tensor>& reference) {
  SLUICE_ASSIGN_OR_RETURN(std::vector<DeviceTensor> out, decoder.Decode(jpegs));
  Diff d;
  double sum = 0;
  int64_t count = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    SLUICE_ASSIGN_OR_RETURN(Tensor got, CopyToHost(out[i], stream));
    if (got.shape() != reference[i].shape()) {
      return Status::Internal("shape differs for image " + std::to_string(i));
    }
    auto g = got.flat<uint8_t>();
    auto w = reference[i].flat<uint8_t>();
    for (size_t k = 0; k < g.size(); ++k) {
      const int a = std::abs(int{g[k]} - int{w[k]});
      d.max = std::max(d.max, a);
      sum += a;
    }
    count += static_cast<int64_t>(g.size());
  }
  d.mean = count > 0 ? sum / static_cast<double>(count) : 0;
  return d;
}

// The training recipe on the device (DecodeRandomResizedCropBatch: decode,
// random-resized crop 224, flip, normalize, one float32 batch) against the
// decode alone at the same batch size (`decode_rate`).
bool Augment(Stream& stream, const std::vector<EncodedJpeg>& all, int batch, double decode_rate,
             double cpu_rate, double mean_pixels, double seconds) {
  JpegDecoderOptions o;
  o.max_batch = batch;
  Result<std::unique_ptr<JpegDecoder>> decoder = JpegDecoder::Create(stream, o);
  if (!decoder.ok()) return false;
  JpegAugmentOptions a;
  a.mean = {123.675f, 116.28f, 103.53f};
  a.stddev = {58.395f, 57.12f, 57.375f};
  Rng rng(1);
  std::vector<EncodedJpeg> slice(static_cast<size_t>(batch));
  size_t next = 0;
  auto one_batch = [&]() -> Status {
    for (EncodedJpeg& e : slice) e = all[next++ % all.size()];
    SLUICE_RETURN_IF_ERROR(DecodeRandomResizedCropBatch(**decoder, slice, rng, a).status());
    return stream.Synchronize();
  };
  Status s = one_batch();
  int64_t done = 0;
  const double cpu0 = CpuSeconds();
  const auto t0 = Clock::now();
  while (s.ok() && Since(t0) < seconds) {
    s = one_batch();
    done += batch;
  }
  const double wall = Since(t0);
  if (!s.ok()) {
    std::fprintf(stderr, "gpu_jpeg_bench: augment: %s\n", s.ToString().c_str());
    return false;
  }
  const double rate = static_cast<double>(done) / wall;
  std::printf(
      "{\"case\":\"decode_rrc224_flip_normalize\",\"device\":\"%s\",\"batch\":%d,"
      "\"images_per_s\":%.0f,\"mpix_decoded_per_s\":%.0f,\"ratio_to_decode\":%.2f,"
      "\"ratio_to_cpu_threads\":%.2f,\"host_cores\":%.2f,\"hardware\":%lld,"
      "\"gpu_hybrid\":%lld,\"cpu\":%lld}\n",
      stream.device().ToString().c_str(), batch, rate, rate * mean_pixels / 1e6, rate / decode_rate,
      rate / cpu_rate, (CpuSeconds() - cpu0) / wall,
      static_cast<long long>((*decoder)->stats().hardware),
      static_cast<long long>((*decoder)->stats().gpu_hybrid),
      static_cast<long long>((*decoder)->stats().cpu));
  std::fflush(stdout);
  return true;
}

// Runs one() (one batch of `batch` images) for `seconds` after a warm-up
// call: images/s and host CPU-seconds per second, or the first error.
struct Rate {
  double images_per_s = 0;
  double host_cores = 0;
};
template <typename One>
Result<Rate> Measure(int batch, double seconds, One one) {
  SLUICE_RETURN_IF_ERROR(one());
  int64_t done = 0;
  const double cpu0 = CpuSeconds();
  const auto t0 = Clock::now();
  while (Since(t0) < seconds) {
    SLUICE_RETURN_IF_ERROR(one());
    done += batch;
  }
  const double wall = Since(t0);
  return Rate{static_cast<double>(done) / wall, (CpuSeconds() - cpu0) / wall};
}

// Decode alone, then decode + fused augmentation on a second stream, each
// with batch k+1 queued before batch k is waited for (an event per batch).
bool Overlapped(Stream& stream, const std::vector<EncodedJpeg>& all, int batch, double decode_rate,
                double seconds) {
  JpegDecoderOptions o;
  o.max_batch = batch;
  Result<std::unique_ptr<JpegDecoder>> decoder = JpegDecoder::Create(stream, o);
  Result<std::unique_ptr<Stream>> augment = NewStream(stream.device());
  Result<std::unique_ptr<Event>> events[2] = {NewEvent(stream.device()), NewEvent(stream.device())};
  if (!decoder.ok() || !augment.ok() || !events[0].ok() || !events[1].ok()) {
    std::fprintf(stderr, "gpu_jpeg_bench: overlap: setup failed\n");
    return false;
  }
  JpegAugmentOptions a;
  a.mean = {123.675f, 116.28f, 103.53f};
  a.stddev = {58.395f, 57.12f, 57.375f};
  Rng rng(1);
  std::vector<EncodedJpeg> slice(static_cast<size_t>(batch));
  size_t next = 0;
  int64_t k = 0;
  // Queues batch k (recorded in events[k % 2]), then waits for batch k-1.
  auto step = [&](bool augmented) -> Status {
    for (EncodedJpeg& e : slice) e = all[next++ % all.size()];
    Event& now = **events[k % 2];
    Event& before = **events[(k + 1) % 2];
    if (augmented) {
      SLUICE_RETURN_IF_ERROR(
          DecodeRandomResizedCropBatch(**decoder, slice, rng, a, augment->get()).status());
      SLUICE_RETURN_IF_ERROR((*augment)->Record(now));
    } else {
      SLUICE_RETURN_IF_ERROR((*decoder)->Decode(slice).status());
      SLUICE_RETURN_IF_ERROR(stream.Record(now));
    }
    ++k;
    return before.Synchronize();  // never recorded (k = 0): complete
  };
  const JpegDecodeStats s0 = (*decoder)->stats();
  Result<Rate> bare = Measure(batch, seconds, [&] { return step(false); });
  Status drained = bare.ok() ? stream.Synchronize() : bare.status();
  const JpegDecodeStats s1 = (*decoder)->stats();
  Result<Rate> full =
      drained.ok() ? Measure(batch, seconds, [&] { return step(true); }) : Result<Rate>(drained);
  if (full.ok()) drained = (*augment)->Synchronize();
  if (!full.ok() || !drained.ok()) {
    std::fprintf(stderr, "gpu_jpeg_bench: overlap: %s\n",
                 (!full.ok() ? full.status() : drained).ToString().c_str());
    return false;
  }
  const JpegDecodeStats s2 = (*decoder)->stats();
  const std::string dev = stream.device().ToString();
  std::printf(
      "{\"case\":\"decode_overlap\",\"device\":\"%s\",\"batch\":%d,\"nvjpeg_states\":%d,"
      "\"images_per_s\":%.0f,\"ratio_to_decode\":%.2f,\"host_cores\":%.2f,\"hardware\":%lld,"
      "\"gpu_hybrid\":%lld,\"cpu\":%lld}\n",
      dev.c_str(), batch, s1.nvjpeg_states, bare->images_per_s, bare->images_per_s / decode_rate,
      bare->host_cores, static_cast<long long>(s1.hardware - s0.hardware),
      static_cast<long long>(s1.gpu_hybrid - s0.gpu_hybrid),
      static_cast<long long>(s1.cpu - s0.cpu));
  std::printf(
      "{\"case\":\"decode_rrc224_overlap\",\"device\":\"%s\",\"batch\":%d,"
      "\"images_per_s\":%.0f,\"decode_images_per_s\":%.0f,\"ratio_to_decode\":%.2f,"
      "\"ratio_to_decode_overlap\":%.2f,\"host_cores\":%.2f,\"hardware\":%lld,"
      "\"gpu_hybrid\":%lld,\"cpu\":%lld}\n",
      dev.c_str(), batch, full->images_per_s, decode_rate, full->images_per_s / decode_rate,
      full->images_per_s / bare->images_per_s, full->host_cores,
      static_cast<long long>(s2.hardware - s1.hardware),
      static_cast<long long>(s2.gpu_hybrid - s1.gpu_hybrid),
      static_cast<long long>(s2.cpu - s1.cpu));
  std::fflush(stdout);
  return true;
}

// The hardware decode alone, up to 3 batches in flight (batch k queued,
// then batch k-2 waited for), on a fresh decoder per nvJPEG state count.
bool OverlapStates(Stream& stream, const std::vector<EncodedJpeg>& all, int batch,
                   double decode_rate, const std::vector<int>& states, double seconds) {
  constexpr int kInFlight = 3;
  double one_state = 0;
  for (int n : states) {
    JpegDecoderOptions o;
    o.max_batch = batch;
    o.nvjpeg_states = n;
    Result<std::unique_ptr<JpegDecoder>> decoder = JpegDecoder::Create(stream, o);
    std::vector<std::unique_ptr<Event>> events;
    Status setup = decoder.status();
    for (int i = 0; setup.ok() && i < kInFlight; ++i) {
      Result<std::unique_ptr<Event>> e = NewEvent(stream.device());
      setup = e.status();
      if (e.ok()) events.push_back(*std::move(e));
    }
    if (!setup.ok()) {
      std::fprintf(stderr, "gpu_jpeg_bench: states %d: %s\n", n, setup.ToString().c_str());
      return false;
    }
    std::vector<EncodedJpeg> slice(static_cast<size_t>(batch));
    size_t next = 0;
    int64_t k = 0;
    auto step = [&]() -> Status {
      for (EncodedJpeg& e : slice) e = all[next++ % all.size()];
      SLUICE_RETURN_IF_ERROR((*decoder)->Decode(slice).status());
      SLUICE_RETURN_IF_ERROR(stream.Record(*events[k % kInFlight]));
      ++k;
      // Batch k-2 (the event after this one's in the ring; never recorded: complete).
      return events[k % kInFlight]->Synchronize();
    };
    const JpegDecodeStats s0 = (*decoder)->stats();
    Result<Rate> r = Measure(batch, seconds, step);
    Status drained = r.ok() ? stream.Synchronize() : r.status();
    if (!drained.ok()) {
      std::fprintf(stderr, "gpu_jpeg_bench: states %d: %s\n", n, drained.ToString().c_str());
      return false;
    }
    const JpegDecodeStats s1 = (*decoder)->stats();
    if (n == 1) one_state = r->images_per_s;
    std::printf(
        "{\"case\":\"decode_overlap_states\",\"device\":\"%s\",\"batch\":%d,\"states\":%d,"
        "\"in_flight\":%d,\"images_per_s\":%.0f,\"ratio_to_decode\":%.2f,"
        "\"ratio_to_one_state\":%.2f,\"host_cores\":%.2f,\"state_waits\":%lld,"
        "\"batch_calls\":%lld,\"hardware\":%lld,\"gpu_hybrid\":%lld,\"cpu\":%lld}\n",
        stream.device().ToString().c_str(), batch, s1.nvjpeg_states, kInFlight, r->images_per_s,
        r->images_per_s / decode_rate, one_state > 0 ? r->images_per_s / one_state : 0.0,
        r->host_cores, static_cast<long long>(s1.state_waits - s0.state_waits),
        static_cast<long long>(s1.gpu_batch_calls - s0.gpu_batch_calls),
        static_cast<long long>(s1.hardware - s0.hardware),
        static_cast<long long>(s1.gpu_hybrid - s0.gpu_hybrid),
        static_cast<long long>(s1.cpu - s0.cpu));
    std::fflush(stdout);
  }
  return true;
}

// The same recipe as a pipeline stage: the images as a string Dataset,
// batched and repeated, then JpegBatchesToDevice; batch k is waited for
// after batch k+1 was asked for.
// With `tfrecords` (a glob of sluice convert's image records), the input
// is TFRecordDataset -> parse_example (fused with batch) instead.
bool Stage(const Device& device, const std::vector<std::string>& bytes, int batch,
           double decode_rate, double cpu_rate, double seconds, const std::string& tfrecords,
           int prefetch) {
  std::vector<std::string_view> views(bytes.begin(), bytes.end());
  Tensor images = Tensor::FromStrings(views, Shape({static_cast<int64_t>(views.size())})).value();
  Tensor labels = Tensor::Zeros(DType::kInt64, Shape({static_cast<int64_t>(views.size())})).value();
  Dataset ds = Dataset::from_tensor_slices({images, labels}, {"image", "label"})
                   .repeat()
                   .batch(batch, {.drop_remainder = true})
                   .prefetch(2);
  JpegBatchesOptions o;
  if (!tfrecords.empty()) {
    std::vector<std::string> files;
    glob_t g{};
    if (glob(tfrecords.c_str(), 0, nullptr, &g) == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) {
        const std::string name = g.gl_pathv[i];
        if (name.ends_with(".tfrecord")) files.push_back(name);
      }
    }
    globfree(&g);
    if (files.empty()) {
      std::fprintf(stderr, "gpu_jpeg_bench: no .tfrecord files match %s\n", tfrecords.c_str());
      return false;
    }
    const ParseSpec spec = {{"image/encoded", FixedLenFeature(DType::kString, {})},
                            {"image/class/label", FixedLenFeature(DType::kInt64, {})}};
    ds = TFRecordDataset(files, {.num_parallel_reads = 4})
             .repeat()
             .map(parse_example(spec), {.parallelism = kAutotune})
             .batch(batch, {.drop_remainder = true})
             .prefetch(2);
    o.image = "image/encoded";
  }
  o.prefetch = prefetch;
  o.decoder.max_batch = batch;
  o.augment.mean = {123.675f, 116.28f, 103.53f};
  o.augment.stddev = {58.395f, 57.12f, 57.375f};
  Result<JpegBatchIterator> it = JpegBatchesToDevice(ds, device, o);
  if (!it.ok()) {
    std::fprintf(stderr, "gpu_jpeg_bench: stage: %s\n", it.status().ToString().c_str());
    return false;
  }
  // One batch in flight, as a training loop has: batch k+1's host part
  // runs while the GPU finishes batch k, then k is waited for.
  std::optional<DeviceElement> previous;
  auto one = [&]() -> Status {
    SLUICE_ASSIGN_OR_RETURN(std::optional<DeviceElement> e, it->Next());
    if (!e) return Status::Internal("the repeated input ended");
    if (previous) SLUICE_RETURN_IF_ERROR(previous->Wait());
    previous = std::move(e);
    return Status::OK();
  };
  const auto t_all = Clock::now();
  Status s = one();
  int64_t done = 0;
  const double cpu0 = CpuSeconds();
  const auto t0 = Clock::now();
  while (s.ok() && Since(t0) < seconds) {
    s = one();
    done += batch;
  }
  const double wall = Since(t0);
  if (!s.ok()) {
    std::fprintf(stderr, "gpu_jpeg_bench: stage: %s\n", s.ToString().c_str());
    return false;
  }
  const double rate = static_cast<double>(done) / wall;
  const JpegDecodeStats st = it->decoder_stats();
  // The stage's thread: its time per second in the input, the decoder and
  // the augmentation's queueing (the whole run, the first batch included).
  const JpegStageTimes times = it->stage_times();
  const double all_s = Since(t_all);
  auto per_s = [&](int64_t ns) { return static_cast<double>(ns) * 1e-9 / all_s; };
  std::printf(
      "{\"case\":\"stage_rrc224_flip_normalize\",\"device\":\"%s\",\"batch\":%d,"
      "\"input\":\"%s\",\"prefetch\":%d,\"images_per_s\":%.0f,\"ratio_to_decode\":%.2f,\"ratio_to_"
      "cpu_threads\":%.2f,"
      "\"host_cores\":%.2f,\"hardware\":%lld,\"gpu_hybrid\":%lld,\"cpu\":%lld,"
      "\"stage_input\":%.3f,\"stage_decode\":%.3f,\"stage_augment\":%.3f}\n",
      device.ToString().c_str(), batch, tfrecords.empty() ? "memory" : "tfrecord", prefetch, rate,
      rate / decode_rate, rate / cpu_rate, (CpuSeconds() - cpu0) / wall,
      static_cast<long long>(st.hardware), static_cast<long long>(st.gpu_hybrid),
      static_cast<long long>(st.cpu), per_s(times.input_ns), per_s(times.decode_ns),
      per_s(times.augment_ns));
  std::fflush(stdout);
  return true;
}

int Run(const Args& args) {
  std::vector<std::string> names;
  const std::vector<std::string> bytes = ReadJpegs(args.images, &names);
  if (bytes.empty()) Usage("no JPEGs under " + args.images);
  std::vector<EncodedJpeg> all;
  for (size_t i = 0; i < bytes.size(); ++i) all.push_back({bytes[i], names[i]});
  int64_t pixels = 0;
  std::vector<Tensor> fancy, plain;
  for (const std::string& b : bytes) {
    ops::DecodeJpegOptions o;
    o.channels = 3;
    fancy.push_back(ops::DecodeJpeg(b, o).value());
    o.fancy_upscaling = false;
    plain.push_back(ops::DecodeJpeg(b, o).value());
    pixels += fancy.back().shape().dim(0) * fancy.back().shape().dim(1);
  }
  const double mean_pixels = static_cast<double>(pixels) / static_cast<double>(bytes.size());

  double cpu_cores = 0;
  const double cpu_rate = CpuThreadsImagesPerSecond(bytes, args.threads, args.seconds, &cpu_cores);
  std::printf(
      "{\"case\":\"cpu_threads\",\"images\":%zu,\"threads\":%d,\"images_per_s\":%.0f,"
      "\"mpix_per_s\":%.0f,\"host_cores\":%.2f}\n",
      bytes.size(), args.threads, cpu_rate, cpu_rate * mean_pixels / 1e6, cpu_cores);
  std::fflush(stdout);

  const Device device = args.device == "cpu" ? Device::Cpu() : Device::Gpu(0);
  if (!device.is_cpu()) {
    if (Status s = GpuAvailability(); !s.ok()) {
      std::printf("{\"case\":\"decoder\",\"skipped\":\"%s\"}\n", std::string(s.message()).c_str());
      return 0;
    }
  }
  Result<std::unique_ptr<Stream>> stream = NewStream(device);
  if (!stream.ok()) {
    std::fprintf(stderr, "gpu_jpeg_bench: %s\n", stream.status().ToString().c_str());
    return 1;
  }
  struct Mode {
    const char* name;
    JpegDecoderOptions options;
  };
  const Mode modes[] = {
      {"hardware", {}}, {"gpu_hybrid", {.use_hardware = false}}, {"cpu", {.use_gpu = false}}};
  std::map<int, double> decode_rate;  // hardware mode's images/s per batch
  for (const Mode& mode : modes) {
    for (int batch : args.batches) {
      JpegDecoderOptions o = mode.options;
      o.max_batch = batch;
      Result<std::unique_ptr<JpegDecoder>> made = JpegDecoder::Create(**stream, o);
      if (!made.ok()) {
        std::fprintf(stderr, "gpu_jpeg_bench: %s\n", made.status().ToString().c_str());
        return 1;
      }
      JpegDecoder& decoder = **made;
      if (mode.options.use_gpu && !decoder.gpu_enabled()) {
        std::printf("{\"case\":\"decoder\",\"mode\":\"%s\",\"skipped\":\"%s\"}\n", mode.name,
                    std::string(decoder.unavailable_reason()).c_str());
        break;
      }
      Result<Diff> d_fancy = Compare(decoder, **stream, all, fancy);
      Result<Diff> d_plain = Compare(decoder, **stream, all, plain);
      if (!d_fancy.ok() || !d_plain.ok()) {
        std::fprintf(stderr, "gpu_jpeg_bench: %s: %s\n", mode.name,
                     (!d_fancy.ok() ? d_fancy.status() : d_plain.status()).ToString().c_str());
        return 1;
      }
      const JpegDecodeStats before = decoder.stats();
      std::vector<EncodedJpeg> slice(static_cast<size_t>(batch));
      size_t next = 0;
      int64_t done = 0;
      auto one_batch = [&]() -> Status {
        for (EncodedJpeg& e : slice) e = all[next++ % all.size()];
        SLUICE_RETURN_IF_ERROR(decoder.Decode(slice).status());
        return (*stream)->Synchronize();
      };
      Status s = one_batch();  // warm-up: nvJPEG's buffers, the allocators' caches
      const double cpu0 = CpuSeconds();
      const auto t0 = Clock::now();
      while (s.ok() && Since(t0) < args.seconds) {
        s = one_batch();
        done += batch;
      }
      const double wall = Since(t0);
      if (!s.ok()) {
        std::fprintf(stderr, "gpu_jpeg_bench: %s: %s\n", mode.name, s.ToString().c_str());
        return 1;
      }
      const JpegDecodeStats st = decoder.stats();
      const double rate = static_cast<double>(done) / wall;
      if (std::string(mode.name) == "hardware") decode_rate[batch] = rate;
      std::printf(
          "{\"case\":\"decoder\",\"device\":\"%s\",\"mode\":\"%s\",\"batch\":%d,"
          "\"images_per_s\":%.0f,\"mpix_per_s\":%.0f,\"ratio_to_cpu_threads\":%.2f,"
          "\"host_cores\":%.2f,\"hardware\":%lld,\"gpu_hybrid\":%lld,\"cpu\":%lld,"
          "\"failed\":%lld,\"batch_failures\":%lld,\"max_abs_diff\":%d,\"mean_abs_diff\":%.3f,"
          "\"max_abs_diff_no_fancy\":%d,\"mean_abs_diff_no_fancy\":%.3f}\n",
          device.ToString().c_str(), mode.name, batch, rate, rate * mean_pixels / 1e6,
          rate / cpu_rate, (CpuSeconds() - cpu0) / wall,
          static_cast<long long>(st.hardware - before.hardware),
          static_cast<long long>(st.gpu_hybrid - before.gpu_hybrid),
          static_cast<long long>(st.cpu - before.cpu),
          static_cast<long long>(st.failed - before.failed),
          static_cast<long long>(st.gpu_batch_failures), d_fancy->max, d_fancy->mean, d_plain->max,
          d_plain->mean);
      std::fflush(stdout);
    }
  }
  for (int batch : args.batches) {
    if (decode_rate.count(batch) == 0) continue;
    if (!Augment(**stream, all, batch, decode_rate[batch], cpu_rate, mean_pixels, args.seconds) ||
        !Overlapped(**stream, all, batch, decode_rate[batch], args.seconds) ||
        (batch == args.batches.back() &&  // the states' lines at the last batch size only
         !OverlapStates(**stream, all, batch, decode_rate[batch], args.states, args.seconds))) {
      return 1;
    }
    for (int prefetch : args.prefetch) {
      if (!Stage(device, bytes, batch, decode_rate[batch], cpu_rate, args.seconds, args.tfrecords,
                 prefetch)) {
        return 1;
      }
    }
  }
  return 0;
}

}  // namespace
}  // namespace sluice::gpu

int main(int argc, char** argv) { return sluice::gpu::Run(sluice::gpu::Parse(argc, argv)); }
