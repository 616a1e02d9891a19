// save(path) and load(path): a dataset's elements written to a folder of
// shard files plus a metadata file (snapshot_format.h), and read back.
//
// load() reads the metadata when it is called (a missing, incomplete or
// corrupt one is a Dataset carrying the error, naming the file) and makes
// one "load_shard" source per shard file; the reader_func (default: an
// interleave of the shards in order, one element from each in turn)
// combines them under a "load" stage that carries the metadata's
// cardinality. A shard source checks each record's CRC (TFRecord framing),
// decodes it (EncodeElement's format), checks it against the spec, and
// checks the count the metadata gives: a shard cut short, on a record
// boundary or inside one, is DataLoss naming the file and the offset.
//
// Save/restore: a shard source saves how many records it has read and is
// restored by reading that many again (no index is written).
#include <filesystem>

#include "sluice/core/element_codec.h"
#include "sluice/core/filesystem.h"
#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/fingerprint.h"
#include "sluice/pipeline/internal/snapshot_writer.h"
#include "sluice/pipeline/internal/stages.h"
#include "sluice/pipeline/internal/state.h"
#include "sluice/records/tfrecord_reader.h"

namespace sluice::pipeline_internal {
namespace {

class ShardNode : public DatasetNode {
 public:
  ShardNode(std::string file, int64_t count, Compression compression, ElementSpec spec)
      : DatasetNode("load_shard", "", {}, std::move(spec), count),
        file_(std::move(file)),
        compression_(compression) {}
  std::string Describe() const override { return "load_shard(" + file_ + ")"; }
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams& params) const override;
  const std::string& file() const { return file_; }
  Compression compression() const { return compression_; }

 private:
  std::string file_;
  Compression compression_;
};

class ShardIterator : public IteratorNode {
 public:
  ShardIterator(IteratorContext& ctx, const ShardNode& node)
      : IteratorNode(&ctx, ctx.CountersFor(&node)), node_(node) {}

  Status Save(StateWriter& w) override {
    w.Tag("load_shard");
    w.I64(read_);
    return Status::OK();
  }
  Status Restore(StateReader& r) override {
    SLUICE_RETURN_IF_ERROR(r.Tag("load_shard"));
    SLUICE_ASSIGN_OR_RETURN(int64_t n, r.I64());
    if (n < 0 || n > node_.cardinality()) {
      return Status::DataLoss("iterator state: load position " + std::to_string(n) + " outside " +
                              node_.file() + "'s " + std::to_string(node_.cardinality()) +
                              " elements");
    }
    reader_.reset();
    read_ = 0;
    end_offset_ = 0;
    while (read_ < n) {
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, GetNext());
      if (!e) return Status::DataLoss("load: " + node_.file() + " ended while restoring");
    }
    return Status::OK();
  }

 protected:
  NextResult GetNext() override {
    if (!reader_) {
      TFRecordReaderOptions ro;
      ro.compression = node_.compression();
      ro.buffer_size = 256 << 10;
      Result<TFRecordReader> r = TFRecordReader::Open(node_.file(), ro);
      if (!r.ok()) return r.status().WithContext("load");
      reader_ = std::make_unique<TFRecordReader>(std::move(r).value());
    }
    Result<std::optional<Record>> rec = reader_->Next();
    if (!rec.ok()) return rec.status().WithContext("load");
    const int64_t want = node_.cardinality();
    if (!*rec) {
      if (read_ < want) {
        return Status::DataLoss("load: " + node_.file() + " is truncated: it ends at offset " +
                                std::to_string(end_offset_) + " after " + std::to_string(read_) +
                                " of the " + std::to_string(want) + " elements the metadata lists");
      }
      return std::optional<Element>();
    }
    const Record& r = **rec;
    // Built only for messages: a string per record costs more than decoding.
    auto what = [&] {
      return node_.file() + " record " + std::to_string(r.number) + " at offset " +
             std::to_string(r.offset);
    };
    if (read_ >= want) {
      return Status::DataLoss("load: " + what() + ": more elements than the " +
                              std::to_string(want) + " the metadata lists");
    }
    std::string_view data = r.data;
    Result<Element> e = DecodeElement(&data, node_.file());
    if (!e.ok()) {
      data = r.data;
      return DecodeElement(&data, what()).status().WithContext("load");
    }
    if (!data.empty()) {
      return Status::DataLoss("load: " + what() + ": " + std::to_string(data.size()) +
                              " bytes after the element");
    }
    if (node_.spec().known()) {
      Status s = node_.spec().Check(*e);
      if (!s.ok()) {
        return Status::DataLoss("load: " + what() + " does not match the saved element spec (" +
                                std::string(s.message()) + ")");
      }
    }
    end_offset_ = r.offset + 16 + r.data.size();  // header 12, data, footer 4
    ++read_;
    return std::optional<Element>(std::move(e).value());
  }

 private:
  const ShardNode& node_;
  std::unique_ptr<TFRecordReader> reader_;
  int64_t read_ = 0;
  uint64_t end_offset_ = 0;
};

Result<std::unique_ptr<IteratorNode>> ShardNode::MakeIterator(IteratorContext& ctx,
                                                              const IteratorParams&) const {
  return std::unique_ptr<IteratorNode>(std::make_unique<ShardIterator>(ctx, *this));
}

// The stage above the reader_func's dataset: names the folder and carries
// the metadata's spec and cardinality.
class LoadIterator : public IteratorNode {
 public:
  LoadIterator(IteratorContext& ctx, const DatasetNode& node, std::unique_ptr<IteratorNode> in)
      : IteratorNode(&ctx, ctx.CountersFor(&node)), input_(std::move(in)) {}
  Status Save(StateWriter& w) override {
    w.Tag("load");
    return input_->Save(w);
  }
  Status Restore(StateReader& r) override {
    SLUICE_RETURN_IF_ERROR(r.Tag("load"));
    return input_->Restore(r);
  }

 protected:
  NextResult GetNext() override { return input_->Next(); }

 private:
  std::unique_ptr<IteratorNode> input_;
};

class LoadNode : public DatasetNode {
 public:
  LoadNode(const Dataset& inner, std::string dir, ElementSpec spec, int64_t cardinality)
      : DatasetNode("load", "", {inner.node()}, std::move(spec), cardinality),
        dir_(std::move(dir)) {}
  std::string Describe() const override { return "load(" + dir_ + ")"; }
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams& params) const override {
    SLUICE_ASSIGN_OR_RETURN(auto in, MakeIteratorOf(*inputs()[0], ctx, params));
    return std::unique_ptr<IteratorNode>(std::make_unique<LoadIterator>(ctx, *this, std::move(in)));
  }

 private:
  std::string dir_;
};

Result<ElementSpec> ChooseSpec(const ElementSpec& saved, const std::optional<ElementSpec>& given,
                               const std::string& meta) {
  if (!given) return saved;
  if (!saved.known() || !given->known()) return *given;
  Result<ElementSpec> both = saved.MostSpecificCompatible(*given);
  bool same_names = saved.size() == given->size();
  for (size_t i = 0; same_names && i < saved.size(); ++i) {
    same_names = saved.components()[i].name == given->components()[i].name;
  }
  if (!both.ok() || !same_names) {
    return Status::InvalidArgument("load: element_spec " + given->DebugString() +
                                   " is not compatible with the saved " + saved.DebugString() +
                                   " (" + meta + ")");
  }
  return *given;
}

}  // namespace

Result<Dataset> LoadSnapshotFolder(const std::string& dir, const SnapshotMetadata& m,
                                   const LoadOptions& options) {
  const std::string meta = dir + "/" + std::string(kSnapshotMetadataFile);
  if (options.compression != Compression::kAuto && options.compression != m.compression) {
    return Status::InvalidArgument(
        "load: compression " + std::string(CompressionName(options.compression)) + " given, but " +
        meta + " says the shards are " + std::string(CompressionName(m.compression)));
  }
  SLUICE_ASSIGN_OR_RETURN(ElementSpec spec, ChooseSpec(m.element_spec, options.element_spec, meta));
  std::vector<Dataset> shards;
  for (const SnapshotShard& s : m.shards) {
    shards.emplace_back(
        std::make_shared<ShardNode>(dir + "/" + s.file, s.num_elements, m.compression, spec));
  }
  Dataset inner = Dataset::range(0);
  int64_t cardinality = m.num_elements;
  if (options.reader_func) {
    Result<Dataset> r = options.reader_func(shards);
    if (!r.ok()) return r.status().WithContext("load: reader_func failed");
    if (!r->status().ok()) return r->status().WithContext("load: reader_func's dataset");
    inner = std::move(r).value();
    cardinality = inner.cardinality();
    if (inner.element_spec().known()) spec = inner.element_spec();
  } else if (shards.size() == 1) {
    inner = shards[0];
  } else if (!shards.empty()) {
    const int64_t n = static_cast<int64_t>(shards.size());
    inner = Dataset::range(n).interleave(
        [shards](const Element& e) -> Result<Dataset> {
          return shards[static_cast<size_t>(e[0].scalar<int64_t>())];
        },
        {.cycle_length = n, .block_length = 1});
  }
  return Dataset(std::make_shared<LoadNode>(inner, dir, std::move(spec), cardinality));
}

Dataset MakeLoad(const std::string& path, LoadOptions options) {
  if (IsRemotePath(path)) return Dataset::FromError(RemoteSnapshotError("load", path));
  Result<SnapshotMetadata> m = ReadSnapshotMetadata(path);
  const std::string meta = path + "/" + std::string(kSnapshotMetadataFile);
  if (!m.ok()) {
    if (m.status().code() == StatusCode::kNotFound) {
      return Dataset::FromError(
          Status::NotFound("load: " + meta + " does not exist: " + path +
                           " is not a saved dataset, or its save never started"));
    }
    return Dataset::FromError(m.status().WithContext("load"));
  }
  if (!m->complete) {
    return Dataset::FromError(Status::FailedPrecondition(
        "load: " + meta +
        " marks an incomplete save (its writer was interrupted or is still "
        "running); save the dataset again"));
  }
  Result<Dataset> ds = LoadSnapshotFolder(path, *m, options);
  if (!ds.ok()) return Dataset::FromError(ds.status());
  return std::move(ds).value();
}

Status RunSave(const Dataset& ds, const std::string& path, SaveOptions options) {
  if (!ds.status().ok()) return ds.status();
  if (IsRemotePath(path)) return RemoteSnapshotError("save", path);
  if (ds.cardinality() == kInfiniteCardinality) {
    return Status::InvalidArgument("save: the dataset is infinite (" + ds.DebugString() + ")");
  }
  if (options.compression == Compression::kAuto) options.compression = Compression::kNone;
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<SnapshotWriter> w,
                          SnapshotWriter::Open(path, {.compression = options.compression,
                                                      .shard_func = std::move(options.shard_func),
                                                      .num_shards = options.num_shards,
                                                      .fingerprint = GraphFingerprint(*ds.node()),
                                                      .element_spec = ds.element_spec(),
                                                      .stage = "save"}));
  SLUICE_ASSIGN_OR_RETURN(Iterator it, ds.iterator());
  while (true) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, it.next());
    if (!e) break;
    SLUICE_RETURN_IF_ERROR(w->Write(*e));
  }
  return w->Finish();
}

}  // namespace sluice::pipeline_internal

namespace sluice {

Status Dataset::save(const std::string& path, SaveOptions options) const {
  return pipeline_internal::RunSave(*this, path, std::move(options));
}

Dataset Dataset::load(const std::string& path, LoadOptions options) {
  return pipeline_internal::MakeLoad(path, std::move(options));
}

}  // namespace sluice
