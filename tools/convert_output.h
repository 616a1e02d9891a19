// PrepareConversion: what a `sluice convert` does to PREFIX before it writes
// a shard, and the manifest's updates while it runs.
//
//  1. Takes the ConvertLock (convert_lock.h): the conversion's lock (shared
//     with the other tasks of the same conversion) and each shard's that
//     this run writes. Another run writing them makes it fail at once,
//     naming that process.
//  2. Reads PREFIX-manifest.json (convert_manifest.h). With --resume it must
//     record the same conversion (else FailedPrecondition naming the options
//     that differ); without --resume a new conversion replaces it.
//  3. Refuses shard files of PREFIX that this conversion does not write
//     (an earlier run with another --shards count or compression: a glob
//     PREFIX-* would read both), or with --overwrite deletes them.
//  4. With --resume, keeps a shard only if the manifest records it
//     complete and its file has the recorded size (and, with --index, its
//     .idx names that size and CRC-32C); every other shard is written again.
//  5. Writes the manifest. RecordShard() adds each shard that completes,
//     rewriting the manifest at most every kManifestFlushInterval (a run of
//     many shards would otherwise write it quadratically often), and
//     Flush() adds the rest when the run ends. A shard the manifest does not
//     list yet is simply written again by a --resume.
//
// ConvertOutput is thread-safe (RecordShard is called from the workers).
#ifndef SLUICE_TOOLS_CONVERT_OUTPUT_H_
#define SLUICE_TOOLS_CONVERT_OUTPUT_H_

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "convert_command.h"
#include "convert_lock.h"
#include "convert_manifest.h"
#include "convert_runner.h"

namespace sluice::tools {

// How often RecordShard() rewrites the manifest at most.
inline constexpr std::chrono::seconds kManifestFlushInterval{1};

class ConvertOutput {
 public:
  // Shards that are complete already and are kept (resume); sized to the plan.
  const std::vector<bool>& keep() const { return keep_; }
  // What was found and done, one line each, for the summary.
  const std::vector<std::string>& notes() const { return notes_; }
  // Records shard `shard` as complete in the manifest (now, or at the next
  // rewrite).
  Status RecordShard(size_t shard, const ShardWritten& written);
  // Writes what RecordShard() has not written yet. Call when the run ends,
  // however it ended.
  Status Flush();

 private:
  friend Result<std::unique_ptr<ConvertOutput>> PrepareConversion(const ConvertCommonOptions&,
                                                                  const ConvertTask&,
                                                                  ConvertManifest);
  ConvertOutput(ConvertLock lock, std::string manifest_path, ConvertManifest wanted, bool sync)
      : lock_(std::move(lock)),
        path_(std::move(manifest_path)),
        wanted_(std::move(wanted)),
        sync_(sync) {}

  Status FlushLocked();

  std::mutex mu_;  // fcntl locks do not exclude this process's own threads; guards:
  std::map<size_t, ConvertManifest::Shard> pending_;  // complete, not in the file yet
  std::chrono::steady_clock::time_point last_flush_;
  ConvertLock lock_;
  std::string path_;
  ConvertManifest wanted_;  // this conversion, without shards
  bool sync_;
  std::vector<bool> keep_;
  std::vector<std::string> notes_;
};

// `wanted`: the command, the options that decide the output and the shard
// count (its `complete` is ignored). REQUIRES: PrepareOutputPrefix(o.out) succeeded.
Result<std::unique_ptr<ConvertOutput>> PrepareConversion(const ConvertCommonOptions& o,
                                                         const ConvertTask& task,
                                                         ConvertManifest wanted);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_CONVERT_OUTPUT_H_
