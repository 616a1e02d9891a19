// objstore_read_bench: reading objects through sluice (OpenReadableFile and
// sequential reads, read-ahead off and on) against a bare Arrow read loop of
// the same objects, in one run against the same S3-compatible server.
// scripts/bench-objstore.sh starts moto on loopback and runs it; the numbers
// and how to read them are in docs/perf.md ("Object stores").
//
// The endpoint and keys come from the environment, as for any s3:// URI
// (AWS_ENDPOINT_URL_S3, AWS_ACCESS_KEY_ID...). The bucket must exist.
#include <arrow/buffer.h>
#include <arrow/filesystem/s3fs.h>
#include <arrow/io/interfaces.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../common/args.h"
#include "../common/timing.h"
#include "sluice/core/file.h"
#include "sluice/core/filesystem.h"
#include "sluice/core/remote.h"

namespace {

using sluice::bench::Clock;
using sluice::bench::Since;

struct Args {
  std::string bucket = "bench";
  int objects = 8;
  int object_mib = 32;
  int read_kib = 1024;  // the reader's ReadAt size (a record reader's buffer)
  int reps = 3;
};

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "objstore_read_bench: %s\n", what.c_str());
  std::exit(1);
}

std::string Key(int i) { return "objects/object-" + std::to_string(i) + ".bin"; }

// Sluice: each object opened and read in order in read_kib reads.
double ReadThroughSluice(const Args& a) {
  std::vector<char> buf(static_cast<size_t>(a.read_kib) << 10);
  const auto t0 = Clock::now();
  uint64_t total = 0;
  for (int i = 0; i < a.objects; ++i) {
    auto file = sluice::OpenReadableFile("s3://" + a.bucket + "/" + Key(i));
    if (!file.ok()) Die(file.status().ToString());
    (*file)->AdviseSequential();
    for (uint64_t at = 0;;) {
      auto n = (*file)->ReadAt(at, buf.data(), buf.size());
      if (!n.ok()) Die(n.status().ToString());
      if (*n == 0) break;
      at += *n;
      total += *n;
    }
  }
  return static_cast<double>(total) / Since(t0) / 1e6;
}

// Bare Arrow: S3FileSystem's input file, read in order with ReadAt of the
// same request size sluice uses (one request at a time, as a plain loop).
double ReadThroughArrow(const Args& a, arrow::fs::S3FileSystem& fs, int64_t request) {
  const auto t0 = Clock::now();
  uint64_t total = 0;
  std::vector<char> buf(static_cast<size_t>(request));
  for (int i = 0; i < a.objects; ++i) {
    auto file = fs.OpenInputFile(a.bucket + "/" + Key(i));
    if (!file.ok()) Die(file.status().ToString());
    const int64_t size = *(*file)->GetSize();
    for (int64_t at = 0; at < size;) {
      auto n = (*file)->ReadAt(at, request, buf.data());
      if (!n.ok()) Die(n.status().ToString());
      if (*n == 0) break;
      at += *n;
      total += static_cast<uint64_t>(*n);
    }
  }
  return static_cast<double>(total) / Since(t0) / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  sluice::bench::CommandLine args(
      "objstore_read_bench",
      "--bucket bench --objects 8 --object-mib 32 --read-kib 1024 --reps 3 "
      "(endpoint and keys from AWS_ENDPOINT_URL_S3, AWS_ACCESS_KEY_ID, ...)");
  args.Add("--bucket", &a.bucket)
      .Add("--objects", &a.objects, 1, 10000)
      .Add("--object-mib", &a.object_mib, 1, 4096)
      .Add("--read-kib", &a.read_kib, 4, 1 << 20)
      .Add("--reps", &a.reps, 1, 100);
  args.Parse(argc, argv);
  if (!sluice::RemoteFileSystemsAvailable()) Die("this build has no object stores");

  // The objects, written once through sluice.
  const std::string block(size_t{1} << 20, 'x');
  for (int i = 0; i < a.objects; ++i) {
    const std::string uri = "s3://" + a.bucket + "/" + Key(i);
    auto info = sluice::StatPath(uri);
    if (!info.ok()) Die(info.status().ToString());
    if (info->has_value() && (*info)->size == static_cast<uint64_t>(a.object_mib) << 20) continue;
    auto out = sluice::OutputFile::Create(uri);
    if (!out.ok()) Die(out.status().ToString());
    for (int m = 0; m < a.object_mib; ++m) {
      if (auto s = (*out)->Append(block); !s.ok()) Die(s.ToString());
    }
    if (auto s = (*out)->Commit(); !s.ok()) Die(s.ToString());
  }

  // Made after sluice's first S3 use, so S3 is initialized (and finalized
  // at exit) once, by sluice.
  arrow::fs::S3Options s3 = arrow::fs::S3Options::Defaults();
  if (const char* url = std::getenv("AWS_ENDPOINT_URL_S3")) {
    std::string u(url);
    if (u.rfind("http://", 0) == 0) {
      s3.scheme = "http";
      u = u.substr(7);
    }
    s3.endpoint_override = u;
  }
  auto arrow_fs = arrow::fs::S3FileSystem::Make(s3);
  if (!arrow_fs.ok()) Die(arrow_fs.status().ToString());

  const sluice::RemoteOptions defaults;
  sluice::RemoteOptions off = defaults;
  off.read_ahead = 0;
  const double mb = static_cast<double>(a.objects) * a.object_mib * 1.048576;
  std::printf(
      "objects: %d x %d MiB (%.0f MB); sluice reads of %d KiB; request %zu MiB, "
      "read_ahead %d\n",
      a.objects, a.object_mib, mb, a.read_kib, defaults.request_bytes >> 20, defaults.read_ahead);
  std::printf("%-4s %12s %16s %15s %10s %10s\n", "rep", "arrow MB/s", "sluice off MB/s",
              "sluice on MB/s", "off/arrow", "on/arrow");
  std::vector<double> r_arrow, r_off, r_on;
  for (int rep = 0; rep < a.reps; ++rep) {
    const double bare =
        ReadThroughArrow(a, **arrow_fs, static_cast<int64_t>(defaults.request_bytes));
    if (auto s = sluice::SetRemoteOptions(off); !s.ok()) Die(s.ToString());
    const double without = ReadThroughSluice(a);
    if (auto s = sluice::SetRemoteOptions(defaults); !s.ok()) Die(s.ToString());
    const double with = ReadThroughSluice(a);
    r_arrow.push_back(bare);
    r_off.push_back(without);
    r_on.push_back(with);
    std::printf("%-4d %12.0f %16.0f %15.0f %10.2f %10.2f\n", rep, bare, without, with,
                without / bare, with / bare);
  }
  const double m_arrow = sluice::bench::Median(r_arrow);
  const double m_off = sluice::bench::Median(r_off);
  const double m_on = sluice::bench::Median(r_on);
  std::printf("%-4s %12.0f %16.0f %15.0f %10.2f %10.2f\n", "med", m_arrow, m_off, m_on,
              m_off / m_arrow, m_on / m_arrow);
  std::printf("remote stats: %s\n", sluice::RemoteStatsString(sluice::GetRemoteStats()).c_str());
  return 0;
}
