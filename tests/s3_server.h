// S3Server: an S3-compatible server (moto's `moto_server`, from the build's
// Python venv) on a free loopback port, started by a test and stopped when
// the object goes. Tests skip when the build has no object stores (Arrow)
// or no moto_server: see Unavailable().
//
// Not thread-safe; one object per server. The child is killed (SIGKILL)
// and reaped on destruction.
#ifndef SLUICE_TESTS_S3_SERVER_H_
#define SLUICE_TESTS_S3_SERVER_H_

#include <memory>
#include <string>

#include "child_process.h"

namespace sluice::testing {

class S3Server {
 public:
  // Why no server can be had here ("" when one can): no Arrow in this build,
  // or no moto_server beside SLUICE_PYTHON.
  static std::string Unavailable();

  // Starts moto_server on a free port and waits (up to 60 s) until it
  // answers. `require_auth`: moto checks access keys (any key it did not
  // issue is refused, 403 InvalidAccessKeyId). Check ok() after.
  explicit S3Server(bool require_auth = false);
  ~S3Server();

  bool ok() const { return ok_; }
  int port() const { return port_; }
  // "http://127.0.0.1:PORT"
  std::string endpoint_url() const;
  // "?endpoint_override=127.0.0.1:PORT&scheme=http", for URIs that name
  // this server whatever the environment says.
  std::string uri_query() const;
  // Makes a bucket (an unsigned PUT, which moto accepts). False on failure.
  bool CreateBucket(const std::string& bucket);

  // SIGSTOP (the server stops answering, connections stay open), SIGCONT,
  // SIGKILL.
  void Signal(int signal) { child_->Kill(signal); }

 private:
  bool ok_ = false;
  int port_ = 0;
  std::unique_ptr<ChildProcess> child_;
};

// Sets the environment the AWS SDK reads so that clients find no real
// credentials or instance metadata: a fixed test key and secret, region
// us-east-1, EC2 metadata off. Call before the first s3:// use.
void SetFakeAwsEnvironment();

// For a suite's SetUpTestSuite: SetFakeAwsEnvironment, a new S3Server, and
// AWS_ENDPOINT_URL_S3 pointing at it with the remote clients reset so that
// new ones see it. nullptr where Unavailable(); check ok() otherwise.
// StopSuiteServer (TearDownTestSuite) deletes it and unsets the endpoint.
S3Server* StartSuiteServer();
void StopSuiteServer(S3Server*& server);

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_S3_SERVER_H_
