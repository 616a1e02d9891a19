#include "example_json_shape.h"

#include <string>
#include <vector>

#include <fmt/format.h>

namespace sluice::tools {
namespace {

// What a JSON value at some place of the message is.
enum class Role {
  kMessage,      // an object whose keys are fields
  kMap,          // map<string, ...>: every key is a user's name
  kValueList,    // "value": an array of plain values
  kFeatureList,  // a FeatureList's "feature": an array of Feature objects
  kPlain,        // a string, number or literal
  kAny,          // an unknown field: protobuf reports it
};

// Which message a kMessage object is, so that its keys get their roles.
enum class Msg { kExample, kSequenceExample, kFeatures, kFeature, kList, kFeatureLists, kFeatureListMsg, kNone };

struct Place {
  Role role;
  Msg msg;
};

bool Is(std::string_view key, std::string_view camel, std::string_view snake) {
  return key == camel || key == snake;
}

// The role of field `key` of message `msg`.
Place FieldOf(Msg msg, std::string_view key) {
  switch (msg) {
    case Msg::kExample:
      if (key == "features") return {Role::kMessage, Msg::kFeatures};
      break;
    case Msg::kSequenceExample:
      if (key == "context") return {Role::kMessage, Msg::kFeatures};
      if (Is(key, "featureLists", "feature_lists")) return {Role::kMessage, Msg::kFeatureLists};
      break;
    case Msg::kFeatures:
      if (key == "feature") return {Role::kMap, Msg::kFeature};
      break;
    case Msg::kFeature:
      if (Is(key, "bytesList", "bytes_list") || Is(key, "floatList", "float_list") ||
          Is(key, "int64List", "int64_list")) {
        return {Role::kMessage, Msg::kList};
      }
      break;
    case Msg::kList:
      if (key == "value") return {Role::kValueList, Msg::kNone};
      break;
    case Msg::kFeatureLists:
      if (Is(key, "featureList", "feature_list")) return {Role::kMap, Msg::kFeatureListMsg};
      break;
    case Msg::kFeatureListMsg:
      if (key == "feature") return {Role::kFeatureList, Msg::kFeature};
      break;
    case Msg::kNone: break;
  }
  return {Role::kAny, Msg::kNone};
}

class ShapeChecker {
 public:
  explicit ShapeChecker(std::string_view json) : s_(json) {}

  Status Check(Msg top) {
    SkipSpace();
    return Value({Role::kMessage, top}, "$", 0);
  }

 private:
  Status Error(const std::string& path, std::string_view what) {
    return Status::InvalidArgument(fmt::format("{}: {}", path, what));
  }

  static std::string_view Kind(char c) {
    if (c == '[') return "an array";
    if (c == '{') return "an object";
    if (c == '"') return "a string";
    return "a plain value";
  }

  Status Value(Place place, const std::string& path, int depth) {
    if (depth > kMaxJsonDepth) {
      return Error(path, fmt::format("nested deeper than {} levels", kMaxJsonDepth));
    }
    if (i_ >= s_.size()) return Status::OK();  // malformed: protobuf says so
    const char c = s_[i_];
    switch (place.role) {
      case Role::kValueList:
        if (c != '[') {
          return Error(path, fmt::format("{} where a list of values belongs (write [..] even "
                                         "for one value)",
                                         Kind(c)));
        }
        return Array({Role::kPlain, Msg::kNone}, path, depth);
      case Role::kFeatureList:
        if (c != '[') {
          return Error(path, fmt::format("{} where a list of features belongs", Kind(c)));
        }
        return Array({Role::kMessage, place.msg}, path, depth);
      case Role::kPlain:
        if (c == '[' || c == '{') {
          return Error(path, fmt::format("{} inside a list of values (lists do not nest)", Kind(c)));
        }
        return Scalar();
      case Role::kMessage:
      case Role::kMap:
        if (c == '[') return Error(path, "an array where an object belongs");
        if (c == '{') return Object(place, path, depth);
        return Scalar();  // protobuf names the type error
      case Role::kAny:
        if (c == '[') return Array({Role::kAny, Msg::kNone}, path, depth);
        if (c == '{') return Object({Role::kMessage, Msg::kNone}, path, depth);
        return Scalar();
    }
    return Status::OK();
  }

  Status Object(Place place, const std::string& path, int depth) {
    ++i_;  // '{'
    SkipSpace();
    if (Peek('}')) return Status::OK();
    while (i_ < s_.size()) {
      if (s_[i_] != '"') return Status::OK();  // malformed
      std::string key;
      if (!String(&key)) return Status::OK();
      SkipSpace();
      if (!Peek(':')) return Status::OK();
      SkipSpace();
      const Place child = place.role == Role::kMap ? Place{Role::kMessage, place.msg}
                                                   : FieldOf(place.msg, key);
      const std::string child_path = place.role == Role::kMap
                                         ? fmt::format("{}[\"{}\"]", path, Printable(key))
                                         : fmt::format("{}.{}", path, Printable(key));
      SLUICE_RETURN_IF_ERROR(Value(child, child_path, depth + 1));
      SkipSpace();
      if (Peek(',')) {
        SkipSpace();
        continue;
      }
      return Status::OK();  // '}' or malformed
    }
    return Status::OK();
  }

  Status Array(Place element, const std::string& path, int depth) {
    ++i_;  // '['
    SkipSpace();
    if (Peek(']')) return Status::OK();
    for (size_t n = 0; i_ < s_.size(); ++n) {
      SLUICE_RETURN_IF_ERROR(Value(element, fmt::format("{}[{}]", path, n), depth + 1));
      SkipSpace();
      if (Peek(',')) {
        SkipSpace();
        continue;
      }
      return Status::OK();
    }
    return Status::OK();
  }

  Status Scalar() {
    if (i_ < s_.size() && s_[i_] == '"') {
      std::string ignored;
      String(&ignored);
      return Status::OK();
    }
    while (i_ < s_.size() && s_[i_] != ',' && s_[i_] != '}' && s_[i_] != ']' && s_[i_] != ' ' &&
           s_[i_] != '\t' && s_[i_] != '\r' && s_[i_] != '\n') {
      ++i_;
    }
    return Status::OK();
  }

  // A string's raw text (escapes kept as written: keys are only compared
  // with plain ASCII names, and shown).
  bool String(std::string* out) {
    ++i_;  // '"'
    while (i_ < s_.size()) {
      const char c = s_[i_++];
      if (c == '"') return true;
      if (c == '\\' && i_ < s_.size()) {
        out->push_back(c);
        out->push_back(s_[i_++]);
        continue;
      }
      out->push_back(c);
    }
    return false;
  }

  static std::string Printable(const std::string& key) {
    std::string out;
    for (unsigned char c : key.substr(0, 64)) {
      if (c < 0x20 || c == 0x7f) {
        out += fmt::format("\\x{:02x}", c);
      } else {
        out += static_cast<char>(c);
      }
    }
    if (key.size() > 64) out += "...";
    return out;
  }

  bool Peek(char c) {
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }

  void SkipSpace() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\r' || s_[i_] == '\n')) {
      ++i_;
    }
  }

  std::string_view s_;
  size_t i_ = 0;
};

}  // namespace

Status CheckExampleJsonShape(std::string_view json, ProtoType type) {
  ShapeChecker checker(json);
  return checker.Check(type == ProtoType::kExample ? Msg::kExample : Msg::kSequenceExample);
}

}  // namespace sluice::tools
