#include "sluice/pipeline/iterator.h"

#include "sluice/core/file.h"
#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/node.h"
#include "sluice/pipeline/internal/reaper.h"
#include "sluice/pipeline/internal/state.h"

namespace sluice {

namespace pi = pipeline_internal;

namespace {
constexpr std::string_view kMagic = "sluice-iterator-v1";
// How long a destructor waits for cancelled tasks to leave before it hands
// the pipeline to the reaper: every task but a slow user call leaves within
// microseconds of Cancel(), and the whole destructor must take < 100 ms.
constexpr int64_t kCancelGraceNs = 20'000'000;
}  // namespace

Iterator::Iterator(std::shared_ptr<const pi::DatasetNode> dataset,
                   std::shared_ptr<pi::IteratorContext> ctx, std::unique_ptr<pi::IteratorNode> root)
    : dataset_(std::move(dataset)), ctx_(std::move(ctx)), root_(std::move(root)) {}

Iterator::Iterator(Iterator&&) noexcept = default;

Iterator& Iterator::operator=(Iterator&& other) noexcept {
  if (this != &other) {
    Shutdown();
    ctx_ = std::move(other.ctx_);
    dataset_ = std::move(other.dataset_);
    root_ = std::move(other.root_);
    started_ = other.started_;
    error_ = std::move(other.error_);
  }
  return *this;
}

Iterator::~Iterator() { Shutdown(); }

void Iterator::Shutdown() {
  if (!ctx_) return;
  ctx_->Cancel();
  if (ctx_->WaitUntilIdle(kCancelGraceNs)) {
    root_.reset();  // each stage waits for its own tasks (none is running)
    ctx_.reset();
    dataset_.reset();
    return;
  }
  // A call that does not return soon: its task still uses the stages, the
  // context and the function, so they are destroyed once it has returned,
  // on the reaper's thread, in the same order.
  struct Remains {
    std::shared_ptr<const pi::DatasetNode> dataset;
    std::shared_ptr<pi::IteratorContext> ctx;
    std::unique_ptr<pi::IteratorNode> root;
  };
  auto remains =
      std::make_shared<Remains>(Remains{std::move(dataset_), std::move(ctx_), std::move(root_)});
  pi::DestroyLater([remains] {
    remains->root.reset();
    remains->ctx.reset();
    remains->dataset.reset();
  });
}

Result<std::optional<Element>> Iterator::next() {
  if (!root_) return Status::FailedPrecondition("next() on a moved-from Iterator");
  started_ = true;
  if (!error_.ok()) return error_;
  Result<std::optional<Element>> r = root_->Next();
  if (!r.ok()) {
    error_ = r.status();  // the pipeline is finished (ignore_errors skips inside it)
  } else if (r->has_value()) {
    ctx_->OnConsumerElement();
  }
  return r;
}

Result<std::string> Iterator::save() {
  if (!root_) return Status::FailedPrecondition("save() on a moved-from Iterator");
  pi::StateWriter w;
  w.String(kMagic);
  SLUICE_RETURN_IF_ERROR(root_->Save(w));
  return w.Release();
}

Status Iterator::restore(std::string_view state) {
  if (!root_) return Status::FailedPrecondition("restore() on a moved-from Iterator");
  if (started_) {
    return Status::FailedPrecondition("restore() must be called on a fresh iterator");
  }
  pi::StateReader r(state);
  Result<std::string> magic = r.String();
  if (!magic.ok() || *magic != kMagic) {
    return Status::InvalidArgument("not a sluice iterator state (bad magic)");
  }
  SLUICE_RETURN_IF_ERROR(root_->Restore(r));
  if (!r.done()) {
    return Status::InvalidArgument("iterator state has " +
                                   std::to_string(state.size() - r.offset()) +
                                   " bytes left over: it was saved from a different pipeline");
  }
  return Status::OK();
}

IteratorStats Iterator::stats() const {
  if (!ctx_) return {};
  IteratorStats stats = ctx_->Snapshot();
  stats.remote = GetRemoteStats();
  stats.remote_cache = GetRemoteCacheStats();
  return stats;
}

Status Iterator::WriteTrace(const std::string& path) const {
  if (!ctx_) return Status::FailedPrecondition("WriteTrace() on a moved-from Iterator");
  ctx_->RecordCounters(pi::NowNs());
  SLUICE_ASSIGN_OR_RETURN(auto out, OutputFile::Create(path, {}));
  SLUICE_RETURN_IF_ERROR(out->Append(ctx_->TraceJson()));
  return out->Commit();
}

}  // namespace sluice
