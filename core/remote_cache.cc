// The local cache of remote shards (core/remote_cache.h).
#include "sluice/core/remote_cache.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "sluice/core/internal/remote_cache_open.h"

namespace sluice {
namespace {

struct Counters {
  std::atomic<uint64_t> hits{0}, misses{0}, filled{0}, evicted{0}, not_cached{0}, errors{0},
      bytes_read_from_cache{0};
};

struct CacheState {
  std::mutex mu;
  bool configured = false;
  RemoteCacheOptions options;
  std::mutex evict_mu;  // one eviction pass at a time in this process
  Counters counters;
};

CacheState& State() {
  static CacheState* state = new CacheState;  // used until the process ends
  return *state;
}

// The environment's cache, read once on first use.
RemoteCacheOptions FromEnvironment() {
  RemoteCacheOptions o;
  const char* dir = std::getenv("SLUICE_REMOTE_CACHE_DIR");
  const char* bytes = std::getenv("SLUICE_REMOTE_CACHE_BYTES");
  if (dir == nullptr || *dir == '\0') return o;
  Result<uint64_t> n = ParseByteSize(bytes ? bytes : "");
  if (!n.ok() || *n == 0) return o;  // no budget: no cache
  o.dir = dir;
  o.max_bytes = *n;
  if (const char* fill = std::getenv("SLUICE_REMOTE_CACHE_FILL");
      fill && std::strcmp(fill, "on_open") == 0) {
    o.fill = RemoteCacheOptions::Fill::kOnOpen;
  }
  return o;
}

uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// "<readable part of the URI>-<hash of the URI>": the prefix every cached
// version of one object shares.
std::string KeyOf(std::string_view uri) {
  std::string name;
  for (char c : uri.substr(0, 120)) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '.' || c == '-' || c == '_';
    name += plain ? c : '_';
  }
  char hash[24];
  std::snprintf(hash, sizeof(hash), "-%016llx", static_cast<unsigned long long>(Fnv1a(uri)));
  return name + hash;
}

// The cache file of one version (size, modification time) of `uri`.
std::string CachePath(const std::string& dir, std::string_view uri, const FileInfo& info) {
  return dir + "/" + KeyOf(uri) + "-" + std::to_string(info.size) + "-" +
         std::to_string(info.mtime_ns) + ".cached";
}

void Touch(const std::string& path) { (void)::utimensat(AT_FDCWD, path.c_str(), nullptr, 0); }

// Deletes the least recently used cache files until the folder holds at
// most `max_bytes`, never `keep`; and other versions of `keep`'s object.
void Evict(const RemoteCacheOptions& o, const std::string& keep, std::string_view key) {
  CacheState& st = State();
  std::lock_guard<std::mutex> lock(st.evict_mu);
  Result<std::vector<FileInfo>> files = ListFolder(o.dir);
  if (!files.ok()) {
    st.counters.errors++;
    return;
  }
  std::vector<FileInfo> cached;
  uint64_t total = 0;
  const std::string key_prefix = o.dir + "/" + std::string(key) + "-";
  for (FileInfo& f : *files) {
    if (f.is_dir || !f.path.ends_with(".cached")) continue;  // temporaries start with '.'
    if (f.path != keep && f.path.starts_with(key_prefix)) {  // an older version
      if (DeletePath(f.path).ok()) st.counters.evicted++;
      continue;
    }
    total += f.size;
    cached.push_back(std::move(f));
  }
  std::sort(cached.begin(), cached.end(),
            [](const FileInfo& a, const FileInfo& b) { return a.mtime_ns < b.mtime_ns; });
  for (const FileInfo& f : cached) {
    if (total <= o.max_bytes) break;
    if (f.path == keep) continue;
    if (DeletePath(f.path).ok()) {
      total -= f.size;
      st.counters.evicted++;
    }
  }
}

// A file read from the cache, counting its bytes.
class CachedFile final : public ReadableFile {
 public:
  CachedFile(std::unique_ptr<ReadableFile> local, std::string uri)
      : local_(std::move(local)), uri_(std::move(uri)) {}
  Result<size_t> ReadAt(uint64_t offset, void* dst, size_t n) override {
    Result<size_t> got = local_->ReadAt(offset, dst, n);
    if (got.ok()) State().counters.bytes_read_from_cache += *got;
    return got;
  }
  Result<uint64_t> Size() override { return local_->Size(); }
  const std::string& name() const override { return uri_; }  // errors name the object
  void AdviseSequential() override { local_->AdviseSequential(); }

 private:
  std::unique_ptr<ReadableFile> local_;
  std::string uri_;
};

// A remote file whose bytes, read in order from its start, are written to
// the cache and published when the last one arrives.
class TeeFile final : public ReadableFile {
 public:
  TeeFile(std::unique_ptr<ReadableFile> remote, RemoteCacheOptions options, std::string cache_path,
          std::string key, uint64_t size)
      : remote_(std::move(remote)),
        options_(std::move(options)),
        cache_path_(std::move(cache_path)),
        key_(std::move(key)),
        size_(size) {}

  Result<size_t> ReadAt(uint64_t offset, void* dst, size_t n) override {
    SLUICE_ASSIGN_OR_RETURN(size_t got, remote_->ReadAt(offset, dst, n));
    std::lock_guard<std::mutex> lock(mu_);
    if (done_ || offset > next_ || offset + got <= next_) {
      if (!done_ && offset > next_) GiveUp(/*error=*/false);  // a gap: read out of order
      return got;
    }
    if (!out_) {
      Result<std::unique_ptr<OutputFile>> out = OutputFile::Create(cache_path_);
      if (!out.ok()) {
        GiveUp(/*error=*/true);
        return got;
      }
      out_ = std::move(*out);
    }
    const size_t skip = static_cast<size_t>(next_ - offset);  // already written
    if (!out_->Append(std::string_view(static_cast<const char*>(dst) + skip, got - skip)).ok()) {
      GiveUp(/*error=*/true);
      return got;
    }
    next_ = offset + got;
    if (next_ == size_) {
      done_ = true;
      if (out_->Commit().ok()) {
        State().counters.filled++;
        Evict(options_, cache_path_, key_);
      } else {
        State().counters.errors++;
      }
      out_.reset();
    }
    return got;
  }
  Result<uint64_t> Size() override { return remote_->Size(); }
  const std::string& name() const override { return remote_->name(); }
  void AdviseSequential() override { remote_->AdviseSequential(); }
  bool is_stream() const override { return remote_->is_stream(); }

 private:
  void GiveUp(bool error) {
    done_ = true;
    if (out_) out_->Abandon();
    out_.reset();
    (error ? State().counters.errors : State().counters.not_cached)++;
  }

  std::unique_ptr<ReadableFile> remote_;
  const RemoteCacheOptions options_;
  const std::string cache_path_, key_;
  const uint64_t size_;
  std::mutex mu_;
  uint64_t next_ = 0;  // the bytes before it are in out_
  bool done_ = false;
  std::unique_ptr<OutputFile> out_;
};

// Downloads `uri` whole into `cache_path` (kOnOpen).
Status Download(ReadableFile& remote, const std::string& cache_path, uint64_t size) {
  SLUICE_ASSIGN_OR_RETURN(auto out, OutputFile::Create(cache_path));
  constexpr size_t kChunk = size_t{8} << 20;
  std::string buf(static_cast<size_t>(std::min<uint64_t>(size, kChunk)), '\0');
  uint64_t done = 0;
  while (done < size) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(size - done, kChunk));
    SLUICE_ASSIGN_OR_RETURN(size_t got, remote.ReadAt(done, buf.data(), want));
    if (got == 0) {
      return Status::DataLoss(remote.name() + " ended at byte " + std::to_string(done) + " of " +
                              std::to_string(size) + " while cached");
    }
    SLUICE_RETURN_IF_ERROR(out->Append(std::string_view(buf.data(), got)));
    done += got;
  }
  return out->Commit();
}

}  // namespace

Result<uint64_t> ParseByteSize(std::string_view text) {
  if (text.empty()) return Status::InvalidArgument("a byte size is empty");
  uint64_t value = 0;
  size_t i = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    if (value > (~uint64_t{0} - 9) / 10) {
      return Status::InvalidArgument("byte size '" + std::string(text) + "' is too large");
    }
    value = value * 10 + static_cast<uint64_t>(text[i] - '0');
  }
  if (i == 0) return Status::InvalidArgument("'" + std::string(text) + "' is not a byte size");
  std::string_view unit = text.substr(i);
  if (!unit.empty() && (unit.back() == 'B' || unit.back() == 'b')) unit.remove_suffix(1);
  int shift = 0;
  if (unit == "K" || unit == "k") {
    shift = 10;
  } else if (unit == "M" || unit == "m") {
    shift = 20;
  } else if (unit == "G" || unit == "g") {
    shift = 30;
  } else if (unit == "T" || unit == "t") {
    shift = 40;
  } else if (!unit.empty()) {
    return Status::InvalidArgument("'" + std::string(text) +
                                   "' is not a byte size (a number, then K, M, G or T)");
  }
  if (shift > 0 && value > (~uint64_t{0} >> shift)) {
    return Status::InvalidArgument("byte size '" + std::string(text) + "' is too large");
  }
  return value << shift;
}

Status SetRemoteCache(const RemoteCacheOptions& options) {
  if (!options.dir.empty()) {
    if (options.max_bytes == 0) {
      return Status::InvalidArgument("SetRemoteCache: max_bytes must be > 0 for the cache " +
                                     options.dir);
    }
    if (IsRemotePath(options.dir)) {
      return Status::InvalidArgument("SetRemoteCache: the cache folder " + options.dir +
                                     " must be on a local disk");
    }
    SLUICE_RETURN_IF_ERROR(CreateDirs(options.dir));
  }
  CacheState& st = State();
  std::lock_guard<std::mutex> lock(st.mu);
  st.options = options;
  st.configured = true;
  return Status::OK();
}

RemoteCacheOptions GetRemoteCache() {
  CacheState& st = State();
  std::lock_guard<std::mutex> lock(st.mu);
  if (!st.configured) {
    st.options = FromEnvironment();
    st.configured = true;
    if (!st.options.dir.empty() && !CreateDirs(st.options.dir).ok()) st.options.dir.clear();
  }
  return st.options;
}

RemoteCacheStats GetRemoteCacheStats() {
  const Counters& c = State().counters;
  RemoteCacheStats s;
  s.hits = c.hits;
  s.misses = c.misses;
  s.filled = c.filled;
  s.evicted = c.evicted;
  s.not_cached = c.not_cached;
  s.errors = c.errors;
  s.bytes_read_from_cache = c.bytes_read_from_cache;
  return s;
}

namespace internal {

Result<std::unique_ptr<ReadableFile>> OpenRemoteReadable(FileSystem& fs, const std::string& uri) {
  const RemoteCacheOptions o = GetRemoteCache();
  if (o.dir.empty()) return fs.OpenReadable(uri);
  Counters& c = State().counters;
  SLUICE_ASSIGN_OR_RETURN(std::optional<FileInfo> info, fs.Stat(uri));
  if (!info || info->is_dir) return fs.OpenReadable(uri);  // the store's own error
  const std::string key = KeyOf(uri);
  const std::string cache_path = CachePath(o.dir, uri, *info);
  Result<std::unique_ptr<ReadableFile>> local = OpenReadableFile(cache_path);
  if (local.ok()) {
    c.hits++;
    Touch(cache_path);
    return std::unique_ptr<ReadableFile>(new CachedFile(std::move(*local), uri));
  }
  c.misses++;
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> remote, fs.OpenReadable(uri));
  if (info->size > o.max_bytes) {
    c.not_cached++;
    return remote;
  }
  if (o.fill == RemoteCacheOptions::Fill::kOnOpen) {
    if (Download(*remote, cache_path, info->size).ok()) {
      c.filled++;
      Evict(o, cache_path, key);
      Result<std::unique_ptr<ReadableFile>> fresh = OpenReadableFile(cache_path);
      if (fresh.ok()) return std::unique_ptr<ReadableFile>(new CachedFile(std::move(*fresh), uri));
    }
    c.errors++;
    return remote;
  }
  return std::unique_ptr<ReadableFile>(
      new TeeFile(std::move(remote), o, cache_path, key, info->size));
}

}  // namespace internal
}  // namespace sluice
