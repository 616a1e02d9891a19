// ConvertManifest: PREFIX-manifest.json, what a `sluice convert` into PREFIX
// is and how far it got, so that `--resume` continues only the same
// conversion and keeps only shards that are whole.
//
//   {"manifest": "sluice convert", "version": 1, "command": "convert images",
//    "options": {"input": "...", "--shards": "8", "--seed": "3", ...},
//    "shards": 8,
//    "complete": [{"shard": 0, "file": "train-00000-of-00008.tfrecord",
//                  "records": 1250, "bytes": 4812391, "crc32c": "1a2b3c4d"}, ...]}
//
// `options` holds what decides the output's bytes (a fingerprint of the
// input, and the options that change what is written), never what does not
// (--workers, --sync, the task split). `complete` lists the shards whose
// file was published, with its size and CRC-32C as written. The file is
// rewritten atomically (OutputFile; core/json_writer.h writes the text)
// as shards complete (convert_output.h says how often), under the
// ConvertLock's manifest lock, so that several tasks add their shards to
// one manifest. docs/convert.md, "Interruption and --resume".
//
// Plain data and functions; thread-compatible.
#ifndef SLUICE_TOOLS_CONVERT_MANIFEST_H_
#define SLUICE_TOOLS_CONVERT_MANIFEST_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "sluice/core/result.h"

namespace sluice::tools {

struct ConvertManifest {
  struct Shard {
    std::string file;  // base name
    uint64_t records = 0;
    uint64_t bytes = 0;   // of the file
    uint32_t crc32c = 0;  // of the file's bytes
    friend bool operator==(const Shard&, const Shard&) = default;
  };
  std::string command;                         // "convert images"
  std::map<std::string, std::string> options;  // name -> value ("" when not given)
  size_t shards = 0;                           // in the plan
  std::map<size_t, Shard> complete;            // by shard number

  // Whether `other` describes the same conversion (command, options, plan).
  bool SameConversion(const ConvertManifest& other) const;
  // What differs, as the user gave it: "--seed 3 (now 4), --resize 160x160 (now not given)".
  std::string Differences(const ConvertManifest& now) const;
};

// "PREFIX-manifest.json".
std::string ManifestPath(const std::string& prefix);

// The manifest at `path`: nullopt if there is none, DataLoss naming the
// file if it is not one (a 16 MiB cap keeps a wrong file from being read whole).
Result<std::optional<ConvertManifest>> ReadManifest(const std::string& path);
// The manifest in `text`; DataLoss naming `name` and what is wrong.
Result<ConvertManifest> ParseManifest(std::string_view text, const std::string& name);
// Its text, as WriteManifest writes it.
std::string ManifestText(const ConvertManifest& manifest);
// Writes it atomically (fsynced with `sync`).
Status WriteManifest(const std::string& path, const ConvertManifest& manifest, bool sync);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_CONVERT_MANIFEST_H_
