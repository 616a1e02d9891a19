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
// marked incomplete and no published shard read as complete. An
// uncompressed write resumes: the next writing iterator finds
// snapshot.progress (SnapshotWriter, snapshot_format.h), cuts the partial
// shards back to it and, re-running the input for its first k elements
// without writing them, writes from element k on. A compressed write
// restarts from the first element.
//
// Save/restore: a reading iterator saves its reader's state; a passing-
// through one its input's state. A resumable writing one writes a progress
// checkpoint and saves it with its input's state; restored, it goes on
// writing from that checkpoint if the folder's progress is still that
// write's and the lock is free, and is otherwise a pass-through of its
// input (exact, but that pass writes nothing).
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>

#include "sluice/core/filesystem.h"
#include "sluice/core/os_error.h"
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
      return OsError("snapshot: cannot open the lock file " + path, errno);
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      ::close(fd);
      if (err == EWOULDBLOCK) return std::unique_ptr<FolderLock>();  // another writer
      return OsError("snapshot: cannot lock " + path, err);
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

// kResumableWrite: only in saved states (a kWrite iterator with a
// resumable writer, followed by its progress checkpoint).
enum class Mode : uint64_t { kRead = 1, kWrite = 2, kPassThrough = 3, kResumableWrite = 4 };

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
    if (Resumable()) {
      Result<SnapshotProgress> p = ReadSnapshotProgress(node_.dir());
      if (p.ok()) {
        Result<std::unique_ptr<SnapshotWriter>> w =
            SnapshotWriter::Open(node_.dir(), WriterOptions(), &*p);
        if (w.ok()) {
          writer_ = std::move(w).value();
          skip_ = p->num_elements;
          mode_ = Mode::kWrite;
          return Status::OK();
        }
        p = w.status();
      }
      if (p.status().code() != StatusCode::kNotFound) {
        std::fprintf(stderr,
                     "sluice: snapshot: not resuming the write of %s, writing it again: %s\n",
                     node_.dir().c_str(), p.status().ToString().c_str());
      }
    }
    SLUICE_ASSIGN_OR_RETURN(writer_, SnapshotWriter::Open(node_.dir(), WriterOptions()));
    mode_ = Mode::kWrite;
    return Status::OK();
  }

  Status Save(StateWriter& w) override {
    w.Tag("snapshot");
    w.U64(params_.iteration);
    if (mode_ == Mode::kWrite && writer_ && writer_->resumable()) {
      // A progress checkpoint, and where it is, for Restore to go on writing.
      SLUICE_ASSIGN_OR_RETURN(SnapshotProgress p, writer_->Checkpoint());
      w.U64(static_cast<uint64_t>(Mode::kResumableWrite));
      w.String(EncodeSnapshotProgress(p));
      w.I64(skip_);
    } else {
      w.U64(static_cast<uint64_t>(mode_));
    }
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
    if (static_cast<Mode>(mode) != Mode::kWrite && static_cast<Mode>(mode) != Mode::kPassThrough &&
        static_cast<Mode>(mode) != Mode::kResumableWrite) {
      return Status::DataLoss("iterator state: unknown snapshot mode " + std::to_string(mode));
    }
    mode_ = Mode::kPassThrough;
    std::optional<SnapshotProgress> saved;
    int64_t skip = 0;
    if (static_cast<Mode>(mode) == Mode::kResumableWrite) {
      SLUICE_ASSIGN_OR_RETURN(std::string text, r.String());
      Result<SnapshotProgress> p = ParseSnapshotProgress(text, "iterator state");
      if (!p.ok()) return p.status();
      SLUICE_ASSIGN_OR_RETURN(skip, r.I64());
      if (skip < 0 || skip > p->num_elements) {
        return Status::DataLoss("iterator state: a bad snapshot progress");
      }
      saved = std::move(p).value();
    }
    SLUICE_ASSIGN_OR_RETURN(bool has_input, r.Bool());
    if (!has_input) return Status::OK();
    SLUICE_RETURN_IF_ERROR(MakeInput());
    SLUICE_RETURN_IF_ERROR(input_->Restore(r));
    if (saved) ResumeSaved(*saved, skip);
    return Status::OK();
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
      if (writer_ && skip_ > 0) {
        // The input ended before the resumed progress point: that progress
        // is not this input's; the next write starts afresh.
        std::error_code ec;
        fs::remove(node_.dir() + "/" + std::string(kSnapshotProgressFile), ec);
        Abandon();
        return std::optional<Element>();
      }
      if (writer_) {
        std::unique_ptr<SnapshotWriter> w = std::move(writer_);
        Status s = w->Finish();
        lock_.reset();
        if (!s.ok()) return s;
      }
      return std::optional<Element>();
    }
    if (writer_ && skip_ > 0) {
      --skip_;  // written before this write resumed
    } else if (writer_) {
      Status s = writer_->Write(**e);
      if (!s.ok()) {
        Abandon();
        return s;
      }
    }
    return e;
  }

 private:
  bool Resumable() const { return node_.snapshot_options().compression == Compression::kNone; }
  SnapshotWriterOptions WriterOptions() const {
    const SnapshotOptions& o = node_.snapshot_options();
    return {.compression = o.compression,
            .shard_func = o.shard_func,
            .num_shards = o.num_shards,
            .fingerprint = node_.fingerprint(),
            .element_spec = node_.spec(),
            .stage = "snapshot",
            .resumable = Resumable(),
            .progress_every = o.progress_every};
  }

  // Restore of a state saved mid-write: goes on writing from the saved
  // progress checkpoint if the folder's progress file is still that
  // write's (same run, at least as far) and the writer lock is free;
  // otherwise stays a pass-through.
  void ResumeSaved(const SnapshotProgress& saved, int64_t skip) {
    if (!Resumable()) return;
    Result<SnapshotMetadata> m = ReadSnapshotMetadata(node_.dir());
    if (m.ok() && m->complete) return;
    Result<SnapshotProgress> p = ReadSnapshotProgress(node_.dir());
    if (!p.ok() || p->run != saved.run || p->fingerprint != saved.fingerprint ||
        p->num_elements < saved.num_elements) {
      return;
    }
    Result<std::unique_ptr<FolderLock>> lock =
        FolderLock::TryTake(node_.dir() + "/" + std::string(kSnapshotLockFile));
    if (!lock.ok() || !*lock) return;
    // Checked again under the lock: another writer may have moved on.
    p = ReadSnapshotProgress(node_.dir());
    if (!p.ok() || p->run != saved.run || p->num_elements < saved.num_elements) return;
    Result<std::unique_ptr<SnapshotWriter>> w =
        SnapshotWriter::Open(node_.dir(), WriterOptions(), &saved);
    if (!w.ok()) return;
    lock_ = std::move(lock).value();
    writer_ = std::move(w).value();
    skip_ = skip;
    mode_ = Mode::kWrite;
  }

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
    // A resumable writer keeps its partial shards and progress file for the
    // next one; others remove their temporary files. The metadata stays
    // incomplete.
    writer_.reset();
    lock_.reset();
    skip_ = 0;
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
  int64_t skip_ = 0;  // input elements to pass on unwritten (a resumed write)
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
  if (IsRemotePath(path)) {
    return Dataset::FromError(pipeline_internal::RemoteSnapshotError("snapshot", path));
  }
  return pipeline_internal::MakeSnapshot(*this, path, std::move(options));
}

std::string SnapshotRunPath(const Dataset& input, const std::string& path) {
  if (!input.node()) return path;
  return path + "/" +
         pipeline_internal::FingerprintHex(pipeline_internal::GraphFingerprint(*input.node()));
}

}  // namespace sluice
