// snapshot(path): tf.data's snapshot. The input graph's fingerprint
// (fingerprint.h) names a folder path/<16 hex digits>; an iterator made
// when that folder holds a complete save (snapshot_format.h) of this
// fingerprint reads it (through load's shard sources and the reader_func);
// otherwise it runs the input, passing the elements on, and writes them
// there (SnapshotWriter), publishing the snapshot when its pass reaches the
// end. Snapshots of other pipelines under the same path are left alone: a
// new folder is written beside them, and a line on stderr says so.
//
// One writer per folder: the writing iterator holds flock() on
// path/<fp>/.writer.lock (dropped by the kernel if the process dies). An
// iterator that finds it held (another iterator or process is writing)
// passes the input through without writing. An interrupted write (the
// iterator destroyed, an error, the process killed) leaves the metadata
// marked incomplete and no published shard read as complete; the next
// iterator restarts the write from the first element (no resumption).
//
// Save/restore: a reading iterator saves its reader's state; a writing or
// passing-through one saves its input's state, and is restored as a
// pass-through of its input (exact, but that pass writes nothing).
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/fingerprint.h"
#include "sluice/pipeline/internal/snapshot_format.h"
#include "sluice/pipeline/internal/snapshot_writer.h"
#include "sluice/pipeline/internal/stages.h"
#include "sluice/pipeline/internal/state.h"
#include "sluice/pipeline/internal/sub_dataset.h"

namespace sluice::pipeline_internal {
namespace {

namespace fs = std::filesystem;

// flock(LOCK_EX | LOCK_NB) on a file, released when destroyed.
class FolderLock {
 public:
  // nullptr if another holder has it.
  static Result<std::unique_ptr<FolderLock>> TryTake(const std::string& path) {
    const int fd = ::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (fd < 0) {
      return Status::FailedPrecondition("snapshot: cannot open the lock file " + path);
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd);
      return std::unique_ptr<FolderLock>();
    }
    return std::unique_ptr<FolderLock>(new FolderLock(fd));
  }
  ~FolderLock() { ::close(fd_); }

 private:
  explicit FolderLock(int fd) : fd_(fd) {}
  int fd_;
};

class SnapshotNode : public DatasetNode {
 public:
  SnapshotNode(const Dataset& input, std::string path, SnapshotOptions options)
      : DatasetNode("snapshot", options.name, {input.node()}, input.element_spec(),
                    input.cardinality()),
        path_(std::move(path)),
        options_(std::move(options)),
        fingerprint_(GraphFingerprint(*input.node())),
        dir_(path_ + "/" + FingerprintHex(fingerprint_)) {}
  std::string Describe() const override { return name() + "(" + path_ + ")"; }
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams& params) const override;

  const std::string& path() const { return path_; }
  const std::string& dir() const { return dir_; }
  uint64_t fingerprint() const { return fingerprint_; }
  const SnapshotOptions& snapshot_options() const { return options_; }

 private:
  std::string path_;
  SnapshotOptions options_;
  uint64_t fingerprint_;
  std::string dir_;
};

enum class Mode : uint64_t { kRead = 1, kWrite = 2, kPassThrough = 3 };

class SnapshotIterator : public IteratorNode {
 public:
  SnapshotIterator(IteratorContext& ctx, const SnapshotNode& node, const IteratorParams& params)
      : IteratorNode(&ctx, ctx.CountersFor(&node)), node_(node), params_(params) {}
  ~SnapshotIterator() override { Reset(); }

  Status Start() {
    Result<SnapshotMetadata> m = ReadSnapshotMetadata(node_.dir());
    if (m.ok() && m->complete) return OpenRead(*m);
    if (!m.ok() && m.status().code() != StatusCode::kNotFound) {
      return m.status().WithContext("snapshot: delete " + node_.dir() + " to write it again");
    }
    SLUICE_RETURN_IF_ERROR(MakeInput());
    std::error_code ec;
    fs::create_directories(node_.dir(), ec);
    if (ec) {
      return Status::FailedPrecondition("snapshot: cannot make the folder " + node_.dir() + ": " +
                                        ec.message());
    }
    SLUICE_ASSIGN_OR_RETURN(
        lock_, FolderLock::TryTake(node_.dir() + "/" + std::string(kSnapshotLockFile)));
    if (!lock_) {
      mode_ = Mode::kPassThrough;
      return Status::OK();
    }
    // A writer may have finished between the read above and the lock.
    m = ReadSnapshotMetadata(node_.dir());
    if (m.ok() && m->complete) {
      lock_.reset();
      input_.reset();
      return OpenRead(*m);
    }
    LogOtherSnapshots();
    const SnapshotOptions& o = node_.snapshot_options();
    SLUICE_ASSIGN_OR_RETURN(writer_,
                            SnapshotWriter::Open(node_.dir(), {.compression = o.compression,
                                                               .shard_func = o.shard_func,
                                                               .num_shards = o.num_shards,
                                                               .fingerprint = node_.fingerprint(),
                                                               .element_spec = node_.spec(),
                                                               .stage = "snapshot"}));
    mode_ = Mode::kWrite;
    return Status::OK();
  }

  Status Save(StateWriter& w) override {
    w.Tag("snapshot");
    w.U64(params_.iteration);
    w.U64(static_cast<uint64_t>(mode_));
    if (mode_ == Mode::kRead) return read_.it->Save(w);
    w.Bool(input_ != nullptr);
    return input_ ? input_->Save(w) : Status::OK();
  }

  Status Restore(StateReader& r) override {
    SLUICE_RETURN_IF_ERROR(r.Tag("snapshot"));
    SLUICE_ASSIGN_OR_RETURN(params_.iteration, r.U64());
    SLUICE_ASSIGN_OR_RETURN(uint64_t mode, r.U64());
    Reset();
    if (static_cast<Mode>(mode) == Mode::kRead) {
      Result<SnapshotMetadata> m = ReadSnapshotMetadata(node_.dir());
      if (!m.ok()) return m.status().WithContext("snapshot: restoring a read of " + node_.dir());
      if (!m->complete) {
        return Status::FailedPrecondition("snapshot: restoring a read of " + node_.dir() +
                                          ", which is being written again");
      }
      SLUICE_RETURN_IF_ERROR(OpenRead(*m));
      return read_.it->Restore(r);
    }
    if (static_cast<Mode>(mode) != Mode::kWrite && static_cast<Mode>(mode) != Mode::kPassThrough) {
      return Status::DataLoss("iterator state: unknown snapshot mode " + std::to_string(mode));
    }
    mode_ = Mode::kPassThrough;
    SLUICE_ASSIGN_OR_RETURN(bool has_input, r.Bool());
    if (!has_input) return Status::OK();
    SLUICE_RETURN_IF_ERROR(MakeInput());
    return input_->Restore(r);
  }

 protected:
  NextResult GetNext() override {
    if (mode_ == Mode::kRead) return read_.it->Next();
    if (!input_) return std::optional<Element>();
    NextResult e = input_->Next();
    if (!e.ok()) {
      Abandon();
      return e;
    }
    if (!e->has_value()) {
      input_.reset();
      if (writer_) {
        std::unique_ptr<SnapshotWriter> w = std::move(writer_);
        Status s = w->Finish();
        lock_.reset();
        if (!s.ok()) return s;
      }
      return std::optional<Element>();
    }
    if (writer_) {
      Status s = writer_->Write(**e);
      if (!s.ok()) {
        Abandon();
        return s;
      }
    }
    return e;
  }

 private:
  Status MakeInput() {
    SLUICE_ASSIGN_OR_RETURN(input_, MakeIteratorOf(*node_.inputs()[0], *ctx(), params_));
    return Status::OK();
  }

  Status OpenRead(const SnapshotMetadata& m) {
    if (m.fingerprint != node_.fingerprint()) {
      return Status::FailedPrecondition(
          "snapshot: " + node_.dir() + "/" + std::string(kSnapshotMetadataFile) +
          " was written by a pipeline with fingerprint " + FingerprintHex(m.fingerprint) +
          ", not this one's " + FingerprintHex(node_.fingerprint()) +
          " (a folder copied or renamed?); delete it to write it again");
    }
    LoadOptions lo;
    lo.reader_func = node_.snapshot_options().reader_func;
    SLUICE_ASSIGN_OR_RETURN(Dataset ds, LoadSnapshotFolder(node_.dir(), m, lo));
    ctx()->RegisterTree(*ds.node(), ctx()->KeyOf(&node_));
    SubDataset held(std::move(ds), ctx());
    SLUICE_ASSIGN_OR_RETURN(auto it, MakeIteratorOf(*held.dataset().node(), *ctx(), params_));
    read_ = SubIterator{std::move(held), std::move(it)};
    mode_ = Mode::kRead;
    return Status::OK();
  }

  // Says on stderr when this path holds snapshots of other pipelines, once
  // per new folder written.
  void LogOtherSnapshots() {
    std::error_code ec;
    std::vector<std::string> others;
    for (fs::directory_iterator it(node_.path(), ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (name != FingerprintHex(node_.fingerprint()) && name.size() == 16 &&
          fs::exists(it->path() / std::string(kSnapshotMetadataFile))) {
        others.push_back(name);
      }
    }
    if (others.empty()) return;
    std::string list;
    for (const auto& o : others) list += (list.empty() ? "" : ", ") + o;
    std::fprintf(stderr,
                 "sluice: snapshot: %s holds snapshots of other pipelines (%s); this pipeline "
                 "(fingerprint %s) writes a new one beside them\n",
                 node_.path().c_str(), list.c_str(), FingerprintHex(node_.fingerprint()).c_str());
  }

  void Abandon() {
    writer_.reset();  // removes its temporary files; the metadata stays incomplete
    lock_.reset();
  }
  void Reset() {
    Abandon();
    input_.reset();
    read_.it.reset();
    read_.dataset = SubDataset(Dataset::range(0), nullptr);
  }

  const SnapshotNode& node_;
  IteratorParams params_;
  Mode mode_ = Mode::kPassThrough;
  std::unique_ptr<IteratorNode> input_;
  std::unique_ptr<SnapshotWriter> writer_;
  std::unique_ptr<FolderLock> lock_;
  SubIterator read_{SubDataset(Dataset::range(0), nullptr), nullptr};
};

Result<std::unique_ptr<IteratorNode>> SnapshotNode::MakeIterator(
    IteratorContext& ctx, const IteratorParams& params) const {
  auto it = std::make_unique<SnapshotIterator>(ctx, *this, params);
  SLUICE_RETURN_IF_ERROR(it->Start());
  return std::unique_ptr<IteratorNode>(std::move(it));
}

}  // namespace

Dataset MakeSnapshot(const Dataset& input, std::string path, SnapshotOptions options) {
  if (path.empty()) {
    return Dataset::FromError(Status::InvalidArgument("snapshot: the path is empty"));
  }
  if (!options.shard_func && options.num_shards < 1) {
    return Dataset::FromError(Status::InvalidArgument(
        "snapshot: num_shards must be at least 1, got " + std::to_string(options.num_shards)));
  }
  if (options.compression == Compression::kAuto) options.compression = Compression::kNone;
  return Dataset(std::make_shared<SnapshotNode>(input, std::move(path), std::move(options)));
}

}  // namespace sluice::pipeline_internal

namespace sluice {

Dataset Dataset::snapshot(const std::string& path, SnapshotOptions options) const {
  if (!status().ok()) return *this;
  return pipeline_internal::MakeSnapshot(*this, path, std::move(options));
}

std::string SnapshotRunPath(const Dataset& input, const std::string& path) {
  if (!input.node()) return path;
  return path + "/" +
         pipeline_internal::FingerprintHex(pipeline_internal::GraphFingerprint(*input.node()));
}

}  // namespace sluice
