#include "convert_manifest.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <cstdint>

#include <fmt/format.h>

#include "sluice/core/file.h"
#include "sluice/core/json_writer.h"

namespace sluice::tools {
namespace {

constexpr int kVersion = 1;
constexpr int64_t kMaxManifestBytes = int64_t{16} << 20;
// Counts and sizes a manifest may hold: what a file can have (2^63 - 1).
constexpr uint64_t kMaxCount = uint64_t{INT64_MAX};

std::string Shown(const std::string& value) { return value.empty() ? "not given" : value; }

}  // namespace

bool ConvertManifest::SameConversion(const ConvertManifest& other) const {
  return command == other.command && options == other.options && shards == other.shards;
}

std::string ConvertManifest::Differences(const ConvertManifest& now) const {
  std::string out;
  const auto add = [&](const std::string& text) { out += (out.empty() ? "" : ", ") + text; };
  if (command != now.command) add(fmt::format("sluice {} (now sluice {})", command, now.command));
  std::map<std::string, std::string> keys = options;
  keys.insert(now.options.begin(), now.options.end());
  for (const auto& [name, ignored] : keys) {
    const auto a = options.find(name), b = now.options.find(name);
    const std::string was = a == options.end() ? "" : a->second;
    const std::string is = b == now.options.end() ? "" : b->second;
    if (was == is) continue;
    if (name == "input") {
      add(fmt::format("the input ({}; now {})", Shown(was), Shown(is)));
    } else {
      add(fmt::format("{} {} (now {})", name, Shown(was), Shown(is)));
    }
  }
  if (shards != now.shards) add(fmt::format("{} shards (now {})", shards, now.shards));
  return out;
}

std::string ManifestPath(const std::string& prefix) { return prefix + "-manifest.json"; }

Result<std::optional<ConvertManifest>> ReadManifest(const std::string& path) {
  Result<std::string> text = ReadFileToString(path, kMaxManifestBytes);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) return std::optional<ConvertManifest>();
    return text.status();
  }
  SLUICE_ASSIGN_OR_RETURN(ConvertManifest m, ParseManifest(*text, path));
  return std::optional<ConvertManifest>(std::move(m));
}

Result<ConvertManifest> ParseManifest(std::string_view text, const std::string& path) {
  const auto bad = [&](std::string_view why) {
    return Status::DataLoss(fmt::format("{} is not a sluice convert manifest: {}", path, why));
  };
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  // Every member's type is checked before it is read: nlohmann throws on a
  // wrong one (convert_manifest_fuzz found `"manifest": []`).
  if (!j.contains("manifest") || !j["manifest"].is_string() ||
      j["manifest"].get<std::string>() != "sluice convert") {
    return bad("no \"manifest\": \"sluice convert\"");
  }
  if (!j.contains("version") || !j["version"].is_number_integer() || j["version"] != kVersion) {
    return bad(fmt::format("version is not {}", kVersion));
  }
  ConvertManifest m;
  if (!j.contains("command") || !j["command"].is_string()) return bad("no command");
  m.command = j["command"].get<std::string>();
  if (!j.contains("options") || !j["options"].is_object()) return bad("no options");
  for (const auto& [name, value] : j["options"].items()) {
    if (!value.is_string()) return bad("option " + name + " is not a string");
    m.options[name] = value.get<std::string>();
  }
  if (!j.contains("shards") || !j["shards"].is_number_unsigned()) return bad("no shard count");
  m.shards = j["shards"].get<size_t>();
  if (m.shards > kMaxCount) return bad("an impossible shard count");
  if (!j.contains("complete") || !j["complete"].is_array()) return bad("no complete list");
  for (const auto& s : j["complete"]) {
    if (!s.is_object() || !s.contains("shard") || !s["shard"].is_number_unsigned() ||
        !s.contains("file") || !s["file"].is_string() || !s.contains("records") ||
        !s["records"].is_number_unsigned() || !s.contains("bytes") ||
        !s["bytes"].is_number_unsigned() || !s.contains("crc32c") || !s["crc32c"].is_string()) {
      return bad("a malformed entry in \"complete\"");
    }
    ConvertManifest::Shard shard;
    const size_t number = s["shard"].get<size_t>();
    if (number >= m.shards) return bad(fmt::format("shard {} of {}", number, m.shards));
    shard.file = s["file"].get<std::string>();
    shard.records = s["records"].get<uint64_t>();
    shard.bytes = s["bytes"].get<uint64_t>();
    if (shard.records > kMaxCount || shard.bytes > kMaxCount) return bad("an impossible size");
    const std::string crc = s["crc32c"].get<std::string>();
    auto [ptr, ec] = std::from_chars(crc.data(), crc.data() + crc.size(), shard.crc32c, 16);
    if (crc.size() != 8 || ec != std::errc() || ptr != crc.data() + crc.size()) {
      return bad("a malformed crc32c");
    }
    m.complete[number] = std::move(shard);
  }
  return m;
}

std::string ManifestText(const ConvertManifest& m) {
  JsonWriter w({.indent = 1});
  w.BeginObject();
  w.Key("manifest").String("sluice convert");
  w.Key("version").Int(kVersion);
  w.Key("command").String(m.command);
  w.Key("options").BeginObject();
  for (const auto& [name, value] : m.options) w.Key(name).String(value);
  w.EndObject();
  w.Key("shards").Int(static_cast<int64_t>(m.shards));
  w.Key("complete").BeginArray();
  for (const auto& [number, s] : m.complete) {
    w.BeginObject(/*one_line=*/true);
    w.Key("shard").Int(static_cast<int64_t>(number));
    w.Key("file").String(s.file);  // bytes that are not UTF-8 become U+FFFD
    w.Key("records").Int(static_cast<int64_t>(s.records));
    w.Key("bytes").Int(static_cast<int64_t>(s.bytes));
    w.Key("crc32c").String(fmt::format("{:08x}", s.crc32c));
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return w.Take() + "\n";
}

Status WriteManifest(const std::string& path, const ConvertManifest& m, bool sync) {
  const std::string text = ManifestText(m);
  OutputFileOptions file_options;
  file_options.sync = sync;
  return WriteFileAtomically(path, text, file_options);
}

}  // namespace sluice::tools
