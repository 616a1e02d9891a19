// Training data in an object store: TFRecord shards written to PREFIX (a
// folder, or s3://bucket/path, gs://..., az://...), listed with a glob,
// read for two epochs through a local cache of remote shards, and an
// iterator checkpoint written beside them and resumed. The same code runs on
// a local folder and on a store: every sluice reader and writer takes URIs
// (docs/objstore.md).
//
//   object_store /tmp/demo
//   AWS_ENDPOINT_URL_S3=http://127.0.0.1:9000 object_store s3://bucket/demo
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "command_line.h"
#include "sluice/core/file.h"
#include "sluice/core/filesystem.h"
#include "sluice/core/remote_cache.h"
#include "sluice/core/rng.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/pipeline/parse_example.h"
#include "sluice/records/example_builder.h"
#include "sluice/records/tfrecord_writer.h"

namespace {

[[noreturn]] void Die(const sluice::Status& s) {
  std::fprintf(stderr, "object_store: %s\n", s.ToString().c_str());
  std::exit(1);
}
template <typename T>
T Check(sluice::Result<T> r) {
  if (!r.ok()) Die(r.status());
  return std::move(r).value();
}
void Check(const sluice::Status& s) {
  if (!s.ok()) Die(s);
}

constexpr int kShards = 4;
constexpr int kPerShard = 256;

void WriteShards(const std::string& prefix) {
  sluice::ExampleBuilder builder;
  std::string serialized;
  for (int s = 0; s < kShards; ++s) {
    char name[64];
    std::snprintf(name, sizeof(name), "train-%05d-of-%05d.tfrecord", s, kShards);
    sluice::TFRecordWriter w =
        Check(sluice::TFRecordWriter::Open(sluice::JoinPath(prefix, name), {.write_index = true}));
    for (int i = 0; i < kPerShard; ++i) {
      sluice::Rng rng(/*seed=*/7, /*stream=*/static_cast<uint64_t>(s * kPerShard + i));
      std::string payload(2048, '\0');
      for (char& c : payload) c = static_cast<char>(rng.NextU32());
      builder.Clear();
      builder.AddBytes("payload", payload).AddInt64("label", s * kPerShard + i);
      builder.SerializeTo(&serialized);
      Check(w.Write(serialized));
    }
    Check(w.Close());  // the object (and its .idx) appear whole here
  }
}

sluice::Dataset Pipeline(const std::vector<std::string>& files) {
  sluice::ParseSpec spec = {
      {"payload", sluice::FixedLenFeature(sluice::DType::kString, {})},
      {"label", sluice::FixedLenFeature(sluice::DType::kInt64, {})},
  };
  return sluice::TFRecordDataset(files, {.num_parallel_reads = 2})
      .map(sluice::parse_example(spec))
      .batch(64);
}

// Drains `it`: (examples, sum of labels).
std::pair<int64_t, int64_t> Drain(sluice::Iterator& it) {
  int64_t n = 0, sum = 0;
  while (std::optional<sluice::Element> batch = Check(it.next())) {
    for (int64_t label : (*batch)[1].flat<int64_t>()) sum += label;
    n += (*batch)[1].num_elements();
  }
  return {n, sum};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Training data in an object store: TFRecord shards written to PREFIX (a folder or an "
      "s3://, gs://, az:// URI), listed, read for two epochs through the local cache of remote "
      "shards, and an iterator checkpoint saved there and resumed."};
  std::string prefix = "object-store-demo";
  std::string cache_dir;
  app.add_option("PREFIX", prefix, "Folder or URI to write the shards under")
      ->capture_default_str();
  app.add_option("--cache-dir", cache_dir,
                 "Local folder for the cache of remote shards (default: a temporary folder)");
  if (std::optional<int> status = samples::ParseCommandLine(app, argc, argv)) return *status;
  const bool remote = sluice::IsRemotePath(prefix);
  if (remote && cache_dir.empty()) {
    cache_dir =
        (std::filesystem::temp_directory_path() / "sluice-object-store-demo-cache").string();
    std::filesystem::remove_all(cache_dir);
  }
  if (remote) Check(sluice::SetRemoteCache({.dir = cache_dir, .max_bytes = 64 << 20}));

  Check(sluice::CreateDirs(prefix));
  WriteShards(prefix);
  const std::string pattern = sluice::JoinPath(prefix, "train-*.tfrecord");
  std::vector<std::string> files;
  for (const sluice::Element& e : sluice::Dataset::list_files(pattern)) {
    files.emplace_back(e[0].scalar<std::string_view>());
  }
  std::printf("wrote %d shards of %d examples under %s; list_files matched %zu\n", kShards,
              kPerShard, prefix.c_str(), files.size());

  for (int epoch = 1; epoch <= 2; ++epoch) {
    const sluice::RemoteCacheStats before = sluice::GetRemoteCacheStats();
    sluice::Iterator it = Check(Pipeline(files).iterator());
    auto [n, sum] = Drain(it);
    std::printf("epoch %d: %lld examples, label sum %lld", epoch, static_cast<long long>(n),
                static_cast<long long>(sum));
    if (remote) {
      const sluice::RemoteCacheStats after = sluice::GetRemoteCacheStats();
      std::printf(" (remote cache: %llu opens from the store, %llu from disk)",
                  static_cast<unsigned long long>(after.misses - before.misses),
                  static_cast<unsigned long long>(after.hits - before.hits));
    }
    std::printf("\n");
  }

  // An iterator checkpoint beside the data: half an epoch, saved, resumed.
  sluice::Iterator it = Check(Pipeline(files).iterator());
  for (int b = 0; b < 8; ++b) Check(it.next());
  const std::string state_path = sluice::JoinPath(prefix, "iterator.state");
  Check(sluice::WriteFileAtomically(state_path, Check(it.save())));
  sluice::Iterator resumed = Check(Pipeline(files).iterator());
  Check(resumed.restore(Check(sluice::ReadFileToString(state_path))));
  auto [rest, rest_sum] = Drain(resumed);
  auto [expected, expected_sum] = Drain(it);
  std::printf(
      "resumed from %s: %lld examples left, %s\n", state_path.c_str(), static_cast<long long>(rest),
      rest == expected && rest_sum == expected_sum ? "the same as without the checkpoint"
                                                   : "DIFFERENT from the uninterrupted run");
  return rest == expected && rest_sum == expected_sum ? 0 : 1;
}
