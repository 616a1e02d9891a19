#include "sluice/pipeline/internal/snapshot_format.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "sluice/core/file.h"
#include "sluice/core/json_writer.h"
#include "sluice/pipeline/internal/fingerprint.h"
#include "sluice/pipeline/snapshot.h"

namespace sluice::pipeline_internal {
namespace {

using nlohmann::json;

// Deepest nesting a valid metadata file has (object > array > object >
// array): refusing deeper text before parsing bounds the parser's work.
constexpr int kMaxDepth = 8;

bool TooDeep(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxDepth) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

Status Bad(std::string_view what, const std::string& why) {
  return Status::DataLoss("snapshot metadata " + std::string(what) + ": " + why);
}

Result<const json*> Field(const json& obj, const char* key, json::value_t type,
                          std::string_view what) {
  auto it = obj.find(key);
  if (it == obj.end()) return Bad(what, std::string("no \"") + key + "\"");
  const bool ok = type == json::value_t::number_integer
                      ? it->is_number_integer()
                      : (type == json::value_t::null ? true : it->type() == type);
  if (!ok) return Bad(what, std::string("\"") + key + "\" has the wrong type");
  return &*it;
}

Result<int64_t> Count(const json& obj, const char* key, std::string_view what) {
  SLUICE_ASSIGN_OR_RETURN(const json* v, Field(obj, key, json::value_t::number_integer, what));
  // Unsigned values above INT64_MAX parse as number_unsigned and wrap.
  if (v->is_number_unsigned() && v->get<uint64_t>() > uint64_t{INT64_MAX}) {
    return Bad(what, std::string("\"") + key + "\" is out of range");
  }
  const int64_t n = v->get<int64_t>();
  if (n < 0) return Bad(what, std::string("\"") + key + "\" is negative");
  return n;
}

Result<ElementSpec> ParseSpec(const json& v, std::string_view what) {
  if (v.is_null()) return ElementSpec::Unknown();
  if (!v.is_array()) return Bad(what, "\"element_spec\" is not a list or null");
  if (v.size() > 100000) return Bad(what, "\"element_spec\" has too many components");
  std::vector<ComponentSpec> comps;
  for (const json& c : v) {
    if (!c.is_object()) return Bad(what, "a component spec is not an object");
    SLUICE_ASSIGN_OR_RETURN(const json* name, Field(c, "name", json::value_t::string, what));
    SLUICE_ASSIGN_OR_RETURN(const json* dtype, Field(c, "dtype", json::value_t::string, what));
    SLUICE_ASSIGN_OR_RETURN(const json* shape, Field(c, "shape", json::value_t::null, what));
    Result<DType> dt = DTypeFromName(dtype->get_ref<const std::string&>());
    if (!dt.ok()) return Bad(what, "unknown dtype \"" + dtype->get<std::string>() + "\"");
    Shape s = Shape::UnknownRank();
    if (!shape->is_null()) {
      if (!shape->is_array() || shape->size() > 32) {
        return Bad(what, "a shape is not a list of at most 32 dimensions or null");
      }
      std::vector<int64_t> dims;
      for (const json& d : *shape) {
        if (d.is_null()) {
          dims.push_back(Shape::kUnknownDim);
        } else if (d.is_number_integer() && !d.is_number_unsigned()) {
          return Bad(what, "a dimension is negative");
        } else if (d.is_number_unsigned() && d.get<uint64_t>() <= uint64_t{INT64_MAX}) {
          dims.push_back(d.get<int64_t>());
        } else {
          return Bad(what, "a dimension is not a count or null");
        }
      }
      s = Shape(dims);
    }
    comps.push_back({name->get<std::string>(), *dt, std::move(s)});
  }
  return ElementSpec(std::move(comps));
}

// The checks both files share: size, depth, JSON, an object of `format` at
// kSnapshotVersion.
Result<json> ParseDocument(std::string_view text, std::string_view what, std::string_view format) {
  if (static_cast<int64_t>(text.size()) > kMaxSnapshotMetadataBytes) {
    return Bad(what, "larger than " + std::to_string(kMaxSnapshotMetadataBytes) + " bytes");
  }
  if (TooDeep(text)) return Bad(what, "nested too deeply");
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Bad(what, "not JSON (truncated or corrupt)");
  if (!doc.is_object()) return Bad(what, "not a JSON object");
  SLUICE_ASSIGN_OR_RETURN(const json* name, Field(doc, "format", json::value_t::string, what));
  if (name->get_ref<const std::string&>() != format) {
    return Bad(what, "\"format\" is not \"" + std::string(format) + "\"");
  }
  SLUICE_ASSIGN_OR_RETURN(int64_t version, Count(doc, "version", what));
  if (version != kSnapshotVersion) {
    return Bad(what, "version " + std::to_string(version) + " (this sluice reads version " +
                         std::to_string(kSnapshotVersion) + ")");
  }
  return doc;
}

Result<uint64_t> Hex64(const json& doc, const char* key, std::string_view what) {
  SLUICE_ASSIGN_OR_RETURN(const json* v, Field(doc, key, json::value_t::string, what));
  const std::string& t = v->get_ref<const std::string&>();
  if (t.size() != 16 || t.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return Bad(what, std::string("\"") + key + "\" is not 16 hex digits");
  }
  return std::stoull(t, nullptr, 16);
}

void WriteSpec(JsonWriter& w, const ElementSpec& spec) {
  w.Key("element_spec");
  if (!spec.known()) {
    w.Null();
  } else {
    w.BeginArray();
    for (const ComponentSpec& c : spec.components()) {
      w.BeginObject(/*one_line=*/true);
      w.Key("name").String(c.name);
      w.Key("dtype").String(DTypeName(c.dtype));
      w.Key("shape");
      if (c.shape.unknown_rank()) {
        w.Null();
      } else {
        w.BeginArray(true);
        for (int64_t d : c.shape.dims()) d < 0 ? w.Null() : w.Int(d);
        w.EndArray();
      }
      w.EndObject();
    }
    w.EndArray();
  }
}

}  // namespace

std::string SnapshotPartialFileName(int64_t id) {
  return "." + SnapshotShardFileName(id) + std::string(kSnapshotPartialSuffix);
}

std::string EncodeSnapshotProgress(const SnapshotProgress& p) {
  JsonWriter w({.indent = 2});
  w.BeginObject();
  w.Key("format").String(kSnapshotProgressFormat);
  w.Key("version").Int(kSnapshotVersion);
  w.Key("fingerprint").String(FingerprintHex(p.fingerprint));
  w.Key("run").String(FingerprintHex(p.run));
  w.Key("sharding").Int(p.sharding);
  w.Key("num_elements").Int(p.num_elements);
  WriteSpec(w, p.element_spec);
  w.Key("shards").BeginArray();
  for (const SnapshotProgressShard& s : p.shards) {
    w.BeginObject(true);
    w.Key("id").Int(s.id);
    w.Key("file").String(s.file);
    w.Key("bytes").Int(s.bytes);
    w.Key("num_elements").Int(s.num_elements);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return w.Take() + "\n";
}

// The "shards" array both files hold: at most kMaxSnapshotShards objects
// in ascending id order, each naming the file name_of(id), whose elements
// add up to `num_elements`; `extra(s, shard)` reads and checks a file's own
// fields.
template <typename Shard, typename Extra>
Result<std::vector<Shard>> ParseShards(const json& doc, std::string_view what, int64_t num_elements,
                                       std::string (*name_of)(int64_t), Extra extra) {
  SLUICE_ASSIGN_OR_RETURN(const json* shards, Field(doc, "shards", json::value_t::array, what));
  if (static_cast<int64_t>(shards->size()) > kMaxSnapshotShards) {
    return Bad(what, "more than " + std::to_string(kMaxSnapshotShards) + " shards");
  }
  std::vector<Shard> out;
  int64_t total = 0;
  for (const json& s : *shards) {
    if (!s.is_object()) return Bad(what, "a shard is not an object");
    Shard shard;
    SLUICE_ASSIGN_OR_RETURN(shard.id, Count(s, "id", what));
    SLUICE_ASSIGN_OR_RETURN(const json* file, Field(s, "file", json::value_t::string, what));
    shard.file = file->get<std::string>();
    SLUICE_ASSIGN_OR_RETURN(shard.num_elements, Count(s, "num_elements", what));
    if (shard.file != name_of(shard.id)) {
      return Bad(what, "shard " + std::to_string(shard.id) + " names the file \"" + shard.file +
                           "\", not \"" + name_of(shard.id) + "\"");
    }
    if (!out.empty() && shard.id <= out.back().id) {
      return Bad(what, "shard ids are not in ascending order");
    }
    if (shard.num_elements > num_elements - total) {
      return Bad(what, "the shards hold more elements than \"num_elements\"");
    }
    SLUICE_RETURN_IF_ERROR(extra(s, shard));
    total += shard.num_elements;
    out.push_back(std::move(shard));
  }
  if (total != num_elements) {
    return Bad(what, "the shards hold " + std::to_string(total) +
                         " elements, \"num_elements\" says " + std::to_string(num_elements));
  }
  return out;
}

Result<SnapshotProgress> ParseSnapshotProgress(std::string_view text, std::string_view what) {
  SLUICE_ASSIGN_OR_RETURN(const json doc, ParseDocument(text, what, kSnapshotProgressFormat));
  SnapshotProgress p;
  SLUICE_ASSIGN_OR_RETURN(p.fingerprint, Hex64(doc, "fingerprint", what));
  SLUICE_ASSIGN_OR_RETURN(p.run, Hex64(doc, "run", what));
  SLUICE_ASSIGN_OR_RETURN(p.sharding, Count(doc, "sharding", what));
  SLUICE_ASSIGN_OR_RETURN(const json* spec, Field(doc, "element_spec", json::value_t::null, what));
  SLUICE_ASSIGN_OR_RETURN(p.element_spec, ParseSpec(*spec, what));
  SLUICE_ASSIGN_OR_RETURN(p.num_elements, Count(doc, "num_elements", what));
  SLUICE_ASSIGN_OR_RETURN(p.shards, ParseShards<SnapshotProgressShard>(
                                        doc, what, p.num_elements, SnapshotPartialFileName,
                                        [&](const json& s, SnapshotProgressShard& shard) -> Status {
                                          SLUICE_ASSIGN_OR_RETURN(shard.bytes,
                                                                  Count(s, "bytes", what));
                                          // Each record takes at least its 16 bytes of framing.
                                          if (shard.num_elements > shard.bytes / 16) {
                                            return Bad(what, "shard " + std::to_string(shard.id) +
                                                                 " is too short for its records");
                                          }
                                          return Status::OK();
                                        }));
  return p;
}

Result<SnapshotProgress> ReadSnapshotProgress(const std::string& dir) {
  const std::string path = dir + "/" + std::string(kSnapshotProgressFile);
  Result<std::string> text = ReadFileToString(path, kMaxSnapshotMetadataBytes);
  if (!text.ok()) return text.status();
  return ParseSnapshotProgress(*text, path);
}

Status WriteSnapshotProgress(const std::string& dir, const SnapshotProgress& p) {
  return WriteFileAtomically(dir + "/" + std::string(kSnapshotProgressFile),
                             EncodeSnapshotProgress(p));
}

std::string SnapshotShardFileName(int64_t id) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%05lld", static_cast<long long>(id));
  return std::string(kSnapshotShardPrefix) + buf + std::string(kSnapshotShardSuffix);
}

std::string EncodeSnapshotMetadata(const SnapshotMetadata& m) {
  JsonWriter w({.indent = 2});
  w.BeginObject();
  w.Key("format").String(kSnapshotFormat);
  w.Key("version").Int(kSnapshotVersion);
  w.Key("complete").Bool(m.complete);
  w.Key("fingerprint").String(FingerprintHex(m.fingerprint));
  w.Key("compression").String(CompressionName(m.compression));
  w.Key("num_elements").Int(m.num_elements);
  WriteSpec(w, m.element_spec);
  w.Key("shards").BeginArray();
  for (const SnapshotShard& s : m.shards) {
    w.BeginObject(true);
    w.Key("id").Int(s.id);
    w.Key("file").String(s.file);
    w.Key("num_elements").Int(s.num_elements);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return w.Take() + "\n";
}

Result<SnapshotMetadata> ParseSnapshotMetadata(std::string_view text, std::string_view what) {
  SLUICE_ASSIGN_OR_RETURN(const json doc, ParseDocument(text, what, kSnapshotFormat));
  SnapshotMetadata m;
  SLUICE_ASSIGN_OR_RETURN(const json* complete,
                          Field(doc, "complete", json::value_t::boolean, what));
  m.complete = complete->get<bool>();
  SLUICE_ASSIGN_OR_RETURN(const json* fp, Field(doc, "fingerprint", json::value_t::string, what));
  const std::string& fps = fp->get_ref<const std::string&>();
  if (fps.size() != 16 || fps.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return Bad(what, "\"fingerprint\" is not 16 hex digits");
  }
  m.fingerprint = std::stoull(fps, nullptr, 16);
  SLUICE_ASSIGN_OR_RETURN(const json* comp, Field(doc, "compression", json::value_t::string, what));
  Result<Compression> c = ParseCompression(comp->get_ref<const std::string&>());
  if (!c.ok() || *c == Compression::kAuto) return Bad(what, "unknown \"compression\"");
  m.compression = *c;
  SLUICE_ASSIGN_OR_RETURN(m.num_elements, Count(doc, "num_elements", what));
  SLUICE_ASSIGN_OR_RETURN(const json* spec, Field(doc, "element_spec", json::value_t::null, what));
  SLUICE_ASSIGN_OR_RETURN(m.element_spec, ParseSpec(*spec, what));
  SLUICE_ASSIGN_OR_RETURN(m.shards, ParseShards<SnapshotShard>(
                                        doc, what, m.num_elements, SnapshotShardFileName,
                                        [](const json&, SnapshotShard&) { return Status::OK(); }));
  return m;
}

Result<SnapshotMetadata> ReadSnapshotMetadata(const std::string& dir) {
  const std::string path = dir + "/" + std::string(kSnapshotMetadataFile);
  Result<std::string> text = ReadFileToString(path, kMaxSnapshotMetadataBytes);
  if (!text.ok()) return text.status();
  return ParseSnapshotMetadata(*text, path);
}

Status WriteSnapshotMetadata(const std::string& dir, const SnapshotMetadata& m) {
  return WriteFileAtomically(dir + "/" + std::string(kSnapshotMetadataFile),
                             EncodeSnapshotMetadata(m));
}

Status RemoteSnapshotError(std::string_view stage, const std::string& path) {
  return Status::FailedPrecondition(
      std::string(stage) + ": " + path +
      ": snapshot, save and load folders must be on a local disk (they lock, append and rename "
      "files, which object stores cannot); save to a local folder and copy it, or use "
      "cache(filename), which writes to object stores");
}

}  // namespace sluice::pipeline_internal
