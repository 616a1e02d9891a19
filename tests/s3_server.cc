#include "s3_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "sluice/core/filesystem.h"
#include "sluice/core/remote.h"

namespace sluice::testing {
namespace {

std::string MotoServerPath() {
#ifdef SLUICE_MOTO_SERVER
  return SLUICE_MOTO_SERVER;
#else
  return "";
#endif
}

// A port nobody listens on now (the kernel's pick for an ephemeral bind).
int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

// Sends one HTTP request to 127.0.0.1:port; the status code, or 0.
int HttpStatus(int port, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  int status = 0;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(request.size())) {
    char buf[256];
    const ssize_t got = ::recv(fd, buf, sizeof(buf) - 1, 0);
    if (got > 12) {
      buf[got] = '\0';
      status = std::atoi(buf + 9);  // "HTTP/1.1 200 OK"
    }
  }
  ::close(fd);
  return status;
}

}  // namespace

std::string S3Server::Unavailable() {
  if (!RemoteFileSystemsAvailable()) return "this build has no object stores (no Arrow C++)";
  const std::string moto = MotoServerPath();
  if (moto.empty() || !std::filesystem::exists(moto)) {
    return "no moto_server (pip install 'moto[server]' into the SLUICE_PYTHON venv)";
  }
  return "";
}

void SetFakeAwsEnvironment() {
  ::setenv("AWS_ACCESS_KEY_ID", "sluice-test-key", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", "sluice-test-secret", 1);
  ::setenv("AWS_DEFAULT_REGION", "us-east-1", 1);
  ::setenv("AWS_REGION", "us-east-1", 1);
  ::setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
  ::unsetenv("AWS_PROFILE");
  ::unsetenv("AWS_SESSION_TOKEN");
}

S3Server* StartSuiteServer() {
  if (!S3Server::Unavailable().empty()) return nullptr;
  SetFakeAwsEnvironment();
  auto* server = new S3Server();
  if (server->ok()) {
    ::setenv("AWS_ENDPOINT_URL_S3", server->endpoint_url().c_str(), 1);
    (void)SetRemoteOptions(RemoteOptions{});  // clients made from now see the endpoint
  }
  return server;
}

void StopSuiteServer(S3Server*& server) {
  delete server;
  server = nullptr;
  ::unsetenv("AWS_ENDPOINT_URL_S3");
}

S3Server::S3Server(bool require_auth) {
  if (!Unavailable().empty()) return;
  for (int attempt = 0; attempt < 3 && !ok_; ++attempt) {
    port_ = FreePort();
    if (port_ == 0) continue;
    std::vector<std::string> argv = {MotoServerPath(), "-H", "127.0.0.1", "-p",
                                     std::to_string(port_)};
    if (require_auth) {
      // moto reads it at start: every request's key is checked from the first.
      ::setenv("INITIAL_NO_AUTH_ACTION_COUNT", "0", 1);
    }
    child_ = std::make_unique<ChildProcess>(argv);
    if (require_auth) ::unsetenv("INITIAL_NO_AUTH_ACTION_COUNT");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (child_->running() && std::chrono::steady_clock::now() < deadline) {
      if (HttpStatus(port_, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n") > 0) {
        ok_ = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!ok_) child_.reset();  // the port was taken, or moto failed: again
  }
}

S3Server::~S3Server() = default;

std::string S3Server::endpoint_url() const { return "http://127.0.0.1:" + std::to_string(port_); }

std::string S3Server::uri_query() const {
  return "?endpoint_override=127.0.0.1:" + std::to_string(port_) + "&scheme=http";
}

bool S3Server::CreateBucket(const std::string& bucket) {
  const int status = HttpStatus(port_, "PUT /" + bucket +
                                           " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: "
                                           "0\r\nConnection: close\r\n\r\n");
  return status == 200;
}

}  // namespace sluice::testing
