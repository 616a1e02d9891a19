#include "example_json.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "example_json_shape.h"
#include "sluice/records/proto/example.pb.h"

namespace sluice::tools {
namespace {

namespace pb = google::protobuf;
using sluice::proto::Feature;
using sluice::proto::Features;

std::unique_ptr<pb::Message> NewMessage(ProtoType type) {
  if (type == ProtoType::kExample) return std::make_unique<sluice::proto::Example>();
  return std::make_unique<sluice::proto::SequenceExample>();
}

std::string SerializeDeterministic(const pb::Message& m) {
  std::string out;
  {
    pb::io::StringOutputStream stream(&out);
    pb::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    m.SerializeToCodedStream(&coded);
  }
  return out;
}

// The canonical proto3 JSON mapping, written by hand so that floats use the
// shortest text that reads back as the same float32 (as python does), -0.0
// keeps its sign (protobuf's C++ parser reads "-0" as the integer 0), and map
// keys come out sorted.
class JsonWriter {
 public:
  std::string Take() { return std::move(out_); }

  void Example(const sluice::proto::Example& ex) {
    out_ += '{';
    if (ex.has_features()) {
      out_ += "\"features\":";
      FeaturesMsg(ex.features());
    }
    out_ += '}';
  }

  void SequenceExample(const sluice::proto::SequenceExample& ex) {
    out_ += '{';
    bool first = true;
    if (ex.has_context()) {
      out_ += "\"context\":";
      FeaturesMsg(ex.context());
      first = false;
    }
    if (ex.has_feature_lists()) {
      if (!first) out_ += ',';
      out_ += "\"featureLists\":{";
      const auto& lists = ex.feature_lists().feature_list();
      if (!lists.empty()) {
        out_ += "\"featureList\":{";
        bool first_key = true;
        for (const std::string* key : SortedKeys(lists)) {
          if (!first_key) out_ += ',';
          first_key = false;
          String(*key);
          out_ += ":{";
          const auto& steps = lists.at(*key).feature();
          if (!steps.empty()) {
            out_ += "\"feature\":[";
            for (int i = 0; i < steps.size(); ++i) {
              if (i) out_ += ',';
              FeatureMsg(steps[i]);
            }
            out_ += ']';
          }
          out_ += '}';
        }
        out_ += '}';
      }
      out_ += '}';
    }
    out_ += '}';
  }

 private:
  template <typename Map>
  static std::vector<const std::string*> SortedKeys(const Map& map) {
    std::vector<const std::string*> keys;
    keys.reserve(map.size());
    for (const auto& [k, v] : map) keys.push_back(&k);
    std::sort(keys.begin(), keys.end(), [](auto* a, auto* b) { return *a < *b; });
    return keys;
  }

  void FeaturesMsg(const Features& f) {
    out_ += '{';
    if (!f.feature().empty()) {
      out_ += "\"feature\":{";
      bool first = true;
      for (const std::string* key : SortedKeys(f.feature())) {
        if (!first) out_ += ',';
        first = false;
        String(*key);
        out_ += ':';
        FeatureMsg(f.feature().at(*key));
      }
      out_ += '}';
    }
    out_ += '}';
  }

  void FeatureMsg(const Feature& f) {
    out_ += '{';
    switch (f.kind_case()) {
      case Feature::kBytesList:
        List("bytesList", f.bytes_list().value(), [this](const std::string& v) {
          out_ += '"';
          Base64(v);
          out_ += '"';
        });
        break;
      case Feature::kFloatList:
        List("floatList", f.float_list().value(), [this](float v) { Float(v); });
        break;
      case Feature::kInt64List:
        List("int64List", f.int64_list().value(), [this](int64_t v) {
          out_ += '"';
          out_ += std::to_string(v);
          out_ += '"';
        });
        break;
      case Feature::KIND_NOT_SET: break;
    }
    out_ += '}';
  }

  // "<name>":{"value":[...]}, with "value" omitted when empty (proto3 JSON).
  template <typename Values, typename EmitOne>
  void List(std::string_view name, const Values& values, EmitOne emit_one) {
    out_ += '"';
    out_ += name;
    out_ += "\":{";
    if (!values.empty()) {
      out_ += "\"value\":[";
      bool first = true;
      for (const auto& v : values) {
        if (!first) out_ += ',';
        first = false;
        emit_one(v);
      }
      out_ += ']';
    }
    out_ += '}';
  }

  void Float(float v) {
    if (std::isnan(v)) {
      out_ += "\"NaN\"";
    } else if (std::isinf(v)) {
      out_ += v > 0 ? "\"Infinity\"" : "\"-Infinity\"";
    } else if (v == 0 && std::signbit(v)) {
      out_ += "-0.0";
    } else {
      out_ += PythonFloat(v);
    }
  }

  // Python protobuf's float text: the fewest significant digits, from 6 up,
  // that read back as the same float32 ("%.{p}g"), then printed as python's
  // repr() of that double ("0.1", "100.0", "1.4013e-45", "1e+16").
  static std::string PythonFloat(float v) {
    char buf[64];
    double d = v;
    for (int precision = 6; precision <= 9; ++precision) {
      std::snprintf(buf, sizeof(buf), "%.*g", precision, static_cast<double>(v));
      d = std::strtod(buf, nullptr);
      if (static_cast<float>(d) == v) break;
    }
    // Shortest round-trip digits of d, then python's layout rules.
    auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
    std::string_view sci(buf, end - buf);  // "-d.ddde+XX"
    const size_t e_pos = sci.find('e');
    const int exp = std::atoi(std::string(sci.substr(e_pos + 1)).c_str());
    std::string mantissa(sci.substr(0, e_pos));
    std::string sign;
    if (mantissa[0] == '-') {
      sign = "-";
      mantissa.erase(0, 1);
    }
    std::string digits = mantissa.substr(0, 1) + (mantissa.size() > 2 ? mantissa.substr(2) : "");
    if (exp < -4 || exp >= 16) {
      std::string out = sign + digits.substr(0, 1);
      if (digits.size() > 1) out += "." + digits.substr(1);
      out += exp < 0 ? "e-" : "e+";
      const int a = exp < 0 ? -exp : exp;
      if (a < 10) out += '0';
      return out + std::to_string(a);
    }
    if (exp < 0) return sign + "0." + std::string(-exp - 1, '0') + digits;
    if (static_cast<int>(digits.size()) <= exp + 1) {
      return sign + digits + std::string(exp + 1 - digits.size(), '0') + ".0";
    }
    return sign + digits.substr(0, exp + 1) + "." + digits.substr(exp + 1);
  }

  void String(const std::string& s) {
    static const char kHex[] = "0123456789abcdef";
    out_ += '"';
    for (unsigned char c : s) {
      if (c == '"' || c == '\\') {
        out_ += '\\';
        out_ += static_cast<char>(c);
      } else if (c < 0x20) {
        out_ += "\\u00";
        out_ += kHex[c >> 4];
        out_ += kHex[c & 15];
      } else {
        out_ += static_cast<char>(c);  // UTF-8 passes through (proto3 keys are valid UTF-8)
      }
    }
    out_ += '"';
  }

  void Base64(const std::string& s) {
    static const char kAlphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t i = 0;
    for (; i + 3 <= s.size(); i += 3) {
      const uint32_t v = (uint8_t(s[i]) << 16) | (uint8_t(s[i + 1]) << 8) | uint8_t(s[i + 2]);
      out_ += kAlphabet[v >> 18];
      out_ += kAlphabet[(v >> 12) & 63];
      out_ += kAlphabet[(v >> 6) & 63];
      out_ += kAlphabet[v & 63];
    }
    if (i + 1 == s.size()) {
      const uint32_t v = uint8_t(s[i]) << 16;
      out_ += kAlphabet[v >> 18];
      out_ += kAlphabet[(v >> 12) & 63];
      out_ += "==";
    } else if (i + 2 == s.size()) {
      const uint32_t v = (uint8_t(s[i]) << 16) | (uint8_t(s[i + 1]) << 8);
      out_ += kAlphabet[v >> 18];
      out_ += kAlphabet[(v >> 12) & 63];
      out_ += kAlphabet[(v >> 6) & 63];
      out_ += '=';
    }
  }

  std::string out_;
};

}  // namespace

Result<ProtoType> ParseProtoType(std::string_view name) {
  if (name == "example") return ProtoType::kExample;
  if (name == "sequence_example") return ProtoType::kSequenceExample;
  return Status::InvalidArgument("unknown record type '" + std::string(name) +
                                 "'; expected example or sequence_example");
}

std::string_view ProtoTypeName(ProtoType type) {
  return type == ProtoType::kExample ? "Example" : "SequenceExample";
}

Result<std::string> SerializedToJson(std::string_view serialized, ProtoType type) {
  std::unique_ptr<pb::Message> m = NewMessage(type);
  if (serialized.size() > static_cast<size_t>(INT32_MAX) ||
      !m->ParseFromArray(serialized.data(), static_cast<int>(serialized.size()))) {
    return Status::DataLoss("not a valid " + std::string(ProtoTypeName(type)));
  }
  JsonWriter w;
  if (type == ProtoType::kExample) {
    w.Example(static_cast<const sluice::proto::Example&>(*m));
  } else {
    w.SequenceExample(static_cast<const sluice::proto::SequenceExample&>(*m));
  }
  return w.Take();
}

Result<std::string> JsonToSerialized(std::string_view json, ProtoType type) {
  Status shape = CheckExampleJsonShape(json, type);
  if (!shape.ok()) {
    return Status::InvalidArgument("not a JSON " + std::string(ProtoTypeName(type)) + ": " +
                                   std::string(shape.message()));
  }
  std::unique_ptr<pb::Message> m = NewMessage(type);
  pb::util::JsonParseOptions opts;
  auto st = pb::util::JsonStringToMessage(pb::StringPiece(json.data(), json.size()), m.get(), opts);
  if (!st.ok()) {
    return Status::InvalidArgument("not a JSON " + std::string(ProtoTypeName(type)) + ": " +
                                   std::string(st.message()));
  }
  return SerializeDeterministic(*m);
}

}  // namespace sluice::tools
