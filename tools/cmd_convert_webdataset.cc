// `sluice convert webdataset DIR_OR_GLOB --out PREFIX`: WebDataset tar
// shards to TFRecords of tf.train.Example, one bytes feature per member
// (named by its lower-cased extension) plus "__key__"; and
// `sluice convert tfrecord FILES --to webdataset --out PREFIX`, the reverse:
// each bytes feature of one value a member KEY.FEATURE (KEY from "__key__",
// else the example's number). Payload bytes are preserved both ways.
//
// One output shard per input file, in the inputs' sorted order:
// PREFIX-00000-of-000NN.tfrecord (or .tar). Each shard is published
// atomically when complete (a temporary name renamed), so an interrupted
// run leaves whole shards or none; run it again to finish.

#include <algorithm>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "commands.h"
#include "convert_command.h"
#include "convert_shards.h"
#include "interrupt.h"
#include "plural.h"
#include "sluice/core/file_pattern.h"
#include "sluice/records/example_builder.h"
#include "sluice/records/proto/example.pb.h"
#include "sluice/records/record_index.h"
#include "sluice/records/tar_reader.h"
#include "sluice/records/tar_writer.h"
#include "sluice/records/tfrecord_reader.h"
#include "sluice/records/tfrecord_writer.h"

namespace sluice::tools {
namespace {

struct Options {
  std::vector<std::string> inputs;
  std::string out;
  std::string to = "tfrecord";
  bool index = false;
};

struct Totals {
  uint64_t records = 0, bytes_in = 0, bytes_out = 0;
};

// DIR: its *.tar, *.tar.gz and *.tgz; otherwise brace-expanded globs.
Result<std::vector<std::string>> ListInputs(const std::vector<std::string>& args, bool tars) {
  std::vector<std::string> files;
  for (const std::string& arg : args) {
    std::error_code ec;
    if (tars && std::filesystem::is_directory(arg, ec)) {
      for (const auto& e : std::filesystem::directory_iterator(arg, ec)) {
        const std::string p = e.path().string();
        if (e.is_regular_file() &&
            (p.ends_with(".tar") || p.ends_with(".tar.gz") || p.ends_with(".tgz"))) {
          files.push_back(p);
        }
      }
      if (ec) return Status::Unavailable(fmt::format("cannot list {}: {}", arg, ec.message()));
      continue;
    }
    SLUICE_RETURN_IF_ERROR(AppendMatches(arg, /*keep_unmatched=*/false, &files));
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  if (files.empty()) return Status::NotFound("no input files match");
  if (files.size() > kMaxShards) {
    return Status::InvalidArgument(fmt::format("{} inputs: at most {}", files.size(), kMaxShards));
  }
  return files;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  return out;
}

Status TarToTFRecord(const std::string& in, const std::string& out, bool index, Totals* t) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<TarReader> reader, TarReader::Open(in));
  SLUICE_ASSIGN_OR_RETURN(TFRecordWriter writer, TFRecordWriter::Open(out));
  ExampleBuilder b;
  while (!Interrupted()) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Record> rec, reader->Next());
    if (!rec) {
      SLUICE_RETURN_IF_ERROR(writer.Close());
      t->bytes_in += reader->position();
      if (index) {
        SLUICE_ASSIGN_OR_RETURN(RecordIndex idx, RecordIndex::Build(out));
        SLUICE_RETURN_IF_ERROR(idx.Save(RecordIndex::PathFor(out)));
      }
      return Status::OK();
    }
    b.Clear();
    bool keyed = false;
    SLUICE_RETURN_IF_ERROR(
        ForEachTarMember(rec->data, rec->offset, in, 1 << 20, [&](const TarMember& m) {
          if (!keyed) b.AddBytes("__key__", m.key);
          keyed = true;
          b.AddBytes(Lower(m.extension), m.data);
          return Status::OK();
        }));
    const std::string example = b.Serialize();
    SLUICE_RETURN_IF_ERROR(writer.Write(example));
    t->bytes_out += example.size() + 16;
    ++t->records;
  }
  return Status::Cancelled("interrupted");
}

Status TFRecordToTar(const std::string& in, const std::string& out, Totals* t) {
  SLUICE_ASSIGN_OR_RETURN(TFRecordReader reader, TFRecordReader::Open(in));
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<TarWriter> writer, TarWriter::Create(out));
  proto::Example ex;
  while (!Interrupted()) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Record> rec, reader.Next());
    if (!rec) {
      SLUICE_RETURN_IF_ERROR(writer->Close());
      t->bytes_out += writer->bytes_written();
      return Status::OK();
    }
    t->bytes_in += rec->data.size() + 16;
    const std::string where = fmt::format("{}: record {}", in, rec->number);
    if (!ex.ParseFromArray(rec->data.data(), static_cast<int>(rec->data.size()))) {
      return Status::DataLoss(where + ": not a tf.train.Example");
    }
    const auto& features = ex.features().feature();
    std::string key = fmt::format("{:08d}", rec->number);
    if (auto k = features.find("__key__"); k != features.end()) {
      if (k->second.bytes_list().value_size() != 1) {
        return Status::InvalidArgument(where + ": __key__ must be one bytes value");
      }
      key = k->second.bytes_list().value(0);
    }
    if (key.empty() || key.find('.', key.rfind('/') + 1) != std::string::npos) {
      return Status::InvalidArgument(fmt::format(
          "{}: key \"{}\" cannot name tar members (empty, or a dot in its base name)", where, key));
    }
    // Members in the feature names' order (the map's is unspecified).
    std::vector<std::string> names;
    for (const auto& [name, f] : features) {
      if (name == "__key__") continue;
      if (f.kind_case() != proto::Feature::kBytesList || f.bytes_list().value_size() != 1) {
        return Status::InvalidArgument(
            fmt::format("{}: feature \"{}\" is not one bytes value; WebDataset members are bytes",
                        where, name));
      }
      names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
      SLUICE_RETURN_IF_ERROR(
          writer->Add(key + "." + name, features.at(name).bytes_list().value(0)));
    }
    ++t->records;
  }
  return Status::Cancelled("interrupted");
}

int Run(const Options& o, bool from_tar) {
  Result<std::vector<std::string>> inputs = ListInputs(o.inputs, from_tar);
  if (!inputs.ok()) {
    fmt::print(stderr, "sluice convert: {}\n", inputs.status().ToString());
    return 1;
  }
  if (Status s = PrepareOutputPrefix(o.out); !s.ok()) {
    fmt::print(stderr, "sluice convert: {}\n", s.ToString());
    return 1;
  }
  const size_t n = inputs->size();
  Totals t;
  for (size_t i = 0; i < n; ++i) {
    const std::string& in = (*inputs)[i];
    std::string out;
    Status s;
    if (from_tar) {
      out = ShardPath(o.out, i, n, Compression::kNone);
      s = TarToTFRecord(in, out, o.index, &t);
    } else {
      out = fmt::format("{}-{:05d}-of-{:05d}.tar", o.out, i, n);
      s = TFRecordToTar(in, out, &t);
    }
    if (!s.ok()) {
      fmt::print(stderr, "sluice convert: {} -> {}: {}\n{} of {} complete\n", in, out, s.ToString(),
                 i, Plural(n, "shard is", "shards are"));
      return Interrupted() ? InterruptExitCode() : 1;
    }
  }
  fmt::print("converted {} from {} into {}: {:.1f} MB in, {:.1f} MB out\n",
             Plural(t.records, "sample", "samples"), Plural(n, "file", "files"),
             Plural(n, "shard", "shards"), t.bytes_in / 1e6, t.bytes_out / 1e6);
  return 0;
}

}  // namespace

void AddConvertWebDatasetCommands(CLI::App& convert, int* exit_code) {
  auto w = std::make_shared<Options>();
  CLI::App* cmd = convert.add_subcommand(
      "webdataset",
      "Convert WebDataset tar shards (.tar, .tar.gz) into TFRecords of tf.train.Example: one "
      "bytes feature per member, named by its extension, plus __key__; one output shard per "
      "input file");
  cmd->add_option("inputs", w->inputs,
                  "A folder of shards, or file patterns (globs, shard-{000000..000127}.tar)")
      ->required();
  cmd->add_option("--out,-o", w->out, "Output prefix: PREFIX-00000-of-000NN.tfrecord ...")
      ->required();
  cmd->add_flag("--index", w->index, "Also write each shard's .idx");
  cmd->callback([w, exit_code] {
    InstallInterruptHandler();
    *exit_code = Run(*w, /*from_tar=*/true);
  });

  auto r = std::make_shared<Options>();
  CLI::App* back = convert.add_subcommand(
      "tfrecord",
      "Convert TFRecords of tf.train.Example into WebDataset tar shards: each bytes feature a "
      "member KEY.FEATURE, KEY from the __key__ feature (else the record's number)");
  back->add_option("inputs", r->inputs, "TFRecord files or patterns")->required();
  back->add_option("--to", r->to, "The output format")
      ->check(CLI::IsMember({"webdataset"}))
      ->required();
  back->add_option("--out,-o", r->out, "Output prefix: PREFIX-00000-of-000NN.tar ...")->required();
  back->callback([r, exit_code] {
    InstallInterruptHandler();
    *exit_code = Run(*r, /*from_tar=*/false);
  });
}

}  // namespace sluice::tools
