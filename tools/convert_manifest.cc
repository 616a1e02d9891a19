#include "convert_manifest.h"

#include <nlohmann/json.hpp>

#include <charconv>

#include <fmt/format.h>

#include "sluice/core/file.h"

namespace sluice::tools {
namespace {

constexpr int kVersion = 1;
constexpr int64_t kMaxManifestBytes = int64_t{16} << 20;

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
  nlohmann::ordered_json j;
  j["manifest"] = "sluice convert";
  j["version"] = kVersion;
  j["command"] = m.command;
  nlohmann::ordered_json options = nlohmann::ordered_json::object();
  for (const auto& [name, value] : m.options) options[name] = value;
  j["options"] = std::move(options);
  j["shards"] = m.shards;
  nlohmann::ordered_json complete = nlohmann::ordered_json::array();
  for (const auto& [number, s] : m.complete) {
    nlohmann::ordered_json e;
    e["shard"] = number;
    e["file"] = s.file;
    e["records"] = s.records;
    e["bytes"] = s.bytes;
    e["crc32c"] = fmt::format("{:08x}", s.crc32c);
    complete.push_back(std::move(e));
  }
  j["complete"] = std::move(complete);
  // Bytes that are not UTF-8 (file names) are replaced rather than refused.
  return j.dump(1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

Status WriteManifest(const std::string& path, const ConvertManifest& m, bool sync) {
  const std::string text = ManifestText(m);
  OutputFileOptions file_options;
  file_options.sync = sync;
  return WriteFileAtomically(path, text, file_options);
}

}  // namespace sluice::tools
