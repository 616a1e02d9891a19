// `sluice convert`: image folders and IDX files to sharded TFRecords. This
// file registers the command and holds what its two subcommands share.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "commands.h"
#include "convert_command.h"

namespace sluice::tools {

void AddConvertCommonOptions(CLI::App* cmd, ConvertCommonOptions* o, bool shard_size_option) {
  cmd->add_option("--out,-o", o->out,
                  "Output prefix: writes PREFIX-00000-of-000NN.tfrecord ... and PREFIX-labels.txt")
      ->required();
  CLI::Option* shards =
      cmd->add_option("--shards", o->shards, "Number of shards (contiguous, near-equal counts)")
          ->check(CLI::Range(size_t{1}, kMaxShards));
  if (shard_size_option) {
    cmd->add_option("--shard-size", o->shard_size_mb,
                    "Shards of about this many MB (10^6 bytes) of input images [default: 100]")
        ->check(CLI::PositiveNumber)
        ->excludes(shards);
  }
  cmd->add_option("--workers,-j", o->workers,
                  "Worker threads [default: the CPUs available]; the output does not depend on it")
      ->check(CLI::Range(1, 4096));
  CLI::Option* shuffle =
      cmd->add_flag("--shuffle", o->shuffle, "Shuffle the list (seeded) before cutting shards");
  cmd->add_option("--seed", o->seed, "Seed of --shuffle")->needs(shuffle)->capture_default_str();
  cmd->add_option("--compression,-c", o->compression,
                  "none, or gzip / zlib (shards then end in .gz / .zz)")
      ->check(CLI::IsMember({"none", "gzip", "zlib"}))
      ->capture_default_str();
  cmd->add_flag("--index", o->index, "Also write each shard's .idx (records/record_index.h)");
  cmd->add_flag("--resume", o->resume,
                "Keep shards that already exist (and their .idx with --index); write the rest");
}

Status PrepareOutputPrefix(const std::string& prefix) {
  namespace fs = std::filesystem;
  if (prefix.empty() || prefix.back() == '/') {
    return Status::InvalidArgument("--out " + prefix +
                                   ": give a file name prefix such as out/train, not a folder");
  }
  std::error_code ec;
  if (fs::is_directory(prefix, ec)) {
    return Status::InvalidArgument(
        "--out " + prefix + " is a folder; give a file name prefix such as " + prefix + "/train");
  }
  const fs::path parent = fs::path(prefix).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec)) {
    fs::create_directories(parent, ec);
    if (ec) {
      return Status::FailedPrecondition("cannot create the output folder " + parent.string() +
                                        ": " + ec.message());
    }
  }
  return Status::OK();
}

Status WriteLabelsFile(const std::string& prefix, const std::vector<std::string>& names,
                       const std::vector<uint64_t>& counts) {
  std::string text = "# id\tclass\timages\n";
  for (size_t i = 0; i < names.size(); ++i) {
    text += fmt::format("{}\t{}\t{}\n", i, names[i], i < counts.size() ? counts[i] : 0);
  }
  const std::string path = LabelsPath(prefix);
  RemoveStaleTemporaries(std::vector<std::string>{path});
  const std::filesystem::path p(path);
  const std::string tmp =
      (p.parent_path() / ("." + p.filename().string() + fmt::format(".tmp-{}", ::getpid())))
          .string();
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) {
    return Status::FailedPrecondition(
        fmt::format("cannot create {}: {}", path, std::strerror(errno)));
  }
  const bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const bool closed = std::fclose(f) == 0;
  if (!written || !closed || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    return Status::Unavailable(fmt::format("cannot write {}: {}", path, std::strerror(err)));
  }
  return Status::OK();
}

ConvertJob MakeConvertJob(const ConvertCommonOptions& o) {
  ConvertJob job;
  job.prefix = o.out;
  job.compression = ParseCompression(o.compression).value_or(Compression::kNone);
  job.write_index = o.index;
  job.resume = o.resume;
  job.workers = o.workers > 0 ? o.workers : AvailableCpus();
  return job;
}

int ReportConversion(std::string_view command, const ConvertCommonOptions& o, const ConvertJob& job,
                     const ConvertReport& r, std::string_view unit,
                     const std::function<std::string(size_t)>& item_name) {
  if (r.stale_temporaries > 0) {
    fmt::print("removed {} temporary files left by an interrupted run\n", r.stale_temporaries);
  }
  if (!r.status.ok()) {
    fmt::print(stderr,
               "sluice {}: {}\n{} of {} shards are complete; run again with --resume to finish\n",
               command, r.status.ToString(), r.shards_resumed + r.shards_written, r.shards_total);
    return 1;
  }
  const double secs = r.seconds > 0 ? r.seconds : 1e-9;
  fmt::print(
      "converted {} {} into {} shards in {:.2f} s: {:.0f} {}/s, {:.1f} MB/s in, {:.1f} MB "
      "written\n",
      r.items_converted, unit, r.shards_written, r.seconds, r.items_processed / secs, unit,
      r.bytes_in / 1e6 / secs, r.bytes_out / 1e6);
  if (r.shards_resumed > 0) {
    fmt::print("resumed: {} of {} shards were complete already and were kept\n", r.shards_resumed,
               r.shards_total);
  }
  if (r.shards_total == 1) {
    fmt::print("shard: {}\n", ShardPath(o.out, 0, 1, job.compression));
  } else {
    fmt::print("shards: {} ... {}\n", ShardPath(o.out, 0, r.shards_total, job.compression),
               ShardPath(o.out, r.shards_total - 1, r.shards_total, job.compression));
  }
  fmt::print("labels: {}\n", LabelsPath(o.out));
  if (r.skipped.empty()) return 0;
  fmt::print(stderr, "sluice {}: skipped {} {} that could not be converted:\n", command,
             r.skipped.size(), unit);
  for (const auto& [item, status] : r.skipped) {
    const std::string name = item_name(item);
    std::string why(status.message());
    // Codec messages name the file too ("decode_image: cat/x.jpg: ..."): once is enough.
    const size_t dup = why.find(name + ": ");
    if (dup != std::string::npos) why.erase(dup, name.size() + 2);
    fmt::print(stderr, "  {}: {}\n", name, why);
  }
  return kExitSkipped;
}

void AddConvertCommand(CLI::App& app, int* exit_code) {
  CLI::App* convert = app.add_subcommand(
      "convert",
      "Convert an image folder (one subfolder per class) or MNIST-style IDX files into sharded "
      "TFRecord files of tf.train.Example, in parallel, resumably");
  convert->require_subcommand(1);
  convert->footer(
      "Examples:\n"
      "  sluice convert images photos/train --out data/train --shards 64 --shuffle --seed 7\n"
      "  sluice convert idx train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz --out "
      "data/mnist-train\n"
      "Docs: docs/convert.md");
  AddConvertImagesCommand(*convert, exit_code);
  AddConvertIdxCommand(*convert, exit_code);
}

}  // namespace sluice::tools
