#include "sluice/nn/internal/object_graph.h"

#include <limits>

namespace sluice::nn_internal {
namespace {

// --- Encoding --------------------------------------------------------------

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

void PutTag(std::string* out, uint32_t field, uint32_t wire_type) {
  PutVarint(out, uint64_t{field} << 3 | wire_type);
}

void PutBytes(std::string* out, uint32_t field, std::string_view bytes) {
  PutTag(out, field, 2);
  PutVarint(out, bytes.size());
  out->append(bytes);
}

// proto3: default values (0, "") are not written.
void PutString(std::string* out, uint32_t field, std::string_view s) {
  if (!s.empty()) PutBytes(out, field, s);
}

void PutInt32(std::string* out, uint32_t field, int32_t v) {
  if (v == 0) return;
  PutTag(out, field, 0);
  // Negative int32 values are sign-extended to 64 bits on the wire.
  PutVarint(out, static_cast<uint64_t>(static_cast<int64_t>(v)));
}

std::string EncodeNode(const ObjectGraph::Node& node) {
  std::string out;
  for (const ObjectGraph::ChildRef& c : node.children) {
    std::string m;
    PutInt32(&m, 1, c.node_id);
    PutString(&m, 2, c.local_name);
    PutBytes(&out, 1, m);
  }
  for (const ObjectGraph::SerializedTensor& a : node.attributes) {
    std::string m;
    PutString(&m, 1, a.name);
    PutString(&m, 2, a.full_name);
    PutString(&m, 3, a.checkpoint_key);
    PutBytes(&out, 2, m);
  }
  for (const ObjectGraph::SlotRef& s : node.slot_variables) {
    std::string m;
    PutInt32(&m, 1, s.original_variable_node_id);
    PutString(&m, 2, s.slot_name);
    PutInt32(&m, 3, s.slot_variable_node_id);
    PutBytes(&out, 3, m);
  }
  if (node.has_checkpoint_values.has_value()) {
    std::string m;
    if (*node.has_checkpoint_values) {
      PutTag(&m, 1, 0);
      PutVarint(&m, 1);
    }
    PutBytes(&out, 5, m);
  }
  return out;
}

// --- Decoding --------------------------------------------------------------

// A bounds-checked cursor over one message's bytes.
class Cursor {
 public:
  explicit Cursor(std::string_view bytes) : bytes_(bytes) {}
  bool done() const { return pos_ >= bytes_.size(); }
  size_t pos() const { return pos_; }

  bool Varint(uint64_t* v) {
    uint64_t result = 0;
    for (int i = 0; i < 10; ++i) {
      if (pos_ >= bytes_.size()) return false;
      const uint8_t b = static_cast<uint8_t>(bytes_[pos_++]);
      result |= uint64_t{b & 0x7fu} << (7 * i);
      if (b < 0x80) {
        *v = result;
        return true;
      }
    }
    return false;  // more than 10 bytes
  }
  bool Bytes(std::string_view* out) {
    uint64_t len;
    if (!Varint(&len) || len > bytes_.size() - pos_) return false;
    *out = bytes_.substr(pos_, len);
    pos_ += len;
    return true;
  }
  bool Skip(uint32_t wire_type) {
    uint64_t v;
    std::string_view s;
    switch (wire_type) {
      case 0: return Varint(&v);
      case 1: return Advance(8);
      case 2: return Bytes(&s);
      case 5: return Advance(4);
      default: return false;  // groups and invalid wire types
    }
  }

 private:
  bool Advance(size_t n) {
    if (n > bytes_.size() - pos_) return false;
    pos_ += n;
    return true;
  }
  std::string_view bytes_;
  size_t pos_ = 0;
};

// Reads the next field's number and wire type. False on a malformed tag.
bool NextField(Cursor* c, uint32_t* field, uint32_t* wire_type) {
  uint64_t tag;
  if (!c->Varint(&tag) || tag > std::numeric_limits<uint32_t>::max()) return false;
  *field = static_cast<uint32_t>(tag >> 3);
  *wire_type = static_cast<uint32_t>(tag & 7);
  return *field != 0;
}

bool ReadInt32(Cursor* c, uint32_t wire_type, int32_t* out) {
  uint64_t v;
  if (wire_type != 0 || !c->Varint(&v)) return false;
  *out = static_cast<int32_t>(static_cast<uint32_t>(v));  // int32 truncation, as protobuf
  return true;
}

bool ReadString(Cursor* c, uint32_t wire_type, std::string* out) {
  std::string_view s;
  if (wire_type != 2 || !c->Bytes(&s)) return false;
  out->assign(s);
  return true;
}

// Parses a message whose fields `on_field(cursor, field, wire_type)` reads
// (returning false on malformed input; unknown fields are skipped).
template <typename F>
bool ParseMessage(std::string_view bytes, F on_field) {
  Cursor c(bytes);
  while (!c.done()) {
    uint32_t field, wire_type;
    if (!NextField(&c, &field, &wire_type)) return false;
    bool handled = false;
    if (!on_field(&c, field, wire_type, &handled)) return false;
    if (!handled && !c.Skip(wire_type)) return false;
  }
  return true;
}

bool ParseChild(std::string_view bytes, ObjectGraph::ChildRef* out) {
  return ParseMessage(bytes, [&](Cursor* c, uint32_t f, uint32_t w, bool* handled) {
    if (f == 1) return *handled = true, ReadInt32(c, w, &out->node_id);
    if (f == 2) return *handled = true, ReadString(c, w, &out->local_name);
    return true;
  });
}

bool ParseAttribute(std::string_view bytes, ObjectGraph::SerializedTensor* out) {
  return ParseMessage(bytes, [&](Cursor* c, uint32_t f, uint32_t w, bool* handled) {
    if (f == 1) return *handled = true, ReadString(c, w, &out->name);
    if (f == 2) return *handled = true, ReadString(c, w, &out->full_name);
    if (f == 3) return *handled = true, ReadString(c, w, &out->checkpoint_key);
    return true;
  });
}

bool ParseSlot(std::string_view bytes, ObjectGraph::SlotRef* out) {
  return ParseMessage(bytes, [&](Cursor* c, uint32_t f, uint32_t w, bool* handled) {
    if (f == 1) return *handled = true, ReadInt32(c, w, &out->original_variable_node_id);
    if (f == 2) return *handled = true, ReadString(c, w, &out->slot_name);
    if (f == 3) return *handled = true, ReadInt32(c, w, &out->slot_variable_node_id);
    return true;
  });
}

bool ParseBoolValue(std::string_view bytes, bool* out) {
  *out = false;
  return ParseMessage(bytes, [&](Cursor* c, uint32_t f, uint32_t w, bool* handled) {
    if (f != 1) return true;
    *handled = true;
    uint64_t v;
    if (w != 0 || !c->Varint(&v)) return false;
    *out = v != 0;
    return true;
  });
}

bool ParseNode(std::string_view bytes, ObjectGraph::Node* node) {
  return ParseMessage(bytes, [&](Cursor* c, uint32_t f, uint32_t w, bool* handled) {
    if (f < 1 || f > 5 || f == 4) return true;
    *handled = true;
    std::string_view m;
    if (w != 2 || !c->Bytes(&m)) return false;
    switch (f) {
      case 1: return ParseChild(m, &node->children.emplace_back());
      case 2: return ParseAttribute(m, &node->attributes.emplace_back());
      case 3: return ParseSlot(m, &node->slot_variables.emplace_back());
      default: {
        bool v;
        if (!ParseBoolValue(m, &v)) return false;
        node->has_checkpoint_values = v;
        return true;
      }
    }
  });
}

}  // namespace

std::string EncodeObjectGraph(const ObjectGraph& graph) {
  std::string out;
  for (const ObjectGraph::Node& node : graph.nodes) PutBytes(&out, 1, EncodeNode(node));
  return out;
}

Result<ObjectGraph> DecodeObjectGraph(std::string_view bytes, std::string_view what) {
  const std::string where = "object graph (_CHECKPOINTABLE_OBJECT_GRAPH) of " + std::string(what);
  ObjectGraph graph;
  const bool ok = ParseMessage(bytes, [&](Cursor* c, uint32_t f, uint32_t w, bool* handled) {
    if (f != 1) return true;
    *handled = true;
    std::string_view m;
    if (w != 2 || !c->Bytes(&m)) return false;
    return ParseNode(m, &graph.nodes.emplace_back());
  });
  if (!ok) return Status::DataLoss("malformed " + where);
  if (graph.nodes.empty()) return Status::DataLoss("empty " + where);
  const auto valid = [&](int32_t id) {
    return id >= 0 && static_cast<size_t>(id) < graph.nodes.size();
  };
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    for (const ObjectGraph::ChildRef& c : graph.nodes[i].children) {
      if (!valid(c.node_id)) {
        return Status::DataLoss(where + ": node " + std::to_string(i) + "'s child \"" +
                                c.local_name + "\" refers to node " + std::to_string(c.node_id) +
                                " of " + std::to_string(graph.nodes.size()));
      }
    }
    for (const ObjectGraph::SlotRef& s : graph.nodes[i].slot_variables) {
      if (!valid(s.original_variable_node_id) || !valid(s.slot_variable_node_id)) {
        return Status::DataLoss(where + ": node " + std::to_string(i) + "'s slot \"" + s.slot_name +
                                "\" refers to a missing node");
      }
    }
  }
  return graph;
}

}  // namespace sluice::nn_internal
