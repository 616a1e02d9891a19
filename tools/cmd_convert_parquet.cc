// `sluice convert parquet FILES --out PREFIX`: the rows of Parquet files as
// TFRecords of tf.train.Example, one feature per component of
// ParquetDataset's rows (docs/parquet.md): integers and booleans as
// int64_list, floats as float_list (float64 rounded to float32, as
// tf.train.Example holds them), strings and binary as bytes_list; a
// fixed-size or variable list gives all its values, a struct's children
// their dotted names. A null is an error naming the file, row group,
// column and row unless --fill-nulls.
//
// One output shard per input file, in the inputs' sorted order
// (PREFIX-00000-of-000NN.tfrecord), each published atomically when complete
// (TFRecordWriter writes a temporary name and renames it), so an
// interrupted run leaves whole shards or none.

#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "commands.h"
#include "convert_command.h"
#include "convert_shards.h"
#include "interrupt.h"
#include "plural.h"
#include "sluice/core/file_pattern.h"
#include "sluice/core/float16.h"
#include "sluice/records/example_builder.h"
#include "sluice/records/parquet_file.h"
#include "sluice/records/record_index.h"
#include "sluice/records/tfrecord_writer.h"

namespace sluice::tools {
namespace {

struct Options {
  std::vector<std::string> inputs;
  std::string out;
  std::vector<std::string> columns;
  bool fill_nulls = false;
  bool index = false;
};

Result<std::vector<std::string>> ListInputs(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  for (const std::string& arg : args) {
    SLUICE_RETURN_IF_ERROR(AppendMatches(arg, /*keep_unmatched=*/true, &files));
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  if (files.empty()) return Status::NotFound("no input files match");
  if (files.size() > kMaxShards) {
    return Status::InvalidArgument(fmt::format("{} inputs: at most {}", files.size(), kMaxShards));
  }
  return files;
}

// Adds component `name` (any dtype, any shape) as one feature.
void AddFeature(ExampleBuilder& b, const std::string& name, const Tensor& t,
                std::vector<int64_t>& ints, std::vector<float>& floats) {
  const int64_t n = t.num_elements();
  ints.clear();
  floats.clear();
  const void* p = t.raw_data();
  switch (t.dtype()) {
    case DType::kString: b.AddBytesList(name, t.flat<std::string_view>()); return;
    case DType::kBool:
    case DType::kUInt8:
      for (int64_t i = 0; i < n; ++i) ints.push_back(static_cast<const uint8_t*>(p)[i]);
      break;
    case DType::kInt32:
      for (int64_t i = 0; i < n; ++i) ints.push_back(static_cast<const int32_t*>(p)[i]);
      break;
    case DType::kInt64:
      ints.assign(static_cast<const int64_t*>(p), static_cast<const int64_t*>(p) + n);
      break;
    case DType::kFloat16:
      for (int64_t i = 0; i < n; ++i) {
        floats.push_back(float16::ToFloat(static_cast<const uint16_t*>(p)[i]));
      }
      break;
    case DType::kBFloat16:
      for (int64_t i = 0; i < n; ++i) {
        floats.push_back(
            static_cast<float>(bfloat16::FromBits(static_cast<const uint16_t*>(p)[i])));
      }
      break;
    case DType::kFloat32:
      floats.assign(static_cast<const float*>(p), static_cast<const float*>(p) + n);
      break;
    case DType::kFloat64:
      for (int64_t i = 0; i < n; ++i) {
        floats.push_back(static_cast<float>(static_cast<const double*>(p)[i]));
      }
      break;
  }
  if (IsFloatDType(t.dtype())) {
    b.AddFloatList(name, floats);
  } else {
    b.AddInt64List(name, ints);
  }
}

struct Totals {
  uint64_t rows = 0, bytes_out = 0;
};

Status Convert(const Options& o, const std::string& in, const std::string& out, Totals* t) {
  SLUICE_ASSIGN_OR_RETURN(
      std::shared_ptr<const ParquetFile> file,
      ParquetFile::Open(in, {.columns = o.columns, .fill_nulls = o.fill_nulls}));
  SLUICE_ASSIGN_OR_RETURN(TFRecordWriter writer, TFRecordWriter::Open(out));
  ExampleBuilder b;
  std::string example;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  uint64_t i = 0;
  while (i < file->num_records()) {
    if (Interrupted()) return Status::Cancelled("interrupted");
    SLUICE_ASSIGN_OR_RETURN(std::vector<Record> run, file->ReadRun(i, size_t{4} << 20));
    for (const Record& rec : run) {
      SLUICE_ASSIGN_OR_RETURN(Element e, ParquetRecordToElement(rec));
      b.Clear();
      for (size_t k = 0; k < e.size(); ++k) AddFeature(b, e.names()[k], e[k], ints, floats);
      b.SerializeTo(&example);
      SLUICE_RETURN_IF_ERROR(writer.Write(example));
      t->bytes_out += example.size() + 16;
      ++t->rows;
      ++i;
    }
  }
  SLUICE_RETURN_IF_ERROR(writer.Close());
  if (o.index) {
    SLUICE_ASSIGN_OR_RETURN(RecordIndex idx, RecordIndex::Build(out));
    SLUICE_RETURN_IF_ERROR(idx.Save(RecordIndex::PathFor(out)));
  }
  return Status::OK();
}

int Run(const Options& o) {
  Result<std::vector<std::string>> inputs = ListInputs(o.inputs);
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
    const std::string out = ShardPath(o.out, i, n, Compression::kNone);
    if (Status s = Convert(o, in, out, &t); !s.ok()) {
      fmt::print(stderr, "sluice convert: {} -> {}: {}\n{} of {} complete\n", in, out, s.ToString(),
                 i, Plural(n, "shard is", "shards are"));
      return Interrupted() ? InterruptExitCode() : 1;
    }
    fmt::print(stderr, "shard {}/{}: {} ({} rows so far)\n", i + 1, n, out, t.rows);
  }
  fmt::print("converted {} from {} into {}: {:.1f} MB out\n", Plural(t.rows, "row", "rows"),
             Plural(n, "file", "files"), Plural(n, "shard", "shards"), t.bytes_out / 1e6);
  return 0;
}

}  // namespace

void AddConvertParquetCommand(CLI::App& convert, int* exit_code) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = convert.add_subcommand(
      "parquet",
      "Convert Parquet files into TFRecords of tf.train.Example, one Example per row, one "
      "feature per column (structs as dotted names, lists as all their values; "
      "docs/parquet.md); one output shard per input file");
  cmd->add_option("inputs", o->inputs, "Parquet files or patterns (globs, part-{0..9}.parquet)")
      ->required();
  cmd->add_option("--out,-o", o->out, "Output prefix: PREFIX-00000-of-000NN.tfrecord ...")
      ->required();
  cmd->add_option("--columns", o->columns, "The columns converted (default: all)")->delimiter(',');
  cmd->add_flag("--fill-nulls", o->fill_nulls,
                "Write nulls as 0 / \"\" (default: a null is an error naming its row)");
  cmd->add_flag("--index", o->index, "Also write each shard's .idx");
  cmd->callback([o, exit_code] {
    InstallInterruptHandler();
    *exit_code = Run(*o);
  });
}

}  // namespace sluice::tools
