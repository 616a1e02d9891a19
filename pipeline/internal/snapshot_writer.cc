#include "sluice/pipeline/internal/snapshot_writer.h"

#include <filesystem>
#include <set>
#include <vector>

#include "sluice/core/element_codec.h"
#include "sluice/core/file.h"

namespace sluice::pipeline_internal {

namespace fs = std::filesystem;

void RemoveAbandonedSnapshotTemporaries(const std::string& dir) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() > 1 && name[0] == '.' && name.find(".tmp-") != std::string::npos) {
      (void)RemoveIfAbandoned(it->path().string());
    }
  }
}

SnapshotWriter::SnapshotWriter(std::string dir, SnapshotWriterOptions options)
    : dir_(std::move(dir)), options_(std::move(options)) {}

SnapshotWriter::~SnapshotWriter() = default;  // unclosed TFRecordWriters remove their files

std::string SnapshotWriter::Where() const { return options_.stage + ": writing " + dir_; }

Result<std::unique_ptr<SnapshotWriter>> SnapshotWriter::Open(std::string dir,
                                                             SnapshotWriterOptions options) {
  if (!options.shard_func && options.num_shards < 1) {
    return Status::InvalidArgument(options.stage + ": num_shards must be at least 1, got " +
                                   std::to_string(options.num_shards));
  }
  if (options.compression == Compression::kAuto) options.compression = Compression::kNone;
  std::unique_ptr<SnapshotWriter> w(new SnapshotWriter(std::move(dir), std::move(options)));
  std::error_code ec;
  fs::create_directories(w->dir_, ec);
  if (ec) {
    return Status::FailedPrecondition(w->options_.stage + ": cannot make the folder " + w->dir_ +
                                      ": " + ec.message());
  }
  const std::string meta = w->dir_ + "/" + std::string(kSnapshotMetadataFile);
  fs::remove(meta, ec);
  if (ec) {
    return Status::FailedPrecondition(w->options_.stage + ": cannot remove " + meta + ": " +
                                      ec.message());
  }
  RemoveAbandonedSnapshotTemporaries(w->dir_);
  SnapshotMetadata m;
  m.complete = false;
  m.fingerprint = w->options_.fingerprint;
  m.compression = w->options_.compression;
  m.element_spec = w->options_.element_spec;
  Status s = WriteSnapshotMetadata(w->dir_, m);
  if (!s.ok()) return s.WithContext(w->Where());
  return w;
}

Status SnapshotWriter::Write(const Element& e) {
  int64_t id = count_ % std::max<int64_t>(options_.num_shards, 1);
  if (options_.shard_func) {
    Result<int64_t> r = options_.shard_func(e);
    if (!r.ok()) {
      return r.status().WithContext(options_.stage + ": shard_func failed on element " +
                                    std::to_string(count_));
    }
    id = *r;
    if (id < 0) {
      return Status::InvalidArgument(options_.stage + ": shard_func returned " +
                                     std::to_string(id) + " for element " + std::to_string(count_) +
                                     "; shard numbers must be >= 0");
    }
  }
  auto it = shards_.find(id);
  if (it == shards_.end()) {
    if (static_cast<int64_t>(shards_.size()) >= kMaxSnapshotShards) {
      return Status::InvalidArgument(options_.stage + ": shard_func made more than " +
                                     std::to_string(kMaxSnapshotShards) + " distinct shards");
    }
    TFRecordWriterOptions wo;
    wo.compression = options_.compression;
    wo.buffer_size = 64 << 10;
    Result<TFRecordWriter> w = TFRecordWriter::Open(dir_ + "/" + SnapshotShardFileName(id), wo);
    if (!w.ok()) return w.status().WithContext(Where());
    it = shards_
             .emplace(id, std::make_pair(std::make_unique<TFRecordWriter>(std::move(w).value()),
                                         int64_t{0}))
             .first;
  }
  if (!options_.element_spec.known()) {
    if (!learnt_) {
      learnt_ = ElementSpec::Of(e);
    } else {
      Result<ElementSpec> merged = learnt_->MostSpecificCompatible(ElementSpec::Of(e));
      if (!merged.ok()) {
        return Status::InvalidArgument(options_.stage + ": element " + std::to_string(count_) +
                                       " does not match the ones before it (" +
                                       std::string(merged.status().message()) + ")");
      }
      learnt_ = std::move(merged).value();
    }
  }
  encoded_.clear();
  SLUICE_RETURN_IF_ERROR(EncodeElement(e, &encoded_));
  Status s = it->second.first->Write(encoded_);
  if (!s.ok()) return s.WithContext(Where());
  ++it->second.second;
  ++count_;
  return Status::OK();
}

Status SnapshotWriter::Finish() {
  if (finished_) return Status::FailedPrecondition(options_.stage + ": finished twice");
  finished_ = true;
  SnapshotMetadata m;
  m.complete = true;
  m.fingerprint = options_.fingerprint;
  m.compression = options_.compression;
  m.num_elements = count_;
  m.element_spec = options_.element_spec.known() ? options_.element_spec
                                                 : learnt_.value_or(ElementSpec::Unknown());
  std::set<std::string> files;
  for (auto& [id, shard] : shards_) {
    Status s = shard.first->Close();
    if (!s.ok()) return s.WithContext(Where());
    m.shards.push_back({id, SnapshotShardFileName(id), shard.second});
    files.insert(SnapshotShardFileName(id));
  }
  shards_.clear();
  // Shard files of an earlier save into this folder that this one lacks.
  std::vector<fs::path> stale;
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.starts_with(kSnapshotShardPrefix) && name.ends_with(kSnapshotShardSuffix) &&
        !files.contains(name)) {
      stale.push_back(it->path());
    }
  }
  for (const fs::path& p : stale) fs::remove(p, ec);
  // Component names must survive JSON (UTF-8): check the text reads back.
  Result<SnapshotMetadata> back = ParseSnapshotMetadata(EncodeSnapshotMetadata(m), dir_);
  if (!back.ok() || !(back->element_spec == m.element_spec)) {
    return Status::InvalidArgument(options_.stage +
                                   ": component names must be UTF-8 text to be saved (" +
                                   m.element_spec.DebugString() + ")");
  }
  Status s = WriteSnapshotMetadata(dir_, m);
  if (!s.ok()) return s.WithContext(Where());
  return Status::OK();
}

}  // namespace sluice::pipeline_internal
