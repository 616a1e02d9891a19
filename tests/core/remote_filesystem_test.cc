// The object-store file systems (core/filesystem.h, core/remote.h) against
// a real S3-compatible server (moto) on loopback, started by the tests.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "s3_server.h"
#include "sluice/core/file.h"
#include "sluice/core/filesystem.h"
#include "sluice/core/remote.h"

namespace sluice {
namespace {

using testing::S3Server;

std::string Pattern(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    s[i] = static_cast<char>(x);
  }
  return s;
}

Status WriteObject(const std::string& uri, std::string_view bytes) {
  SLUICE_ASSIGN_OR_RETURN(auto out, OutputFile::Create(uri));
  for (size_t at = 0; at < bytes.size(); at += size_t{1} << 20) {
    SLUICE_RETURN_IF_ERROR(out->Append(bytes.substr(at, size_t{1} << 20)));
  }
  return out->Commit();
}

// Small timeouts and retries so that failures show within seconds.
RemoteOptions FastFailing() {
  RemoteOptions o;
  o.connect_timeout_s = 1;
  o.request_timeout_s = 1;
  o.max_retries = 1;
  o.retry_base_delay_s = 0.01;
  o.retry_max_delay_s = 0.05;
  return o;
}

class RemoteFileSystemTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = testing::StartSuiteServer();
    if (server_ != nullptr && server_->ok()) created_ = server_->CreateBucket("bucket");
  }
  static void TearDownTestSuite() { testing::StopSuiteServer(server_); }
  void SetUp() override {
    if (const std::string why = S3Server::Unavailable(); !why.empty()) GTEST_SKIP() << why;
    ASSERT_TRUE(server_ != nullptr && server_->ok()) << "moto_server did not start";
    ASSERT_TRUE(created_) << "could not make the test bucket";
    ASSERT_TRUE(SetRemoteOptions(RemoteOptions{}).ok());
  }
  void TearDown() override { (void)SetRemoteOptions(RemoteOptions{}); }

  static S3Server* server_;
  static bool created_;
};
S3Server* RemoteFileSystemTest::server_ = nullptr;
bool RemoteFileSystemTest::created_ = false;

TEST_F(RemoteFileSystemTest, WritesAndReadsBack64MiBExactly) {
  const std::string bytes = Pattern(size_t{64} << 20, 1);
  const std::string uri = "s3://bucket/big/object.bin";
  ASSERT_TRUE(WriteObject(uri, bytes).ok());

  auto whole = ReadWholeFile(uri);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  ASSERT_EQ(whole->size, bytes.size());
  EXPECT_TRUE(whole->bytes() == bytes);

  // In order, in reads smaller than a request (read-ahead), then jumps.
  auto file = OpenReadableFile(uri);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ(*(*file)->Size(), bytes.size());
  std::string got(bytes.size(), '\0');
  size_t at = 0;
  while (at < got.size()) {
    auto n = (*file)->ReadAt(at, got.data() + at, 777'777);
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    ASSERT_GT(*n, 0u);
    at += *n;
  }
  EXPECT_TRUE(got == bytes);
  for (uint64_t offset : {uint64_t{5}, uint64_t{40} << 20, uint64_t{3} << 20, uint64_t{63} << 20}) {
    std::string part(100'000, '\0');
    auto n = (*file)->ReadAt(offset, part.data(), part.size());
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    ASSERT_EQ(*n, part.size());
    EXPECT_EQ(part, bytes.substr(offset, part.size())) << "at " << offset;
  }
  char tail[10];
  EXPECT_EQ(*(*file)->ReadAt(bytes.size() - 4, tail, 10), 4u);
  EXPECT_EQ(*(*file)->ReadAt(bytes.size() + 4, tail, 10), 0u);
  EXPECT_GT(GetRemoteStats().requests, 0);
  EXPECT_GE(GetRemoteStats().bytes_read, static_cast<int64_t>(2 * bytes.size()));
}

TEST_F(RemoteFileSystemTest, ReadAheadOffReadsTheSame) {
  RemoteOptions o;
  o.read_ahead = 0;
  o.request_bytes = size_t{1} << 20;
  ASSERT_TRUE(SetRemoteOptions(o).ok());
  const std::string bytes = Pattern((size_t{5} << 20) + 123, 2);
  ASSERT_TRUE(WriteObject("s3://bucket/noahead.bin", bytes).ok());
  auto whole = ReadWholeFile("s3://bucket/noahead.bin");
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  EXPECT_TRUE(whole->bytes() == bytes);
}

// One request in flight per host, several files reading ahead at once:
// they take turns, nothing deadlocks, every byte arrives.
TEST_F(RemoteFileSystemTest, OneRequestPerHostStillReadsEverything) {
  RemoteOptions o;
  o.request_bytes = size_t{256} << 10;
  o.read_ahead = 4;
  o.max_requests_per_host = 1;
  ASSERT_TRUE(SetRemoteOptions(o).ok());
  const std::string a = Pattern(size_t{3} << 20, 7), b = Pattern((size_t{2} << 20) + 9, 8);
  ASSERT_TRUE(WriteObject("s3://bucket/limit/a.bin", a).ok());
  ASSERT_TRUE(WriteObject("s3://bucket/limit/b.bin", b).ok());
  auto fa = OpenReadableFile("s3://bucket/limit/a.bin");
  auto fb = OpenReadableFile("s3://bucket/limit/b.bin");
  ASSERT_TRUE(fa.ok() && fb.ok());
  std::string ga(a.size(), '\0'), gb(b.size(), '\0');
  size_t at_a = 0, at_b = 0;
  while (at_a < a.size() || at_b < b.size()) {  // alternating, 100 KB at a time
    if (at_a < a.size()) {
      auto n = (*fa)->ReadAt(at_a, ga.data() + at_a, std::min<size_t>(100'000, a.size() - at_a));
      ASSERT_TRUE(n.ok()) << n.status().ToString();
      at_a += *n;
    }
    if (at_b < b.size()) {
      auto n = (*fb)->ReadAt(at_b, gb.data() + at_b, std::min<size_t>(100'000, b.size() - at_b));
      ASSERT_TRUE(n.ok()) << n.status().ToString();
      at_b += *n;
    }
  }
  EXPECT_TRUE(ga == a);
  EXPECT_TRUE(gb == b);
}

TEST_F(RemoteFileSystemTest, StatListDelete) {
  for (const char* key : {"dir/a.txt", "dir/b.txt", "dir/sub/c.txt", "other/d.txt"}) {
    ASSERT_TRUE(WriteFileAtomically(std::string("s3://bucket/") + key, key).ok());
  }
  auto info = StatPath("s3://bucket/dir/a.txt");
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  ASSERT_TRUE(info->has_value());
  EXPECT_EQ((*info)->size, 9u);
  EXPECT_FALSE((*info)->is_dir);
  EXPECT_EQ((*info)->path, "s3://bucket/dir/a.txt");
  EXPECT_GT((*info)->mtime_ns, 0);  // the remote cache keys copies on it
  auto dir = StatPath("s3://bucket/dir");
  ASSERT_TRUE(dir.ok() && dir->has_value());
  EXPECT_TRUE((*dir)->is_dir);
  auto missing = StatPath("s3://bucket/dir/nope.txt");
  ASSERT_TRUE(missing.ok()) << missing.status().ToString();
  EXPECT_FALSE(missing->has_value());

  auto flat = ListFolder("s3://bucket/dir");
  ASSERT_TRUE(flat.ok()) << flat.status().ToString();
  ASSERT_EQ(flat->size(), 3u);
  EXPECT_EQ((*flat)[0].path, "s3://bucket/dir/a.txt");
  EXPECT_EQ((*flat)[1].path, "s3://bucket/dir/b.txt");
  EXPECT_EQ((*flat)[2].path, "s3://bucket/dir/sub");
  EXPECT_TRUE((*flat)[2].is_dir);
  auto deep = ListFolder("s3://bucket/dir", /*recursive=*/true);
  ASSERT_TRUE(deep.ok());
  size_t files = 0;
  for (const FileInfo& f : *deep) files += f.is_dir ? 0 : 1;
  EXPECT_EQ(files, 3u);
  auto none = ListFolder("s3://bucket/no-such-dir");
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_TRUE(none->empty());
  auto no_bucket = ListFolder("s3://no-such-bucket-sluice/dir");
  EXPECT_EQ(no_bucket.status().code(), StatusCode::kNotFound) << no_bucket.status().ToString();
  EXPECT_NE(no_bucket.status().message().find("no such bucket"), std::string::npos)
      << no_bucket.status().ToString();

  auto matched = MatchFiles("s3://bucket/dir/*.txt");
  ASSERT_TRUE(matched.ok()) << matched.status().ToString();
  EXPECT_EQ(*matched, (std::vector<std::string>{"s3://bucket/dir/a.txt", "s3://bucket/dir/b.txt"}));
  matched = MatchFiles("s3://bucket/*/[ac].txt");
  ASSERT_TRUE(matched.ok()) << matched.status().ToString();
  EXPECT_EQ(*matched, (std::vector<std::string>{"s3://bucket/dir/a.txt"}));

  ASSERT_TRUE(DeletePath("s3://bucket/dir/a.txt").ok());
  EXPECT_FALSE(*PathExists("s3://bucket/dir/a.txt"));
  EXPECT_TRUE(DeletePath("s3://bucket/dir/a.txt").ok()) << "deleting a missing key is OK";
  EXPECT_TRUE(CreateDirs("s3://bucket/new/dir").ok());
}

TEST_F(RemoteFileSystemTest, MissingKeyIsNotFoundNamingTheUri) {
  auto file = OpenReadableFile("s3://bucket/no/such/key");
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kNotFound) << file.status().ToString();
  EXPECT_NE(file.status().message().find("s3://bucket/no/such/key"), std::string::npos)
      << file.status().ToString();
  auto whole = ReadWholeFile("s3://bucket/no/such/key");
  EXPECT_EQ(whole.status().code(), StatusCode::kNotFound);
}

TEST_F(RemoteFileSystemTest, MissingBucketIsNotFound) {
  auto file = OpenReadableFile("s3://no-such-bucket-sluice/key");
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kNotFound) << file.status().ToString();
  EXPECT_NE(file.status().message().find("s3://no-such-bucket-sluice/key"), std::string::npos);
  EXPECT_NE(file.status().message().find("no such bucket"), std::string::npos)
      << file.status().ToString();
  auto out = OutputFile::Create("s3://no-such-bucket-sluice/key");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kNotFound) << out.status().ToString();
  EXPECT_NE(out.status().message().find("no such bucket"), std::string::npos)
      << out.status().ToString();
}

TEST_F(RemoteFileSystemTest, AbortLeavesNoObject) {
  const std::string uri = "s3://bucket/aborted.bin";
  {
    auto out = OutputFile::Create(uri);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    // Past S3's 5 MiB part size: a multipart upload has begun.
    const std::string bytes = Pattern(size_t{12} << 20, 3);
    ASSERT_TRUE((*out)->Append(bytes).ok());
    ASSERT_TRUE((*out)->Sync().ok());
    (*out)->Abandon();
  }
  EXPECT_FALSE(*PathExists(uri));
  {
    // Dropped without Commit: as Abandon (Arrow's own stream would publish).
    auto out = OutputFile::Create(uri);
    ASSERT_TRUE(out.ok());
    ASSERT_TRUE((*out)->Append("partial").ok());
  }
  EXPECT_FALSE(*PathExists(uri));
  {
    auto fs = FileSystemFor(uri);
    ASSERT_TRUE(fs.ok());
    auto w = (*fs)->OpenWritable(uri);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Append("x").ok());
    (*w)->Abort();
  }
  EXPECT_FALSE(*PathExists(uri));
}

TEST_F(RemoteFileSystemTest, UriQueryNamesTheEndpoint) {
  ::unsetenv("AWS_ENDPOINT_URL_S3");
  ASSERT_TRUE(SetRemoteOptions(RemoteOptions{}).ok());
  const std::string uri = "s3://bucket/query.txt" + server_->uri_query();
  Status written = WriteFileAtomically(uri, "via the query");
  auto read = ReadFileToString(uri);
  auto matched = MatchFiles("s3://bucket/quer*.txt" + server_->uri_query());
  ::setenv("AWS_ENDPOINT_URL_S3", server_->endpoint_url().c_str(), 1);
  ASSERT_TRUE(written.ok()) << written.ToString();
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(*read, "via the query");
  ASSERT_TRUE(matched.ok()) << matched.status().ToString();
  EXPECT_EQ(*matched, std::vector<std::string>{uri});
}

TEST_F(RemoteFileSystemTest, ConnectionRefusedIsUnavailableAfterRetries) {
  ASSERT_TRUE(SetRemoteOptions(FastFailing()).ok());
  int port = 0;
  {
    S3Server gone;  // a port that was free; nobody listens once it is gone
    ASSERT_TRUE(gone.ok());
    port = gone.port();
  }
  const std::string uri =
      "s3://bucket/key?endpoint_override=127.0.0.1:" + std::to_string(port) + "&scheme=http";
  const int64_t retries = GetRemoteStats().retries;
  const auto start = std::chrono::steady_clock::now();
  auto file = OpenReadableFile(uri);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kUnavailable) << file.status().ToString();
  EXPECT_NE(file.status().message().find(uri), std::string::npos);
  EXPECT_NE(file.status().message().find("connection refused"), std::string::npos)
      << file.status().ToString();
  EXPECT_GT(GetRemoteStats().retries, retries);
  EXPECT_LT(took, 30.0);
}

TEST_F(RemoteFileSystemTest, UnknownAccessKeyIsPermissionDenied) {
  S3Server strict(/*require_auth=*/true);
  ASSERT_TRUE(strict.ok());
  const std::string uri = "s3://bucket/key" + strict.uri_query();
  auto file = OpenReadableFile(uri);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kFailedPrecondition) << file.status().ToString();
  EXPECT_NE(file.status().message().find("permission denied"), std::string::npos)
      << file.status().ToString();
  EXPECT_NE(file.status().message().find(uri), std::string::npos);
}

// The server stops answering (SIGSTOP: connections stay open, nothing
// comes back) or dies (SIGKILL) in the middle of a read: an error within
// the stated time, never a hang.
void ReadWhileServerGoes(int signal) {
  S3Server server;
  ASSERT_TRUE(server.ok());
  ASSERT_TRUE(server.CreateBucket("bucket"));
  const std::string uri = "s3://bucket/shard.bin" + server.uri_query();
  const std::string bytes = Pattern(size_t{24} << 20, 4);
  ASSERT_TRUE(WriteObject(uri, bytes).ok());
  RemoteOptions o = FastFailing();
  o.request_bytes = size_t{1} << 20;
  o.read_ahead = 1;
  ASSERT_TRUE(SetRemoteOptions(o).ok());
  auto file = OpenReadableFile(uri);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  std::string buf(size_t{1} << 20, '\0');
  ASSERT_EQ(*(*file)->ReadAt(0, buf.data(), buf.size()), buf.size());
  server.Signal(signal);
  const auto start = std::chrono::steady_clock::now();
  Status failed;
  for (uint64_t at = buf.size(); at < bytes.size(); at += buf.size()) {
    auto n = (*file)->ReadAt(at, buf.data(), buf.size());
    if (!n.ok()) {
      failed = n.status();
      break;
    }
  }
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(failed.ok()) << "read 24 MiB from a server that was gone";
  EXPECT_EQ(failed.code(), StatusCode::kUnavailable) << failed.ToString();
  EXPECT_NE(failed.message().find("s3://bucket/shard.bin"), std::string::npos) << failed.ToString();
  // The stated bound with these options: (max_retries + 1) attempts of at
  // most 2 * request_timeout + connect_timeout, plus the check before the
  // retry: 2 * 3 s + 3 s, backoff aside.
  EXPECT_LT(took, 15.0) << failed.ToString();
  if (signal == SIGSTOP) server.Signal(SIGCONT);
}

// A retry never reads another version: the object is replaced (same size,
// other bytes) while a read of it stalls; the retry finds another ETag.
TEST_F(RemoteFileSystemTest, ObjectReplacedDuringARetryIsDataLoss) {
  S3Server server;
  ASSERT_TRUE(server.ok());
  ASSERT_TRUE(server.CreateBucket("bucket"));
  const std::string uri = "s3://bucket/replaced.bin" + server.uri_query();
  const std::string v1 = Pattern(size_t{4} << 20, 5);
  ASSERT_TRUE(WriteObject(uri, v1).ok());
  RemoteOptions o = FastFailing();
  o.request_bytes = size_t{1} << 20;
  o.read_ahead = 0;
  o.max_retries = 3;
  ASSERT_TRUE(SetRemoteOptions(o).ok());
  auto file = OpenReadableFile(uri);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  std::string buf(size_t{1} << 20, '\0');
  ASSERT_EQ(*(*file)->ReadAt(0, buf.data(), buf.size()), buf.size());
  ASSERT_TRUE(WriteObject(uri, Pattern(v1.size(), 6)).ok());  // version 2, same size
  // The next request stalls past request_timeout_s (1 s), then the server
  // answers again: the retry checks the object first.
  server.Signal(SIGSTOP);
  std::thread resume([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    server.Signal(SIGCONT);
  });
  auto n = (*file)->ReadAt(buf.size(), buf.data(), buf.size());
  resume.join();
  ASSERT_FALSE(n.ok()) << "read on after the object was replaced";
  EXPECT_EQ(n.status().code(), StatusCode::kDataLoss) << n.status().ToString();
  EXPECT_NE(n.status().message().find("changed while it was read"), std::string::npos)
      << n.status().ToString();
}

TEST_F(RemoteFileSystemTest, ServerStoppedMidReadIsAnErrorNotAHang) {
  ReadWhileServerGoes(SIGSTOP);
}
TEST_F(RemoteFileSystemTest, ServerKilledMidReadIsAnError) { ReadWhileServerGoes(SIGKILL); }

// A store that throttles: HEAD answers (a 1 MiB object, a fixed ETag),
// every GET is `status` with S3's SlowDown error. Serves until destroyed.
class ThrottlingStore {
 public:
  explicit ThrottlingStore(int status) : status_(status) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::listen(fd_, 64) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      return;
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~ThrottlingStore() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    ::close(fd_);
  }
  int port() const { return port_; }
  int gets() const { return gets_; }

 private:
  void Serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) continue;
      std::string request;
      char buf[4096];
      while (request.find("\r\n\r\n") == std::string::npos) {
        const ssize_t got = ::recv(c, buf, sizeof(buf), 0);
        if (got <= 0) break;
        request.append(buf, static_cast<size_t>(got));
      }
      std::string reply;
      if (request.rfind("HEAD", 0) == 0) {
        reply =
            "HTTP/1.1 200 OK\r\nContent-Length: 1048576\r\nETag: \"fixed\"\r\n"
            "Last-Modified: Mon, 07 Dec 2026 12:00:00 GMT\r\nConnection: close\r\n\r\n";
      } else {
        ++gets_;
        const std::string body =
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>SlowDown</Code>"
            "<Message>Please reduce your request rate.</Message></Error>";
        reply =
            "HTTP/1.1 " + std::to_string(status_) +
            (status_ == 503 ? " Slow Down" : " Too Many Requests") +
            "\r\nContent-Type: application/xml\r\nContent-Length: " + std::to_string(body.size()) +
            "\r\nConnection: close\r\n\r\n" + body;
      }
      (void)::send(c, reply.data(), reply.size(), MSG_NOSIGNAL);
      // Let the client read it all before the socket goes (no reset).
      ::shutdown(c, SHUT_WR);
      pollfd drain{c, POLLIN, 0};
      while (::poll(&drain, 1, 1000) > 0 && ::recv(c, buf, sizeof(buf), 0) > 0) {
      }
      ::close(c);
    }
  }

  int status_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> gets_{0};
  std::thread thread_;
};

void ThrottledReadGivesUp(int status) {
  if (!RemoteFileSystemsAvailable()) GTEST_SKIP() << "no object stores in this build";
  testing::SetFakeAwsEnvironment();
  ThrottlingStore store(status);
  ASSERT_GT(store.port(), 0);
  RemoteOptions o = FastFailing();
  o.max_retries = 3;
  ASSERT_TRUE(SetRemoteOptions(o).ok());
  const std::string uri =
      "s3://bucket/hot.bin?endpoint_override=127.0.0.1:" + std::to_string(store.port()) +
      "&scheme=http";
  const RemoteStats before = GetRemoteStats();
  auto file = OpenReadableFile(uri);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  std::string buf(1000, '\0');
  auto n = (*file)->ReadAt(0, buf.data(), buf.size());
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().code(), StatusCode::kUnavailable) << n.status().ToString();
  EXPECT_NE(n.status().message().find("throttling"), std::string::npos) << n.status().ToString();
  EXPECT_NE(n.status().message().find("after 3 retries"), std::string::npos)
      << n.status().ToString();
  EXPECT_NE(n.status().message().find(uri), std::string::npos);
  EXPECT_EQ(store.gets(), 4);  // the first try and 3 retries
  const RemoteStats after = GetRemoteStats();
  EXPECT_EQ(after.retries - before.retries, 3);
  EXPECT_EQ(after.throttled - before.throttled, 3);
  EXPECT_EQ(after.errors - before.errors, 1);
  (void)SetRemoteOptions(RemoteOptions{});
}

TEST(RemoteThrottlingTest, SlowDown503IsRetriedThenUnavailable) { ThrottledReadGivesUp(503); }
TEST(RemoteThrottlingTest, TooManyRequests429IsRetriedThenUnavailable) {
  ThrottledReadGivesUp(429);
}

TEST(RemoteOptionsTest, RejectsValuesOutOfRange) {
  RemoteOptions o;
  o.request_bytes = 100;
  EXPECT_EQ(SetRemoteOptions(o).code(), StatusCode::kInvalidArgument);
  o = RemoteOptions{};
  o.max_requests_per_host = 0;
  EXPECT_EQ(SetRemoteOptions(o).code(), StatusCode::kInvalidArgument);
  o = RemoteOptions{};
  o.retry_max_delay_s = -1;
  EXPECT_EQ(SetRemoteOptions(o).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(GetRemoteOptions().request_bytes, RemoteOptions{}.request_bytes);
  EXPECT_NE(RemoteStatsString(GetRemoteStats()).find("retries="), std::string::npos);
}

TEST(RemoteOptionsTest, ObjectStoresExistOnlyWithArrow) {
  auto fs = FileSystemFor("gs://bucket/x");
  if (RemoteFileSystemsAvailable()) {
    // Made without contacting anything (anonymous or default credentials).
    EXPECT_TRUE(fs.ok() || fs.status().code() == StatusCode::kFailedPrecondition)
        << fs.status().ToString();
  } else {
    EXPECT_EQ(fs.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(fs.status().message().find("gs://bucket/x"), std::string::npos);
  }
  EXPECT_EQ(FileSystemFor("nope://x").status().code(), StatusCode::kInvalidArgument);
}

TEST(RemoteOptionsTest, AzureWithoutAnAccountSaysWhatToSet) {
  if (!RemoteFileSystemsAvailable()) GTEST_SKIP() << "no object stores in this build";
  ::unsetenv("AZURE_STORAGE_ACCOUNT_NAME");
  ::unsetenv("AZURE_STORAGE_ACCOUNT");
  auto fs = FileSystemFor("az://container/blob");
  ASSERT_FALSE(fs.ok());
  EXPECT_EQ(fs.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(fs.status().message().find("az://container/blob"), std::string::npos);
  EXPECT_NE(fs.status().message().find("AZURE_STORAGE_ACCOUNT_NAME"), std::string::npos);
}

}  // namespace
}  // namespace sluice
