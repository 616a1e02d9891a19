// The object-store file systems on Apache Arrow C++ (a build with
// SLUICE_HAVE_ARROW): s3:// on S3FileSystem, gs:// gcs:// on GcsFileSystem,
// az:// abfs:// abfss:// on AzureFileSystem, each wrapped as a sluice
// FileSystem (core/filesystem.h), made on first use and shared per scheme
// and endpoint. The read path (RemoteFile) is ours: ranged reads of
// RemoteOptions::request_bytes, several in flight ahead of a sequential
// reader, a bound on requests in flight per host, retries with backoff that
// first check the object is the one opened, and a deadline on every wait.
// What Arrow's S3 client does underneath is in docs/objstore.md.
#include <arrow/buffer.h>
#include <arrow/filesystem/azurefs.h>
#include <arrow/filesystem/filesystem.h>
#include <arrow/filesystem/gcsfs.h>
#include <arrow/filesystem/s3fs.h>
#include <arrow/io/interfaces.h>
#include <arrow/util/future.h>
#include <arrow/util/iterator.h>
#include <arrow/util/key_value_metadata.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "sluice/core/internal/remote_counters.h"
#include "sluice/core/internal/remote_filesystems.h"
#include "sluice/core/remote.h"

namespace sluice::internal {
namespace {

using Clock = std::chrono::steady_clock;

// ------------------------------------------------------------ S3 lifetime

// Arrow's S3 needs InitializeS3 once and FinalizeS3 before the process
// exits (the AWS SDK's globals must go before libc tears down). Our atexit
// handler drops our shared file systems and then finalizes. It is
// registered after the first S3FileSystem is made (RegisterS3Finalizer):
// handlers and static destructors run in the reverse order of their
// registration, and libarrow_s3 makes the static that FinalizeS3 uses (its
// client finalizer) lazily, with the first client; registered before it,
// our handler would run after that static is destroyed (a crash at exit,
// seen). It runs after Python's own exit handlers (the interpreter is
// finalized by then), and EnsureS3Finalized is a no-op if pyarrow (sharing
// this libarrow) already finalized.
std::once_flag s3_once;
std::once_flag s3_atexit_once;
arrow::Status s3_init_status;

void FinalizeAtExit();

Status EnsureS3(const std::string& uri) {
  std::call_once(s3_once, [] {
    if (!arrow::fs::IsS3Initialized() && !arrow::fs::IsS3Finalized()) {
      arrow::fs::S3GlobalOptions g = arrow::fs::S3GlobalOptions::Defaults();
      // A peer that resets a connection must not kill the process.
      g.install_sigpipe_handler = true;
      s3_init_status = arrow::fs::InitializeS3(g);
    } else if (arrow::fs::IsS3Finalized()) {
      s3_init_status = arrow::Status::Invalid("Arrow's S3 was already finalized");
    }
  });
  if (!s3_init_status.ok()) {
    return Status::FailedPrecondition(uri +
                                      ": cannot start the S3 client: " + s3_init_status.ToString());
  }
  return Status::OK();
}

// ------------------------------------------------------------ errors

bool Contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

// S3 answers 503 (SlowDown, or Service Unavailable) only to ask clients to
// slow down; 429 is the same from other stores. An answer whose body was
// not read shows only as the SDK's SERVICE_UNAVAILABLE.
bool IsThrottling(std::string_view text) {
  return Contains(text, "SlowDown") || Contains(text, "SERVICE_UNAVAILABLE") ||
         Contains(text, "ServiceUnavailable") || Contains(text, "SLOW_DOWN") ||
         Contains(text, "Throttl") || Contains(text, "THROTTL") ||
         Contains(text, "TooManyRequests") || Contains(text, "REQUEST_LIMIT_EXCEEDED") ||
         Contains(text, "RequestLimitExceeded") || Contains(text, "HTTP 503") ||
         Contains(text, "HTTP 429") || Contains(text, "response code 503") ||
         Contains(text, "response code 429");
}

bool IsTransient(std::string_view text) {
  return IsThrottling(text) || Contains(text, "NETWORK_CONNECTION") || Contains(text, "curlCode") ||
         Contains(text, "INTERNAL_FAILURE") || Contains(text, "SERVICE_UNAVAILABLE") ||
         Contains(text, "InternalError") || Contains(text, "RequestTimeout") ||
         Contains(text, "Connection reset") || Contains(text, "HTTP 500") ||
         Contains(text, "HTTP 502") || Contains(text, "HTTP 504") ||
         Contains(text, "response code 500");
}

// An Arrow error as a sluice Status: `what` ("reading 8388608 bytes at
// offset 0 of") and the URI, then what the store said, with a code that
// says what kind of failure it was.
Status FromArrow(const arrow::Status& st, std::string_view what, const std::string& uri,
                 int retries = -1) {
  const std::string said = st.message();
  std::string head = std::string(what) + (what.empty() ? "" : " ") + uri + ": ";
  const std::string tail = " (the store said: " + said + ")";
  if (Contains(said, "NO_SUCH_BUCKET") || Contains(said, "NoSuchBucket") ||
      Contains(said, "bucket does not exist") || Contains(said, "Bucket does not exist")) {
    return Status::NotFound(head + "no such bucket" + tail);
  }
  if (Contains(said, "NO_SUCH_KEY") || Contains(said, "NoSuchKey") ||
      Contains(said, "Path does not exist") || Contains(said, "RESOURCE_NOT_FOUND") ||
      Contains(said, "does not exist") || Contains(said, "HTTP 404") ||
      Contains(said, "NOT_FOUND")) {
    return Status::NotFound(head + "no such object" + tail);
  }
  if (Contains(said, "InvalidAccessKeyId") || Contains(said, "SignatureDoesNotMatch") ||
      Contains(said, "INVALID_ACCESS_KEY_ID") || Contains(said, "SIGNATURE_DOES_NOT_MATCH") ||
      Contains(said, "ACCESS_DENIED") || Contains(said, "AccessDenied") ||
      Contains(said, "HTTP 403") || Contains(said, "Forbidden") ||
      Contains(said, "PERMISSION_DENIED")) {
    return Status::FailedPrecondition(
        head + "permission denied (check the credentials: access key, secret, token)" + tail);
  }
  if (Contains(said, "MISSING_AUTHENTICATION_TOKEN") || Contains(said, "No credentials") ||
      Contains(said, "no credentials") || Contains(said, "credentials")) {
    return Status::FailedPrecondition(head + "no usable credentials" + tail);
  }
  const std::string after = retries >= 0 ? " after " + std::to_string(retries) + " retries" : "";
  if (IsThrottling(said)) {
    return Status::Unavailable(head + "the store is throttling requests (slow down)" + after +
                               tail);
  }
  if (Contains(said, "curlCode: 7") || Contains(said, "Couldn't connect") ||
      Contains(said, "Connection refused")) {
    return Status::Unavailable(head + "connection refused" + after + tail);
  }
  if (Contains(said, "curlCode: 28") || Contains(said, "Timeout was reached") ||
      Contains(said, "timed out")) {
    return Status::Unavailable(head + "the store did not answer in time" + after + tail);
  }
  if (st.IsInvalid()) return Status::InvalidArgument(head + said);
  if (st.IsNotImplemented()) return Status::FailedPrecondition(head + said);
  if (st.IsOutOfMemory()) return Status::ResourceExhausted(head + said);
  return Status::Unavailable(head + "the store failed" + after + tail);
}

// Full jitter: uniform in [0, min(max, base * 2^attempt)].
double BackoffSeconds(const RemoteOptions& o, int64_t attempt) {
  const double cap = std::min(o.retry_max_delay_s,
                              o.retry_base_delay_s * std::pow(2.0, std::min<int64_t>(attempt, 30)));
  thread_local std::mt19937_64 rng(std::random_device{}());
  return std::uniform_real_distribution<double>(0.0, cap)(rng);
}

// The AWS SDK's retries, counted, with our backoff and limit. Used by the
// S3 client for listing, stat, delete and writes; reads have a client with
// none (their retries are ours, below).
class CountingRetryStrategy final : public arrow::fs::S3RetryStrategy {
 public:
  CountingRetryStrategy(RemoteOptions options, int max_retries)
      : options_(options), max_retries_(max_retries) {}
  bool ShouldRetry(const AWSErrorDetail& error, int64_t attempted) override {
    if (attempted >= max_retries_) return false;
    const std::string text = error.exception_name + " " + error.message;
    if (!error.should_retry && !IsThrottling(text)) return false;
    Bump(TheRemoteCounters().retries);
    if (IsThrottling(text)) Bump(TheRemoteCounters().throttled);
    return true;
  }
  int64_t CalculateDelayBeforeNextRetry(const AWSErrorDetail&, int64_t attempted) override {
    return static_cast<int64_t>(BackoffSeconds(options_, attempted) * 1000.0);
  }

 private:
  RemoteOptions options_;
  int max_retries_;
};

// ------------------------------------------------------------ per host

// Requests in flight to one host: a counting semaphore.
class HostLimiter {
 public:
  explicit HostLimiter(int slots) : free_(slots) {}
  bool TryAcquire() {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_ == 0) return false;
    --free_;
    return true;
  }
  bool AcquireUntil(Clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_until(lock, deadline, [&] { return free_ > 0; })) return false;
    --free_;
    return true;
  }
  void Release() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++free_;
    }
    cv_.notify_one();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int free_;
};

// How a sluice URI maps onto the Arrow file system's paths ("bucket/key").
struct UriMapping {
  std::string scheme;  // as written in URIs we give back ("s3", "abfss")
  std::string query;   // "?endpoint_override=..." kept on URIs we give back
  std::string host;    // abfs: "@account.dfs.core.windows.net" after the container
};

// The seconds an operation may take in all: every attempt timing out, with
// the longest backoff between them.
double OperationDeadlineSeconds(const RemoteOptions& o) {
  return (o.max_retries + 1) * (o.request_timeout_s + o.connect_timeout_s + o.retry_max_delay_s);
}

// ------------------------------------------------------------ reading

struct Shared {
  std::shared_ptr<arrow::fs::FileSystem> fs;       // with the SDK's retries
  std::shared_ptr<arrow::fs::FileSystem> read_fs;  // reads: without (ours instead)
  std::shared_ptr<HostLimiter> limiter;
  RemoteOptions options;
  UriMapping mapping;
  bool ours_retry_reads = false;  // S3: read_fs does not retry; we do, checking the ETag
};

// The object's identity at open: its size and, where the store gives one,
// its ETag (S3, Azure) or generation (GCS), from the metadata of the open.
std::string Identity(const std::shared_ptr<arrow::io::RandomAccessFile>& file) {
  auto md = file->ReadMetadata();
  if (!md.ok() || *md == nullptr) return "";
  for (const char* key : {"ETag", "etag", "Etag", "generation", "VersionId"}) {
    auto v = (*md)->Get(key);
    if (v.ok()) return std::string(key) + "=" + *v;
  }
  return "";
}

inline constexpr size_t kParallelWithinRead = 8;

class RemoteFile final : public ReadableFile {
 public:
  RemoteFile(std::string uri, std::string path, std::shared_ptr<Shared> shared,
             std::shared_ptr<arrow::io::RandomAccessFile> file, uint64_t size, std::string identity)
      : uri_(std::move(uri)),
        path_(std::move(path)),
        shared_(std::move(shared)),
        file_(std::move(file)),
        size_(size),
        identity_(std::move(identity)) {}

  ~RemoteFile() override {
    // In-flight requests finish on Arrow's I/O threads holding their own
    // references; their host slots are released by their callbacks.
  }

  Result<size_t> ReadAt(uint64_t offset, void* dst, size_t n) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (offset >= size_ || n == 0) return size_t{0};
    n = static_cast<size_t>(std::min<uint64_t>(n, size_ - offset));
    char* out = static_cast<char*>(dst);
    // In order: from the start, from where the last read ended, or inside
    // what is already asked for. Anything else is a jump: what was read
    // ahead is dropped and only the asked bytes are read.
    const bool sequential = InChunks(offset) || offset == last_end_ || offset == 0;
    if (!InChunks(offset)) {
      chunks_.clear();
      next_issue_ = offset;
    }
    size_t done = 0;
    while (done < n) {
      const uint64_t pos = offset + done;
      // Keep the chunk holding `pos` and those ahead in flight.
      SLUICE_RETURN_IF_ERROR(TopUp(pos, offset + n, sequential));
      Chunk& c = chunks_.front();
      if (!(c.start <= pos && pos < c.start + c.length)) {
        return Status::Internal("remote read of " + uri_ + ": no request covers offset " +
                                std::to_string(pos));
      }
      SLUICE_RETURN_IF_ERROR(Finish(c));
      const size_t from = static_cast<size_t>(pos - c.start);
      const size_t take = std::min<size_t>(n - done, c.data->size() - from);
      std::memcpy(out + done, c.data->data() + from, take);
      done += take;
      if (from + take == static_cast<size_t>(c.data->size())) chunks_.pop_front();
    }
    last_end_ = offset + n;
    return done;
  }

  Result<uint64_t> Size() override { return size_; }
  const std::string& name() const override { return uri_; }

 private:
  struct Chunk {
    uint64_t start = 0;
    size_t length = 0;
    arrow::Future<std::shared_ptr<arrow::Buffer>> future;
    Clock::time_point issued;
    int attempts = 0;  // failed attempts so far
    std::shared_ptr<arrow::Buffer> data;
  };

  bool InChunks(uint64_t pos) const {
    return !chunks_.empty() && chunks_.front().start <= pos &&
           pos < chunks_.back().start + chunks_.back().length;
  }

  // Issues requests so that the chunk holding `pos` exists and, for a
  // sequential reader, read_ahead more are in flight (as host slots allow);
  // a jump reads only up to `want_end`.
  Status TopUp(uint64_t pos, uint64_t want_end, bool sequential) {
    while (!chunks_.empty() && chunks_.front().start + chunks_.front().length <= pos) {
      chunks_.pop_front();
    }
    const RemoteOptions& o = shared_->options;
    const uint64_t limit = sequential ? size_ : want_end;
    const size_t depth = 1 + static_cast<size_t>(sequential ? o.read_ahead : 0);
    // A large read (ReadWholeFile) asks for its own bytes in parallel, up
    // to this many requests, read-ahead or not.
    const size_t parallel = std::max<size_t>(depth, kParallelWithinRead);
    while (next_issue_ < limit) {
      const bool needed = chunks_.empty() || (next_issue_ < want_end && chunks_.size() < parallel);
      if (!needed && next_issue_ < want_end) break;  // wait for what is in flight
      if (!needed && chunks_.size() >= depth) break;
      if (needed) {
        const auto deadline =
            Clock::now() + std::chrono::duration<double>(o.request_timeout_s + o.connect_timeout_s);
        if (!shared_->limiter->AcquireUntil(
                std::chrono::time_point_cast<Clock::duration>(deadline))) {
          Bump(TheRemoteCounters().timeouts);
          Bump(TheRemoteCounters().errors);
          return Status::Unavailable("reading " + uri_ +
                                     ": no request slot to the store freed in " +
                                     std::to_string(o.request_timeout_s + o.connect_timeout_s) +
                                     " s (max_requests_per_host requests all waiting)");
        }
      } else if (!shared_->limiter->TryAcquire()) {
        break;  // read ahead later
      }
      Chunk c;
      c.start = next_issue_;
      // A jump reads exactly the asked bytes; an in-order reader whole
      // requests.
      c.length = static_cast<size_t>(
          std::min<uint64_t>(o.request_bytes, (sequential ? size_ : want_end) - next_issue_));
      Issue(c);
      next_issue_ += c.length;
      chunks_.push_back(std::move(c));
      if (chunks_.size() >= depth && !(next_issue_ < want_end)) break;
    }
    return Status::OK();
  }

  // Sends the request for `c`; the caller holds a host slot for it.
  void Issue(Chunk& c) {
    Bump(TheRemoteCounters().requests);
    c.issued = Clock::now();
    c.future = file_->ReadAsync(arrow::io::IOContext(), static_cast<int64_t>(c.start),
                                static_cast<int64_t>(c.length));
    c.future.AddCallback(
        [limiter = shared_->limiter](const arrow::Result<std::shared_ptr<arrow::Buffer>>&) {
          limiter->Release();
        });
  }

  // Waits for `c`, retrying it (after checking the object did not change)
  // on a transient failure or a timeout.
  Status Finish(Chunk& c) {
    if (c.data) return Status::OK();
    const RemoteOptions& o = shared_->options;
    for (;;) {
      // The deadline counts from when the request was sent: curl's own
      // low-speed timeout (request_timeout_s) normally fires first; this
      // one holds if it does not.
      const double waited = std::chrono::duration<double>(Clock::now() - c.issued).count();
      const double budget = 2 * o.request_timeout_s + o.connect_timeout_s - waited;
      std::string failure;
      arrow::Status arrow_status;
      if (!c.future.Wait(std::max(0.0, budget))) {
        Bump(TheRemoteCounters().timeouts);
        failure = "no answer within " +
                  std::to_string(2 * o.request_timeout_s + o.connect_timeout_s) + " s";
      } else {
        const auto& r = c.future.result();
        if (r.ok() && static_cast<size_t>((*r)->size()) == c.length) {
          Bump(TheRemoteCounters().bytes_read, (*r)->size());
          c.data = *r;
          return Status::OK();
        }
        if (r.ok()) {
          arrow_status =
              arrow::Status::IOError("short read: ", (*r)->size(), " of ", c.length, " bytes");
        } else {
          arrow_status = r.status();
        }
        failure = arrow_status.message();
      }
      const std::string what = "reading " + std::to_string(c.length) + " bytes at offset " +
                               std::to_string(c.start) + " of";
      const bool transient =
          arrow_status.ok() || IsTransient(failure) || Contains(failure, "short read");
      // Our retries for S3 (whose read client has none); Arrow's own for
      // GCS and Azure.
      const int max_retries = shared_->ours_retry_reads ? o.max_retries : 0;
      if (!transient || c.attempts >= max_retries) {
        Bump(TheRemoteCounters().errors);
        if (arrow_status.ok()) {
          return Status::Unavailable(what + " " + uri_ + ": the store did not answer (" + failure +
                                     ") after " + std::to_string(c.attempts) + " retries");
        }
        return FromArrow(arrow_status, what, uri_, c.attempts);
      }
      ++c.attempts;
      Bump(TheRemoteCounters().retries);
      if (IsThrottling(failure)) Bump(TheRemoteCounters().throttled);
      std::this_thread::sleep_for(std::chrono::duration<double>(BackoffSeconds(o, c.attempts)));
      SLUICE_RETURN_IF_ERROR(Reopen(what, c.attempts));
      const auto deadline =
          Clock::now() + std::chrono::duration<double>(o.request_timeout_s + o.connect_timeout_s);
      if (!shared_->limiter->AcquireUntil(
              std::chrono::time_point_cast<Clock::duration>(deadline))) {
        Bump(TheRemoteCounters().errors);
        return Status::Unavailable(what + " " + uri_ + ": no request slot to the store freed");
      }
      Issue(c);
    }
  }

  // Before a retry: opens the object again and checks it is the one this
  // file opened (size and ETag), so a retry never reads another version.
  Status Reopen(const std::string& what, int attempt) {
    const RemoteOptions& o = shared_->options;
    auto fut = shared_->read_fs->OpenInputFileAsync(path_);
    const double budget = 2 * o.request_timeout_s + o.connect_timeout_s;
    if (!fut.Wait(budget)) {
      Bump(TheRemoteCounters().timeouts);
      Bump(TheRemoteCounters().errors);
      return Status::Unavailable(what + " " + uri_ + ": the store did not answer within " +
                                 std::to_string(budget) +
                                 " s when checking the object again before retry " +
                                 std::to_string(attempt) + " of " + std::to_string(o.max_retries));
    }
    if (!fut.result().ok()) {
      Bump(TheRemoteCounters().errors);
      return FromArrow(fut.result().status(),
                       what + " (checking the object again before retry " +
                           std::to_string(attempt) + " of " + std::to_string(o.max_retries) + ")",
                       uri_);
    }
    std::shared_ptr<arrow::io::RandomAccessFile> file = *fut.result();
    auto size = file->GetSize();
    const std::string identity = Identity(file);
    if (!size.ok() || static_cast<uint64_t>(*size) != size_ || identity != identity_) {
      Bump(TheRemoteCounters().errors);
      return Status::DataLoss(what + " " + uri_ + ": the object changed while it was read (size " +
                              std::to_string(size_) + (identity_.empty() ? "" : ", " + identity_) +
                              " at open; now size " +
                              (size.ok() ? std::to_string(*size) : size.status().message()) +
                              (identity.empty() ? "" : ", " + identity) + ")");
    }
    file_ = std::move(file);
    return Status::OK();
  }

  const std::string uri_;
  const std::string path_;  // Arrow's
  const std::shared_ptr<Shared> shared_;
  std::mutex mu_;
  std::shared_ptr<arrow::io::RandomAccessFile> file_;
  const uint64_t size_;
  const std::string identity_;
  std::deque<Chunk> chunks_;  // consecutive, ascending
  uint64_t next_issue_ = 0;   // where the next chunk starts
  uint64_t last_end_ = 0;     // where the last ReadAt ended
};

// ------------------------------------------------------------ writing

class RemoteWritable final : public WritableFile {
 public:
  RemoteWritable(std::string uri, std::shared_ptr<arrow::io::OutputStream> out)
      : uri_(std::move(uri)), out_(std::move(out)) {}
  // Arrow's stream closes (publishes) when destroyed: abort instead.
  ~RemoteWritable() override { Abort(); }

  Status Append(std::string_view data) override {
    if (done_) return Status::FailedPrecondition("writing " + uri_ + ": the upload is closed");
    arrow::Status st = out_->Write(data.data(), static_cast<int64_t>(data.size()));
    if (!st.ok()) return FromArrow(st, "writing", uri_);
    return Status::OK();
  }
  Status Flush() override {
    if (done_) return Status::OK();
    arrow::Status st = out_->Flush();
    if (!st.ok()) return FromArrow(st, "uploading", uri_);
    return Status::OK();
  }
  Status Close() override {
    if (done_) return Status::FailedPrecondition("closing " + uri_ + ": already closed");
    done_ = true;
    arrow::Status st = out_->Close();
    if (!st.ok()) {
      (void)out_->Abort();
      return FromArrow(st, "publishing", uri_);
    }
    return Status::OK();
  }
  void Abort() override {
    if (done_) return;
    done_ = true;
    (void)out_->Abort();
  }
  const std::string& path() const override { return uri_; }

 private:
  std::string uri_;
  std::shared_ptr<arrow::io::OutputStream> out_;
  bool done_ = false;
};

// ------------------------------------------------------------ file system

class ArrowFileSystem final : public FileSystem {
 public:
  ArrowFileSystem(std::string scheme, std::shared_ptr<Shared> shared)
      : scheme_(std::move(scheme)), shared_(std::move(shared)) {}

  std::string_view scheme() const override { return scheme_; }
  bool is_remote() const override { return true; }

  Result<std::unique_ptr<ReadableFile>> OpenReadable(const std::string& uri) override {
    const std::string path = ArrowPath(uri);
    const RemoteOptions& o = shared_->options;
    std::shared_ptr<arrow::io::RandomAccessFile> file;
    for (int attempt = 0;; ++attempt) {
      auto fut = shared_->read_fs->OpenInputFileAsync(path);
      const double budget = 2 * o.request_timeout_s + o.connect_timeout_s;
      arrow::Status st;
      if (!fut.Wait(budget)) {
        Bump(TheRemoteCounters().timeouts);
        st = arrow::Status::IOError("no answer within ", budget, " s (timed out)");
      } else if (fut.result().ok()) {
        file = *fut.result();
        break;
      } else {
        st = fut.result().status();
      }
      if (!shared_->ours_retry_reads || !IsTransient(st.message()) || attempt >= o.max_retries) {
        Bump(TheRemoteCounters().errors);
        Status s = FromArrow(st, "cannot open", uri, shared_->ours_retry_reads ? attempt : -1);
        return s.code() == StatusCode::kNotFound ? NotFoundSaysWhich(uri, path, s) : s;
      }
      Bump(TheRemoteCounters().retries);
      if (IsThrottling(st.message())) Bump(TheRemoteCounters().throttled);
      std::this_thread::sleep_for(std::chrono::duration<double>(BackoffSeconds(o, attempt + 1)));
    }
    auto size = file->GetSize();
    if (!size.ok()) return FromArrow(size.status(), "cannot size", uri);
    std::string identity = Identity(file);
    Bump(TheRemoteCounters().files_opened);
    return std::unique_ptr<ReadableFile>(new RemoteFile(
        uri, path, shared_, std::move(file), static_cast<uint64_t>(*size), std::move(identity)));
  }

  // A HEAD of a key answers 404 alike for a missing key and a missing
  // bucket: ask about the bucket to say which.
  Status NotFoundSaysWhich(const std::string& uri, const std::string& path, Status not_found) {
    const std::string bucket = path.substr(0, path.find('/'));
    auto info = shared_->fs->GetFileInfo(bucket);
    if (info.ok() && info->type() == arrow::fs::FileType::NotFound) {
      return Status::NotFound("cannot open " + uri + ": no such bucket '" + bucket + "'");
    }
    return not_found;
  }

  Result<std::unique_ptr<WritableFile>> OpenWritable(const std::string& uri) override {
    auto out = shared_->fs->OpenOutputStream(ArrowPath(uri), nullptr);
    if (!out.ok()) return FromArrow(out.status(), "cannot write", uri);
    return std::unique_ptr<WritableFile>(new RemoteWritable(uri, *out));
  }

  Result<std::optional<FileInfo>> Stat(const std::string& uri) override {
    auto info = shared_->fs->GetFileInfo(ArrowPath(uri));
    if (!info.ok()) return FromArrow(info.status(), "cannot stat", uri);
    if (info->type() == arrow::fs::FileType::NotFound) return std::optional<FileInfo>();
    return std::optional<FileInfo>(ToInfo(*info));
  }

  Status List(const std::string& dir, bool recursive,
              const std::function<Status(const FileInfo&)>& visit) override {
    arrow::fs::FileSelector select;
    select.base_dir = ArrowPath(dir);
    select.recursive = recursive;
    select.allow_not_found = true;
    arrow::fs::FileInfoGenerator pages = shared_->fs->GetFileInfoGenerator(select);
    const double budget = OperationDeadlineSeconds(shared_->options);
    int64_t listed = 0;
    for (;;) {
      auto fut = pages();
      if (!fut.Wait(budget)) {
        Bump(TheRemoteCounters().timeouts);
        return Status::Unavailable("listing " + dir + ": the store did not answer within " +
                                   std::to_string(budget) + " s");
      }
      const auto& page = fut.result();
      if (!page.ok()) return FromArrow(page.status(), "listing", dir);
      if (arrow::IsIterationEnd(*page)) break;
      for (const arrow::fs::FileInfo& info : *page) {
        ++listed;
        SLUICE_RETURN_IF_ERROR(visit(ToInfo(info)));
      }
    }
    // A missing folder lists nothing; a missing bucket is an error (a typo
    // in its name would otherwise read as "no files"). Asked only when
    // nothing was listed.
    if (listed == 0) {
      const std::string bucket = select.base_dir.substr(0, select.base_dir.find('/'));
      auto info = shared_->fs->GetFileInfo(bucket);
      if (info.ok() && info->type() == arrow::fs::FileType::NotFound) {
        return Status::NotFound("listing " + dir + ": no such bucket '" + bucket + "'");
      }
    }
    return Status::OK();
  }

  Status Delete(const std::string& uri) override {
    arrow::Status st = shared_->fs->DeleteFile(ArrowPath(uri));
    if (st.ok()) return Status::OK();
    Status s = FromArrow(st, "cannot delete", uri);
    // Missing is fine (FileSystem::Delete), but a missing bucket is not.
    if (s.code() == StatusCode::kNotFound && !Contains(s.message(), "no such bucket")) {
      return Status::OK();
    }
    return s;
  }

  // Object stores have no folders: nothing to make. Buckets are never made
  // implicitly (a typo would make a bucket); make them with the cloud's
  // tools.
  Status CreateDirs(const std::string&) override { return Status::OK(); }

 private:
  // "s3://bucket/key?x=y" -> "bucket/key"; abfs "container@host/key" ->
  // "container/key".
  std::string ArrowPath(std::string_view uri) const {
    const size_t sep = uri.find("://");
    std::string_view rest = sep == std::string_view::npos ? uri : uri.substr(sep + 3);
    const size_t q = rest.find('?');
    if (q != std::string_view::npos) rest = rest.substr(0, q);
    std::string out(rest);
    const size_t at = out.find('@');
    const size_t slash = out.find('/');
    if (at != std::string::npos && (slash == std::string::npos || at < slash)) {
      out.erase(at, (slash == std::string::npos ? out.size() : slash) - at);
    }
    while (out.size() > 1 && out.back() == '/') out.pop_back();
    return out;
  }

  std::string ToUri(const std::string& arrow_path) const {
    const UriMapping& m = shared_->mapping;
    std::string p = arrow_path;
    if (!m.host.empty()) {
      const size_t slash = p.find('/');
      p.insert(slash == std::string::npos ? p.size() : slash, m.host);
    }
    return m.scheme + "://" + p + m.query;
  }

  FileInfo ToInfo(const arrow::fs::FileInfo& info) const {
    FileInfo out;
    out.path = ToUri(info.path());
    out.is_dir = info.type() == arrow::fs::FileType::Directory;
    out.size = out.is_dir || info.size() < 0 ? 0 : static_cast<uint64_t>(info.size());
    // The remote cache keys a cached copy on size and this time.
    if (info.mtime() != arrow::fs::kNoTime) {
      out.mtime_ns =
          std::chrono::duration_cast<std::chrono::nanoseconds>(info.mtime().time_since_epoch())
              .count();
    }
    return out;
  }

  std::string scheme_;
  std::shared_ptr<Shared> shared_;
};

// ------------------------------------------------------------ making them

// AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL ("http://host:port"): the
// endpoint override and scheme, as the AWS CLI takes them.
void EndpointFromEnvironment(arrow::fs::S3Options& s3) {
  const char* url = std::getenv("AWS_ENDPOINT_URL_S3");
  if (url == nullptr || *url == '\0') url = std::getenv("AWS_ENDPOINT_URL");
  if (url == nullptr || *url == '\0') return;
  std::string_view u(url);
  if (u.substr(0, 7) == "http://") {
    s3.scheme = "http";
    u.remove_prefix(7);
  } else if (u.substr(0, 8) == "https://") {
    s3.scheme = "https";
    u.remove_prefix(8);
  }
  while (!u.empty() && u.back() == '/') u.remove_suffix(1);
  s3.endpoint_override = std::string(u);
}

// The state one client's files share: its file systems (the same one for
// reads where the SDK's own retries serve), the options and a host limiter.
std::shared_ptr<Shared> NewShared(const RemoteOptions& o, UriMapping mapping,
                                  std::shared_ptr<arrow::fs::FileSystem> fs,
                                  std::shared_ptr<arrow::fs::FileSystem> read_fs) {
  auto shared = std::make_shared<Shared>();
  shared->options = o;
  shared->mapping = std::move(mapping);
  shared->limiter = std::make_shared<HostLimiter>(o.max_requests_per_host);
  shared->fs = std::move(fs);
  shared->read_fs = std::move(read_fs);
  return shared;
}

Result<std::shared_ptr<Shared>> MakeS3(const std::string& uri, const std::string& query,
                                       const RemoteOptions& o) {
  SLUICE_RETURN_IF_ERROR(EnsureS3(uri));
  // The bucket and key do not matter to the options; the query does.
  auto from_uri = arrow::fs::S3Options::FromUri("s3://sluice-bucket" + query);
  if (!from_uri.ok()) return FromArrow(from_uri.status(), "bad S3 URI", uri);
  arrow::fs::S3Options s3 = *from_uri;
  if (query.find("endpoint_override=") == std::string::npos) EndpointFromEnvironment(s3);
  s3.connect_timeout = o.connect_timeout_s;
  s3.request_timeout = o.request_timeout_s;
  s3.allow_bucket_creation = false;
  s3.allow_bucket_deletion = false;
  s3.retry_strategy = std::make_shared<CountingRetryStrategy>(o, o.max_retries);
  auto fs = arrow::fs::S3FileSystem::Make(s3);
  if (!fs.ok()) return FromArrow(fs.status(), "cannot make the S3 client for", uri);
  s3.retry_strategy = std::make_shared<CountingRetryStrategy>(o, 0);
  auto read_fs = arrow::fs::S3FileSystem::Make(s3);
  if (!read_fs.ok()) return FromArrow(read_fs.status(), "cannot make the S3 client for", uri);
  auto shared = NewShared(o, {.scheme = "s3", .query = query}, *fs, *read_fs);
  shared->ours_retry_reads = true;
  std::call_once(s3_atexit_once, [] { std::atexit(FinalizeAtExit); });
  return shared;
}

Result<std::shared_ptr<Shared>> MakeGcs(const std::string& uri, const std::string& scheme,
                                        const std::string& query, const RemoteOptions& o) {
  auto from_uri = arrow::fs::GcsOptions::FromUri("gs://sluice-bucket" + query, nullptr);
  if (!from_uri.ok()) return FromArrow(from_uri.status(), "bad GCS URI", uri);
  arrow::fs::GcsOptions gcs = *from_uri;
  // Arrow's GCS client retries for up to this long (its own backoff).
  gcs.retry_limit_seconds = OperationDeadlineSeconds(o);
  auto fs = arrow::fs::GcsFileSystem::Make(gcs);
  if (!fs.ok()) return FromArrow(fs.status(), "cannot make the GCS client for", uri);
  return NewShared(o, {.scheme = scheme, .query = query}, *fs, *fs);
}

Result<std::shared_ptr<Shared>> MakeAzure(const std::string& uri, const std::string& scheme,
                                          const RemoteOptions& o) {
  arrow::fs::AzureOptions az;
  std::string host;
  if (scheme == "az") {
    // az://container/blob: the account from the environment, as the
    // Azure CLI's AZURE_STORAGE_ACCOUNT.
    const char* account = std::getenv("AZURE_STORAGE_ACCOUNT_NAME");
    if (account == nullptr || *account == '\0') account = std::getenv("AZURE_STORAGE_ACCOUNT");
    if (account == nullptr || *account == '\0') {
      return Status::FailedPrecondition(
          uri +
          ": no Azure storage account (set AZURE_STORAGE_ACCOUNT_NAME, or use "
          "abfss://container@account.dfs.core.windows.net/path)");
    }
    az.account_name = account;
    const char* key = std::getenv("AZURE_STORAGE_ACCOUNT_KEY");
    if (key == nullptr || *key == '\0') key = std::getenv("AZURE_STORAGE_KEY");
    arrow::Status st = key != nullptr && *key != '\0' ? az.ConfigureAccountKeyCredential(key)
                                                      : az.ConfigureDefaultCredential();
    if (!st.ok()) return FromArrow(st, "no usable Azure credentials for", uri);
  } else {
    auto from_uri = arrow::fs::AzureOptions::FromUri(uri, nullptr);
    if (!from_uri.ok()) return FromArrow(from_uri.status(), "bad Azure URI", uri);
    az = *from_uri;
    const size_t at = uri.find('@');
    const size_t slash = uri.find('/', at == std::string::npos ? 0 : at);
    if (at != std::string::npos)
      host = uri.substr(at, slash == std::string::npos ? std::string::npos : slash - at);
  }
  auto fs = arrow::fs::AzureFileSystem::Make(az);
  if (!fs.ok()) return FromArrow(fs.status(), "cannot make the Azure client for", uri);
  return NewShared(o, {.scheme = scheme, .host = host}, *fs, *fs);
}

struct Cache {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<FileSystem>> by_key;
};

Cache& TheCache() {
  static Cache* cache = new Cache;  // never destroyed: emptied at exit instead
  return *cache;
}

void FinalizeAtExit() {
  {
    Cache& c = TheCache();
    std::lock_guard<std::mutex> lock(c.mu);
    c.by_key.clear();
  }
  (void)arrow::fs::EnsureS3Finalized();
}

}  // namespace

bool RemoteFileSystemsBuilt() { return true; }

Result<std::shared_ptr<FileSystem>> MakeRemoteFileSystem(std::string_view scheme_view,
                                                         std::string_view uri_view) {
  const std::string scheme(scheme_view);
  const std::string uri(uri_view);
  const bool s3 = scheme == "s3";
  const bool gcs = scheme == "gs" || scheme == "gcs";
  const bool azure = scheme == "az" || scheme == "abfs" || scheme == "abfss";
  if (!s3 && !gcs && !azure) {
    return Status::InvalidArgument("unknown URI scheme '" + scheme + "' in " + uri +
                                   " (sluice reads file, s3, gs, az and abfs)");
  }
  const size_t q = uri.find('?');
  const std::string query = q == std::string::npos ? "" : uri.substr(q);
  std::string key = scheme + query;
  if (scheme == "abfs" || scheme == "abfss") {
    const size_t at = uri.find('@');
    const size_t slash = uri.find('/', at == std::string::npos ? 0 : at);
    if (at != std::string::npos) key += uri.substr(at, slash - at);
  }
  Cache& cache = TheCache();
  std::lock_guard<std::mutex> lock(cache.mu);
  if (auto it = cache.by_key.find(key); it != cache.by_key.end()) return it->second;
  const RemoteOptions options = GetRemoteOptions();
  // Arrow's I/O pool runs the reads in flight: at least as many threads.
  if (arrow::io::GetIOThreadPoolCapacity() < options.max_requests_per_host) {
    (void)arrow::io::SetIOThreadPoolCapacity(options.max_requests_per_host);
  }
  Result<std::shared_ptr<Shared>> shared = s3    ? MakeS3(uri, query, options)
                                           : gcs ? MakeGcs(uri, scheme, query, options)
                                                 : MakeAzure(uri, scheme, options);
  if (!shared.ok()) return shared.status();
  auto fs = std::make_shared<ArrowFileSystem>(scheme, *shared);
  cache.by_key[key] = fs;
  return std::shared_ptr<FileSystem>(fs);
}

void DropRemoteFileSystems() {
  Cache& cache = TheCache();
  std::lock_guard<std::mutex> lock(cache.mu);
  cache.by_key.clear();
}

}  // namespace sluice::internal
