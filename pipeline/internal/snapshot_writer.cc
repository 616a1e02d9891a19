#include "sluice/pipeline/internal/snapshot_writer.h"

#include <unistd.h>

#include <filesystem>
#include <random>
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

// Unclosed atomic TFRecordWriters remove their files; resumable ones (in
// place) keep them.
SnapshotWriter::~SnapshotWriter() = default;

namespace {

bool IsPartial(const std::string& name) {
  return name.starts_with(".") && name.ends_with(kSnapshotPartialSuffix);
}

// Removes the progress file, then every partial shard (a write starting
// afresh, or one finished). Partials in `keep` stay.
void RemoveProgress(const std::string& dir, const std::set<std::string>& keep = {}) {
  std::error_code ec;
  fs::remove(dir + "/" + std::string(kSnapshotProgressFile), ec);
  std::vector<fs::path> partials;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (IsPartial(name) && !keep.contains(name)) partials.push_back(it->path());
  }
  for (const fs::path& p : partials) fs::remove(p, ec);
}

}  // namespace

std::string SnapshotWriter::Where() const { return options_.stage + ": writing " + dir_; }

Result<std::unique_ptr<SnapshotWriter>> SnapshotWriter::Open(std::string dir,
                                                             SnapshotWriterOptions options,
                                                             const SnapshotProgress* resume) {
  if (!options.shard_func && options.num_shards < 1) {
    return Status::InvalidArgument(options.stage + ": num_shards must be at least 1, got " +
                                   std::to_string(options.num_shards));
  }
  if (options.compression == Compression::kAuto) options.compression = Compression::kNone;
  if (options.compression != Compression::kNone) options.resumable = false;
  if (resume && !options.resumable) {
    return Status::InvalidArgument(options.stage + ": only an uncompressed write resumes");
  }
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
  if (resume) {
    SLUICE_RETURN_IF_ERROR(w->Resume(*resume));
  } else {
    RemoveProgress(w->dir_);
    w->run_ = (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
  }
  SnapshotMetadata m;
  m.complete = false;
  m.fingerprint = w->options_.fingerprint;
  m.compression = w->options_.compression;
  m.element_spec = w->options_.element_spec;
  Status s = WriteSnapshotMetadata(w->dir_, m);
  if (!s.ok()) return s.WithContext(w->Where());
  return w;
}

Status SnapshotWriter::Resume(const SnapshotProgress& p) {
  if (p.fingerprint != options_.fingerprint || p.sharding != sharding()) {
    return Status::FailedPrecondition(Where() + ": the progress file is another write's");
  }
  std::set<std::string> keep;
  for (const SnapshotProgressShard& sp : p.shards) {
    const std::string path = dir_ + "/" + sp.file;
    std::error_code ec;
    const uintmax_t size = fs::file_size(path, ec);
    if (ec || size < static_cast<uintmax_t>(sp.bytes)) {
      return Status::DataLoss(Where() + ": " + path + " is shorter than " +
                              std::string(kSnapshotProgressFile) + " says (" +
                              std::to_string(sp.bytes) + " bytes)");
    }
    if (::truncate(path.c_str(), static_cast<off_t>(sp.bytes)) != 0) {
      return Status::FailedPrecondition(Where() + ": cannot truncate " + path);
    }
    TFRecordWriterOptions wo;
    wo.buffer_size = 64 << 10;
    wo.atomic = false;
    wo.append = true;
    Result<TFRecordWriter> tw = TFRecordWriter::Open(path, wo);
    if (!tw.ok()) return tw.status().WithContext(Where());
    shards_[sp.id] =
        Shard{std::make_unique<TFRecordWriter>(std::move(tw).value()), sp.num_elements, sp.bytes};
    keep.insert(sp.file);
  }
  // Shards begun after that progress point, and the old progress file.
  RemoveProgress(dir_, keep);
  count_ = last_checkpoint_ = p.num_elements;
  run_ = p.run;
  if (!options_.element_spec.known() && p.element_spec.known()) learnt_ = p.element_spec;
  // The progress file again, now that the shards are cut back to it.
  Status s = WriteSnapshotProgress(dir_, p);
  if (!s.ok()) return s.WithContext(Where());
  return Status::OK();
}

Result<SnapshotProgress> SnapshotWriter::Checkpoint() {
  if (!options_.resumable) {
    return Status::FailedPrecondition(Where() + ": not a resumable write");
  }
  SnapshotProgress p;
  p.fingerprint = options_.fingerprint;
  p.run = run_;
  p.sharding = sharding();
  p.num_elements = count_;
  p.element_spec = options_.element_spec.known() ? options_.element_spec
                                                 : learnt_.value_or(ElementSpec::Unknown());
  for (auto& [id, shard] : shards_) {
    Status s = shard.writer->Flush();
    if (!s.ok()) return s.WithContext(Where());
    p.shards.push_back({id, SnapshotPartialFileName(id),
                        shard.base_bytes + static_cast<int64_t>(shard.writer->file_bytes()),
                        shard.records});
  }
  Status s = WriteSnapshotProgress(dir_, p);
  if (!s.ok()) return s.WithContext(Where());
  last_checkpoint_ = count_;
  bytes_since_checkpoint_ = 0;
  return p;
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
    wo.atomic = !options_.resumable;
    Result<TFRecordWriter> w = TFRecordWriter::Open(
        dir_ + "/" + (options_.resumable ? SnapshotPartialFileName(id) : SnapshotShardFileName(id)),
        wo);
    if (!w.ok()) return w.status().WithContext(Where());
    it = shards_.emplace(id, Shard{std::make_unique<TFRecordWriter>(std::move(w).value()), 0, 0})
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
  Status s = it->second.writer->Write(encoded_);
  if (!s.ok()) return s.WithContext(Where());
  ++it->second.records;
  ++count_;
  bytes_since_checkpoint_ += static_cast<int64_t>(encoded_.size()) + 16;
  if (options_.resumable &&
      (count_ - last_checkpoint_ >= std::max<int64_t>(options_.progress_every, 1) ||
       bytes_since_checkpoint_ >= options_.progress_bytes)) {
    Result<SnapshotProgress> p = Checkpoint();
    if (!p.ok()) return p.status();
  }
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
    Status s = shard.writer->Close();
    if (!s.ok()) return s.WithContext(Where());
    if (options_.resumable) {
      std::error_code ec;
      fs::rename(dir_ + "/" + SnapshotPartialFileName(id), dir_ + "/" + SnapshotShardFileName(id),
                 ec);
      if (ec) {
        return Status::FailedPrecondition(Where() + ": cannot publish shard " + std::to_string(id) +
                                          ": " + ec.message());
      }
    }
    m.shards.push_back({id, SnapshotShardFileName(id), shard.records});
    files.insert(SnapshotShardFileName(id));
  }
  shards_.clear();
  RemoveProgress(dir_);
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
