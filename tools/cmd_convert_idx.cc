// `sluice convert idx IMAGES LABELS --out PREFIX`: MNIST-style IDX files to
// sharded TFRecords of the common image schema, each image a gray PNG; or,
// with `--to-folder DIR`, to an image folder of gray PNGs (idx_folder.h).
#include <algorithm>
#include <cstring>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "commands.h"
#include "convert_command.h"
#include "convert_output.h"
#include "idx_file.h"
#include "idx_folder.h"
#include "image_example.h"
#include "interrupt.h"
#include "sluice/core/file.h"
#include "sluice/ops/png.h"
#include "sluice/records/crc32c.h"

namespace sluice::tools {
namespace {

constexpr std::string_view kCommand = "convert idx";

struct ConvertIdxOptions {
  ConvertCommonOptions common;
  std::string images, labels;
  std::string class_names;  // a file, one name per line
  bool fashion = false;
  std::string name_prefix;  // of image/filename; from the images file by default
  std::string to_folder;    // DIR, instead of common.out
};

const std::vector<std::string>& FashionMnistNames() {
  static const std::vector<std::string> kNames = {"T-shirt/top", "Trouser",   "Pullover", "Dress",
                                                  "Coat",        "Sandal",    "Shirt",    "Sneaker",
                                                  "Bag",         "Ankle boot"};
  return kNames;
}

// A class names file is one short line per class.
constexpr int64_t kMaxClassNamesBytes = int64_t{16} << 20;

Result<std::vector<std::string>> ReadClassNames(const std::string& path) {
  Result<std::string> text = ReadFileToString(path, kMaxClassNamesBytes);
  if (!text.ok()) return text.status().WithContext("the class names file");
  std::vector<std::string> names;
  std::istringstream in(*text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find('\t') != std::string::npos) {
      return Status::InvalidArgument(fmt::format(
          "{}: line {} holds a tab (the labels file is tab-separated)", path, names.size() + 1));
    }
    names.push_back(std::move(line));
  }
  if (names.empty()) return Status::InvalidArgument(path + ": no class names");
  return names;
}

// "train-images-idx3-ubyte.gz" -> "train"; "foo.idx" -> "foo".
std::string DefaultNamePrefix(const std::string& images_path) {
  std::string base = images_path.substr(images_path.rfind('/') + 1);
  const size_t images = base.find("-images");
  if (images != std::string::npos && images > 0) return base.substr(0, images);
  const size_t dot = base.find('.');
  return dot == std::string::npos || dot == 0 ? base : base.substr(0, dot);
}

// What the manifest records of an input file: its name, shape and the
// CRC-32C of its (inflated) data.
std::string Fingerprint(const std::string& path, const IdxArray& a) {
  std::string dims;
  for (int64_t d : a.dims) dims += (dims.empty() ? "" : "x") + std::to_string(d);
  return fmt::format("{} [{}] crc32c {:08x}", path.substr(path.rfind('/') + 1), dims,
                     crc32c::Value(a.data.data(), a.data.size()));
}

Result<RecordBytes> ConvertIdxImage(const IdxArray& images, const IdxArray& labels, size_t i,
                                    const std::vector<std::string>& names,
                                    const std::string& name_prefix) {
  const int64_t rows = images.dims[1], cols = images.dims[2];
  const size_t pixels = static_cast<size_t>(rows * cols);
  SLUICE_ASSIGN_OR_RETURN(Tensor image, Tensor::Allocate(DType::kUInt8, Shape{rows, cols, 1}));
  std::memcpy(image.raw_data(), images.data.data() + i * pixels, pixels);
  SLUICE_ASSIGN_OR_RETURN(std::string png, ops::EncodePng(image));
  const int64_t label = static_cast<uint8_t>(labels.data[i]);
  const std::string filename = fmt::format("{}-{:05d}", name_prefix, i);
  ImageExampleFields f;
  f.format = "png";
  f.height = rows;
  f.width = cols;
  f.channels = 1;
  f.label = label;
  f.class_text = names[static_cast<size_t>(label)];
  f.filename = filename;
  return RecordBytes(SerializeImageExample(f, png));
}

int WriteFolder(const ConvertIdxOptions& o, const IdxArray& images, const IdxArray& labels,
                const std::vector<std::string>& names, const std::vector<uint64_t>& counts) {
  IdxFolderJob job;
  job.dir = o.to_folder;
  while (job.dir.size() > 1 && job.dir.back() == '/') job.dir.pop_back();
  job.images = &images;
  job.labels = &labels;
  job.folders = ClassFolderNames(names);
  job.name_prefix = o.name_prefix.empty() ? DefaultNamePrefix(o.images) : o.name_prefix;
  if (job.name_prefix.find('/') != std::string::npos) {
    return Fail(kCommand, Status::InvalidArgument("--name-prefix " + job.name_prefix +
                                                  " holds a '/'; with --to-folder it starts "
                                                  "a file name"));
  }
  job.workers = o.common.workers > 0 ? o.common.workers : AvailableCpus();
  job.resume = o.common.resume;
  job.sync = o.common.sync;
  const IdxFolderReport r = WriteIdxFolder(job);
  for (const std::string& name : r.foreign) {
    fmt::print(stderr,
               "sluice {}: warning: {}/{} is not a class folder of these labels; "
               "`convert images` would take it for a class\n",
               kCommand, job.dir, name);
  }
  if (!r.status.ok()) {
    fmt::print(stderr, "sluice {}: {}\n", kCommand, r.status.ToString());
    if (r.written + r.kept > 0) {
      fmt::print(stderr, "{} of {} images are written; run again with --resume to finish\n",
                 r.written + r.kept, images.count());
    }
    return 1;
  }
  const double secs = r.seconds > 0 ? r.seconds : 1e-9;
  fmt::print(
      "wrote {} images as gray PNGs into {} class folders in {:.2f} s: {:.0f} images/s, "
      "{:.1f} MB written\n",
      r.written, job.folders.size(), r.seconds, (r.written + r.kept) / secs, r.bytes_out / 1e6);
  if (r.kept > 0) fmt::print("resumed: {} images were written already and were kept\n", r.kept);
  fmt::print("folder: {}\n", job.dir);
  for (size_t i = 0; i < job.folders.size(); ++i) {
    fmt::print("  {}\t{}\t{} images\n", i, job.folders[i], counts[i]);
  }
  return 0;
}

int RunConvertIdx(const ConvertIdxOptions& o) {
  const ConvertCommonOptions& c = o.common;
  const bool folder = !o.to_folder.empty();
  Result<ConvertTask> task = ResolveTask(c);
  if (!task.ok()) return Fail(kCommand, task.status());
  Status st = folder ? Status::OK() : PrepareOutputPrefix(c.out);
  if (!st.ok()) return Fail(kCommand, st);
  Result<IdxArray> images = ReadIdxFile(o.images, 3);
  if (!images.ok()) return Fail(kCommand, images.status());
  Result<IdxArray> labels = ReadIdxFile(o.labels, 1);
  if (!labels.ok()) return Fail(kCommand, labels.status());
  if (images->count() != labels->count()) {
    return Fail(kCommand, Status::InvalidArgument(fmt::format(
                              "{} holds {} images (count at offset 4) but {} holds {} labels",
                              o.images, images->count(), o.labels, labels->count())));
  }
  std::vector<std::string> names;
  if (!o.class_names.empty()) {
    Result<std::vector<std::string>> read = ReadClassNames(o.class_names);
    if (!read.ok()) return Fail(kCommand, read.status());
    names = std::move(*read);
  } else if (o.fashion) {
    names = FashionMnistNames();
  }
  const uint8_t max_label = labels->data.empty()
                                ? 0
                                : static_cast<uint8_t>(*std::max_element(
                                      labels->data.begin(), labels->data.end(), [](char a, char b) {
                                        return static_cast<uint8_t>(a) < static_cast<uint8_t>(b);
                                      }));
  if (names.empty()) {  // the ids themselves, as MNIST's digits
    for (int i = 0; i <= max_label; ++i) names.push_back(std::to_string(i));
  }
  std::vector<uint64_t> counts(names.size(), 0);
  for (size_t i = 0; i < labels->data.size(); ++i) {
    const uint8_t label = static_cast<uint8_t>(labels->data[i]);
    if (label >= names.size()) {
      return Fail(kCommand, Status::InvalidArgument(fmt::format(
                                "{}: label {} of image {} (offset {}) has no class name: there "
                                "are {} names",
                                o.labels, label, i, 8 + i, names.size())));
    }
    ++counts[label];
  }
  if (folder) return WriteFolder(o, *images, *labels, names, counts);

  const size_t n = static_cast<size_t>(images->count());
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  if (c.shuffle) SeededShuffle(order, c.seed);
  ConvertJob job = MakeConvertJob(c, *task);
  job.shards = PlanShardsByCount(n, c.shards > 0 ? c.shards : 1);
  const std::string prefix = o.name_prefix.empty() ? DefaultNamePrefix(o.images) : o.name_prefix;
  ConvertManifest manifest;
  manifest.command = std::string(kCommand);
  manifest.options = CommonManifestOptions(c);
  manifest.options["input"] =
      fmt::format("{}; {}", Fingerprint(o.images, *images), Fingerprint(o.labels, *labels));
  uint32_t names_crc = 0;
  for (const std::string& name : names) {
    names_crc = crc32c::Extend(names_crc, name.data(), name.size() + 1);  // with its NUL
  }
  manifest.options["class names"] = fmt::format("{}, crc32c {:08x}", names.size(), names_crc);
  manifest.options["--name-prefix"] = prefix;
  manifest.shards = job.shards.size();
  Result<std::unique_ptr<ConvertOutput>> output = PrepareConversion(c, *task, manifest);
  if (!output.ok()) return Fail(kCommand, output.status());
  for (const std::string& note : (*output)->notes()) fmt::print("{}\n", note);
  job.keep = (*output)->keep();
  job.on_shard_done = [&](size_t shard, const ShardWritten& w) {
    return (*output)->RecordShard(shard, w);
  };
  if (task->writes_labels()) {  // every label counted: the same for every task
    st = WriteLabelsFile(c.out, names, counts, c.sync);
    if (!st.ok()) return Fail(kCommand, st);
  }
  job.process = [&](size_t i) {
    return ConvertIdxImage(*images, *labels, order[i], names, prefix);
  };
  job.item_bytes.assign(n, static_cast<uint64_t>(images->dims[1] * images->dims[2]));
  job.progress_label = (task->split() ? TaskName(*task) + ": " : "") + "converting " + o.images;
  ConvertReport report = RunConversion(job);
  const Status recorded = (*output)->Flush();
  if (report.status.ok() && !recorded.ok()) report.status = recorded;
  return ReportConversion(kCommand, c, job, *task, report, "images",
                          [&](size_t i) { return fmt::format("{}-{:05d}", prefix, order[i]); });
}

}  // namespace

void AddConvertIdxCommand(CLI::App& convert, int* exit_code) {
  auto o = std::make_shared<ConvertIdxOptions>();
  CLI::App* cmd = convert.add_subcommand(
      "idx",
      "Convert MNIST-style IDX files (images: magic 0x00000803, uint8 [n, rows, cols]; labels: "
      "0x00000801, uint8 [n]; plain or .gz) into sharded TFRecords of tf.train.Example with the "
      "same features as `convert images`, each image a 1-channel PNG named like train-00042; "
      "or, with --to-folder, into an image folder of such PNGs.");
  cmd->add_option("images", o->images, "IDX images file (e.g. train-images-idx3-ubyte.gz)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("labels", o->labels, "IDX labels file (e.g. train-labels-idx1-ubyte.gz)")
      ->required()
      ->check(CLI::ExistingFile);
  AddConvertCommonOptions(cmd, &o->common, /*shard_size_option=*/false);
  // Either TFRecords (--out) or an image folder (--to-folder): one is needed.
  CLI::Option* out = cmd->get_option("--out");
  out->required(false);
  CLI::Option* to_folder =
      cmd->add_option("--to-folder", o->to_folder,
                      "Instead of --out: write each image as a gray PNG "
                      "DIR/<class>/<prefix>-<index, 5 digits>.png (see below), for "
                      "`sluice convert images` or other tools; honours --workers and --resume")
          ->type_name("DIR")
          ->excludes(out);
  for (const char* name : {"--shards", "--shuffle", "--seed", "--compression", "--index",
                           "--overwrite", "--num-tasks", "--task-index", "--mpi"}) {
    to_folder->excludes(cmd->get_option(name));
  }
  CLI::Option* names =
      cmd->add_option("--class-names", o->class_names,
                      "File with one class name per line, for label 0, 1, ... [default: the "
                      "label numbers, as MNIST's digits]")
          ->check(CLI::ExistingFile);
  cmd->add_flag("--fashion", o->fashion,
                "Use Fashion-MNIST's class names (T-shirt/top, Trouser, ..., Ankle boot)")
      ->excludes(names);
  cmd->add_option("--name-prefix", o->name_prefix,
                  "image/filename prefix [default: from the images file, e.g. train]");
  cmd->footer(
      "Examples:\n"
      "  D=/usr/share/datasets/fashion-mnist   # Debian's dataset-fashion-mnist\n"
      "  sluice convert idx $D/train-images-idx3-ubyte.gz $D/train-labels-idx1-ubyte.gz "
      "--fashion --out data/fashion-train --shards 4 --shuffle\n"
      "  sluice convert idx t10k-images-idx3-ubyte t10k-labels-idx1-ubyte --out data/mnist-test\n"
      "  mpirun -np 4 sluice convert idx $D/train-images-idx3-ubyte.gz "
      "$D/train-labels-idx1-ubyte.gz --fashion --out data/fashion-train --shards 16 --mpi\n"
      "  sluice convert idx $D/t10k-images-idx3-ubyte.gz $D/t10k-labels-idx1-ubyte.gz --fashion "
      "--to-folder data/fashion-test && sluice convert images data/fashion-test --out "
      "data/fashion-test-rec\n"
      "--to-folder class folders: bytes of a class name outside [A-Za-z0-9._+-], and a\n"
      "  leading '.', become '_'. If the names so made are distinct and sort in label order\n"
      "  they are kept; otherwise each gets its label, zero-padded, and '_' in front:\n"
      "  Fashion-MNIST gives 0_T-shirt_top, 1_Trouser, ..., 9_Ankle_boot; MNIST 0 ... 9.\n"
      "  So `convert images`, which numbers classes in sorted folder order, restores the\n"
      "  labels. Every class gets a folder. DIR must be new or empty, unless --resume,\n"
      "  which keeps the files already there.\n"
      "Exit status: 0 all converted, 1 error (a bad file is named with the offset), 2 usage.\n"
      "Docs: docs/convert.md");
  cmd->callback([o, exit_code] {
    if (o->common.out.empty() && o->to_folder.empty()) {
      throw CLI::RequiredError("--out or --to-folder");
    }
    CheckTaskOptionsOrThrow(o->common);
    InstallInterruptHandler();
    *exit_code = RunConvertIdx(*o);
  });
}

}  // namespace sluice::tools
