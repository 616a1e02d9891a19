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
#include "sluice/core/json_writer.h"
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

// The canonical proto3 JSON mapping, written with the library's JsonWriter
// so that floats use the shortest text that reads back as the same float32
// (as python does), -0.0 keeps its sign (protobuf's C++ parser reads "-0" as
// the integer 0), and map keys come out sorted.
class ExamplePrinter {
 public:
  std::string Take() { return w_.Take(); }

  void Example(const sluice::proto::Example& ex) {
    w_.BeginObject();
    if (ex.has_features()) {
      w_.Key("features");
      FeaturesMsg(ex.features());
    }
    w_.EndObject();
  }

  void SequenceExample(const sluice::proto::SequenceExample& ex) {
    w_.BeginObject();
    if (ex.has_context()) {
      w_.Key("context");
      FeaturesMsg(ex.context());
    }
    if (ex.has_feature_lists()) {
      w_.Key("featureLists").BeginObject();
      const auto& lists = ex.feature_lists().feature_list();
      if (!lists.empty()) {
        w_.Key("featureList").BeginObject();
        for (const std::string* key : SortedKeys(lists)) {
          w_.Key(*key).BeginObject();
          const auto& steps = lists.at(*key).feature();
          if (!steps.empty()) {
            w_.Key("feature").BeginArray();
            for (const Feature& step : steps) FeatureMsg(step);
            w_.EndArray();
          }
          w_.EndObject();
        }
        w_.EndObject();
      }
      w_.EndObject();
    }
    w_.EndObject();
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
    w_.BeginObject();
    if (!f.feature().empty()) {
      w_.Key("feature").BeginObject();
      for (const std::string* key : SortedKeys(f.feature())) {
        w_.Key(*key);
        FeatureMsg(f.feature().at(*key));
      }
      w_.EndObject();
    }
    w_.EndObject();
  }

  void FeatureMsg(const Feature& f) {
    w_.BeginObject();
    switch (f.kind_case()) {
      case Feature::kBytesList:
        List("bytesList", f.bytes_list().value(),
             [this](const std::string& v) { w_.String(Base64(v)); });
        break;
      case Feature::kFloatList:
        List("floatList", f.float_list().value(), [this](float v) { Float(v); });
        break;
      case Feature::kInt64List:
        List("int64List", f.int64_list().value(),
             [this](int64_t v) { w_.String(std::to_string(v)); });
        break;
      case Feature::KIND_NOT_SET: break;
    }
    w_.EndObject();
  }

  // "<name>":{"value":[...]}, with "value" omitted when empty (proto3 JSON).
  template <typename Values, typename EmitOne>
  void List(std::string_view name, const Values& values, EmitOne emit_one) {
    w_.Key(name).BeginObject();
    if (!values.empty()) {
      w_.Key("value").BeginArray();
      for (const auto& v : values) emit_one(v);
      w_.EndArray();
    }
    w_.EndObject();
  }

  void Float(float v) {
    if (std::isnan(v)) {
      w_.String("NaN");
    } else if (std::isinf(v)) {
      w_.String(v > 0 ? "Infinity" : "-Infinity");
    } else if (v == 0 && std::signbit(v)) {
      w_.NumberText("-0.0");
    } else {
      w_.NumberText(PythonFloat(v));
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

  static std::string Base64(const std::string& s) {
    static const char kAlphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((s.size() + 2) / 3 * 4);
    size_t i = 0;
    for (; i + 3 <= s.size(); i += 3) {
      const uint32_t v = (uint8_t(s[i]) << 16) | (uint8_t(s[i + 1]) << 8) | uint8_t(s[i + 2]);
      out += kAlphabet[v >> 18];
      out += kAlphabet[(v >> 12) & 63];
      out += kAlphabet[(v >> 6) & 63];
      out += kAlphabet[v & 63];
    }
    if (i + 1 == s.size()) {
      const uint32_t v = uint8_t(s[i]) << 16;
      out += kAlphabet[v >> 18];
      out += kAlphabet[(v >> 12) & 63];
      out += "==";
    } else if (i + 2 == s.size()) {
      const uint32_t v = (uint8_t(s[i]) << 16) | (uint8_t(s[i + 1]) << 8);
      out += kAlphabet[v >> 18];
      out += kAlphabet[(v >> 12) & 63];
      out += kAlphabet[(v >> 6) & 63];
      out += '=';
    }
    return out;
  }

  JsonWriter w_;
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
  ExamplePrinter w;
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
