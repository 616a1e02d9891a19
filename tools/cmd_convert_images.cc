// `sluice convert images DIR --out PREFIX`: a class-per-subfolder image tree
// to sharded TFRecords of the common image schema (image_example.h).
#include <algorithm>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "commands.h"
#include "convert_command.h"
#include "convert_output.h"
#include "image_convert.h"
#include "interrupt.h"
#include "memory_gate.h"
#include "plural.h"
#include "sluice/ops/image_limits.h"
#include "sluice/pipeline/image_folder.h"
#include "sluice/records/crc32c.h"
#include "wxh.h"

namespace sluice::tools {
namespace {

constexpr std::string_view kCommand = "convert images";
constexpr double kDefaultShardMb = 100;
// --ram-budget's default, in MB: room for the decodes of a few 100-megapixel
// images, or hundreds of ordinary photos, at once.
constexpr int64_t kDefaultRamBudgetMb = 2048;

struct ConvertImagesOptions {
  ConvertCommonOptions common;
  std::string dir;
  std::string resize;  // "WxH"
  bool keep_aspect = false;
  int quality = 95;
  int restart_interval = 0;
  std::string check = "header";
  int64_t ram_budget_mb = kDefaultRamBudgetMb;
};

// "WxH" -> {H, W}; each side 1..65500 (JPEG's limit). The area is checked
// by CheckResizeArea.
std::optional<ops::ImageSize> ParseSize(std::string_view s) {
  int64_t w = 0, h = 0;
  if (!ParseWxH(s, &w, &h)) return std::nullopt;
  return ops::ImageSize{h, w};
}

// Empty if --resize's box holds at most max_pixels (every output, with
// --keep-aspect too, fits inside it), else why not.
std::string CheckResizeArea(const ops::ImageSize& size) {
  const int64_t pixels = size.height * size.width;
  if (pixels <= ops::kDefaultMaxImagePixels) return {};
  return fmt::format(
      "{}x{} is {} pixels an image, more than the limit of {} (max_pixels, the largest image "
      "decoded or resized)",
      size.width, size.height, pixels, ops::kDefaultMaxImagePixels);
}

void PrintFolderNotes(const ImageFolder& folder) {
  fmt::print("found {} in {} under {}\n", Plural(folder.files.size(), "image", "images"),
             Plural(folder.classes.size(), "class", "classes"), folder.root);
  if (!folder.ignored.empty()) {
    fmt::print("ignored {} files without an image extension or outside a class folder (e.g. {})\n",
               folder.ignored.size(), folder.ignored.front());
  }
  for (size_t i = 0; i < folder.classes.size(); ++i) {
    if (folder.class_counts[i] == 0) {
      fmt::print("note: class {} ({}) has no images\n", i, folder.classes[i]);
    }
  }
}

// The output may not go inside DIR: its folder would become a class.
Status CheckOutputOutside(const std::string& dir, const std::string& prefix) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path in = fs::weakly_canonical(dir, ec);
  const fs::path out = fs::weakly_canonical(fs::absolute(prefix, ec).parent_path(), ec);
  if (ec) return Status::OK();
  auto [in_end, out_it] = std::mismatch(in.begin(), in.end(), out.begin(), out.end());
  if (in_end == in.end() && out_it != out.end()) {
    return Status::InvalidArgument("--out " + prefix + " lies inside " + dir +
                                   ", where its folder would be taken for a class");
  }
  return Status::OK();
}

// What the manifest records of the input: the files listed, in order, with
// their sizes and labels (another folder, or a changed one, cuts other shards).
std::string ListingFingerprint(const ImageFolder& folder) {
  uint32_t crc = 0;
  uint64_t bytes = 0;
  for (const ImageFile& f : folder.files) {
    const std::string line = fmt::format("{}\t{}\t{}\n", f.relative, f.size, f.label);
    crc = crc32c::Extend(crc, line.data(), line.size());
    bytes += f.size;
  }
  return fmt::format("{} files, {} bytes, listing crc32c {:08x}", folder.files.size(), bytes, crc);
}

// This conversion, as PREFIX-manifest.json records it.
ConvertManifest Manifest(const ConvertImagesOptions& o, const std::string& listing, size_t shards) {
  ConvertManifest m;
  m.command = std::string(kCommand);
  m.options = CommonManifestOptions(o.common);
  m.options["input"] = listing;
  m.options["--shard-size"] =
      o.common.shards > 0 ? ""
                          : fmt::format("{}", o.common.shard_size_mb > 0 ? o.common.shard_size_mb
                                                                         : kDefaultShardMb);
  m.options["--resize"] = o.resize;
  m.options["--keep-aspect"] = o.keep_aspect ? "yes" : "";
  m.options["--quality"] = o.resize.empty() ? "" : std::to_string(o.quality);
  m.options["--check"] = o.check;
  m.options["--restart-interval"] = std::to_string(o.restart_interval);
  m.shards = shards;
  return m;
}

int RunConvertImages(const ConvertImagesOptions& o) {
  const ConvertCommonOptions& c = o.common;
  Result<ConvertTask> task = ResolveTask(c);
  if (!task.ok()) return Fail(kCommand, task.status());
  Status st = CheckOutputOutside(o.dir, c.out);
  if (st.ok()) st = PrepareOutputPrefix(c.out);
  if (!st.ok()) return Fail(kCommand, st);
  Result<ImageFolder> folder = ScanImageFolder(o.dir);
  if (!folder.ok()) return Fail(kCommand, folder.status());
  for (const std::string& name : folder->classes) {
    if (name.find_first_of("\t\n\r") != std::string::npos) {
      return Fail(kCommand, Status::InvalidArgument(
                                "class folder " + o.dir + "/" + name +
                                ": a name with a tab or newline cannot go in the labels file"));
    }
  }
  if (folder->classes.empty() || folder->files.empty()) {
    return Fail(kCommand,
                Status::InvalidArgument(fmt::format(
                    "{}: no images found; expected {}/<class>/<image>.jpg or .png", o.dir, o.dir)));
  }
  PrintFolderNotes(*folder);
  const std::string listing = ListingFingerprint(*folder);
  std::vector<ImageFile> files = std::move(folder->files);
  if (c.shuffle) SeededShuffle(files, c.seed);
  std::vector<uint64_t> sizes;
  sizes.reserve(files.size());
  for (const ImageFile& f : files) sizes.push_back(f.size);

  ConvertJob job = MakeConvertJob(c, *task);
  if (c.shards > 0) {
    job.shards = PlanShardsByCount(files.size(), c.shards);
  } else {
    const double mb = c.shard_size_mb > 0 ? c.shard_size_mb : kDefaultShardMb;
    job.shards = PlanShardsBySize(sizes, std::max<uint64_t>(1, static_cast<uint64_t>(mb * 1e6)));
  }
  Result<std::unique_ptr<ConvertOutput>> output =
      PrepareConversion(c, *task, Manifest(o, listing, job.shards.size()));
  if (!output.ok()) return Fail(kCommand, output.status());
  for (const std::string& note : (*output)->notes()) fmt::print("{}\n", note);
  job.keep = (*output)->keep();
  job.on_shard_done = [&](size_t shard, const ShardWritten& w) {
    return (*output)->RecordShard(shard, w);
  };
  // The counts are of the files listed (skipped ones included): they depend
  // on the folder alone, so task 0 writes what a single run writes.
  if (task->writes_labels()) {
    st = WriteLabelsFile(c.out, folder->classes, folder->class_counts, c.sync);
    if (!st.ok()) return Fail(kCommand, st);
  }

  ImageConvertOptions image_options;
  image_options.full_check = o.check == "full";
  image_options.resize = o.resize.empty() ? std::nullopt : ParseSize(o.resize);
  image_options.keep_aspect = o.keep_aspect;
  image_options.quality = o.quality;
  image_options.restart_interval = o.restart_interval;
  MemoryGate gate(static_cast<uint64_t>(o.ram_budget_mb) * 1000 * 1000);
  image_options.gate = &gate;
  const std::vector<std::string>& classes = folder->classes;
  job.process = [&](size_t i) {
    return ConvertImageFile(o.dir, files[i], classes[files[i].label], image_options);
  };
  job.item_bytes = std::move(sizes);
  job.progress_label = (task->split() ? TaskName(*task) + ": " : "") + "converting " + o.dir;
  ConvertReport report = RunConversion(job);
  const Status recorded = (*output)->Flush();
  if (report.status.ok() && !recorded.ok()) report.status = recorded;
  return ReportConversion(kCommand, c, job, *task, report, "images",
                          [&](size_t i) { return files[i].relative; });
}

}  // namespace

void AddConvertImagesCommand(CLI::App& convert, int* exit_code) {
  auto o = std::make_shared<ConvertImagesOptions>();
  CLI::App* cmd = convert.add_subcommand(
      "images",
      "Convert DIR/<class>/<image> (JPEG or PNG) into sharded TFRecords of tf.train.Example "
      "with the image/encoded, image/format, image/height, image/width, image/channels, "
      "image/class/label, image/class/text and image/filename features. Class ids follow the "
      "sorted folder names (PREFIX-labels.txt lists them). Files that cannot be converted are "
      "skipped and listed at the end (exit status 3).");
  cmd->add_option("dir", o->dir, "Folder with one subfolder per class")
      ->required()
      ->check(CLI::ExistingDirectory);
  AddConvertCommonOptions(cmd, &o->common, /*shard_size_option=*/true);
  CLI::Option* resize =
      cmd->add_option("--resize", o->resize,
                      "Decode, resize to WxH (bilinear, antialias) and re-encode as JPEG; W x H "
                      "at most 134217728 pixels")
          ->check(CLI::Validator(
              [](std::string& s) {
                const std::optional<ops::ImageSize> size = ParseSize(s);
                if (!size) return std::string("expected WxH such as 256x256, each side 1..65500");
                return CheckResizeArea(*size);
              },
              "WxH"));
  cmd->add_flag("--keep-aspect", o->keep_aspect,
                "With --resize: fit inside WxH keeping the aspect ratio")
      ->needs(resize);
  cmd->add_option("--quality", o->quality, "JPEG quality after --resize")
      ->check(CLI::Range(0, 100))
      ->needs(resize)
      ->capture_default_str();
  cmd->add_option("--restart-interval", o->restart_interval,
                  "Put a restart marker every N MCUs in each JPEG (lowered to fit the MCU rows): "
                  "lets fused crop decodes skip what lies outside the window. Stored JPEGs are "
                  "re-encoded losslessly (same pixels), --resize encodes with them; PNGs are kept. "
                  "0: off, files stored byte for byte")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  cmd->add_option("--check", o->check,
                  "header: parse each image's header; full: also decode it, strictly (finds data "
                  "cut short or corrupt that a lenient decoder would make up, as "
                  "--restart-interval does; slower)")
      ->check(CLI::IsMember({"header", "full"}))
      ->capture_default_str();
  cmd->add_option("--ram-budget", o->ram_budget_mb,
                  "MB that the decodes, resizes and encodes of all workers may hold at once: a "
                  "worker waits, its image's size known from its header, until its work fits (an "
                  "image larger than the budget converts alone)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40))
      ->capture_default_str();
  cmd->footer(
      "Examples:\n"
      "  sluice convert images ~/imagenet/train --out /data/imagenet/train --shards 1024 "
      "--shuffle --seed 1 --index\n"
      "  sluice convert images photos --out out/photos --shard-size 200 --resize 256x256 "
      "--quality 90\n"
      "  sluice convert images photos --out out/photos --resume   # finish an interrupted run\n"
      "  sluice convert images photos --out out/photos --shards 64 --num-tasks 8 --task-index 3\n"
      "  mpirun -np 4 sluice convert images photos --out out/photos --shards 64 --mpi\n"
      "Exit status: 0 all converted, 3 some files skipped (listed on stderr; a rank under --mpi "
      "exits 0 then, so that mpirun does not stop the others), 1 error, 2 usage.\n"
      "Docs: docs/convert.md");
  cmd->callback([o, exit_code] {
    CheckTaskOptionsOrThrow(o->common);
    InstallInterruptHandler();
    *exit_code = RunConvertImages(*o);
  });
}

}  // namespace sluice::tools
