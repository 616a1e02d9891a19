#include "sluice/nn/internal/checkpoint_graph.h"

#include <algorithm>
#include <deque>
#include <unordered_set>

#include "sluice/nn/checkpoint.h"
#include "sluice/nn/variable.h"

namespace sluice::nn_internal {

using nn::Checkpoint;
using nn::Variable;

std::string EscapeLocalName(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (char c : name) {
    if (c == '.') {
      out += "..";
    } else if (c == '/') {
      out += ".S";
    } else {
      out += c;
    }
  }
  return out;
}

std::string UnescapeLocalName(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '.' && i + 1 < name.size() && (name[i + 1] == '.' || name[i + 1] == 'S')) {
      out += name[i + 1] == '.' ? '.' : '/';
      ++i;
    } else {
      out += name[i];
    }
  }
  return out;
}

std::vector<Trackable::Attribute> CounterTrackable::TrackableAttributes() {
  return {Attribute{"VARIABLE_VALUE", [this]() -> Result<Tensor> { return Tensor::Scalar(value); },
                    [this](const Tensor& t) -> Status {
                      if (t.dtype() != DType::kInt64 || t.shape().rank() != 0) {
                        return Status::InvalidArgument("save_counter is int64[], cannot assign " +
                                                       std::string(DTypeName(t.dtype())) +
                                                       t.shape().ToString());
                      }
                      value = t.scalar<int64_t>();
                      return Status::OK();
                    }}};
}

namespace {

std::string AttributeKey(const std::string& prefix, std::string_view attribute) {
  std::string key = prefix;
  if (!key.empty()) key += '/';
  key += kAttributesSegment;
  key += '/';
  key += EscapeLocalName(attribute);
  return key;
}

std::string JoinKey(const std::string& prefix, std::string_view name) {
  return prefix.empty() ? EscapeLocalName(name) : prefix + "/" + EscapeLocalName(name);
}

std::string ShapeString(const Tensor& t) {
  return std::string(DTypeName(t.dtype())) + t.shape().ToString();
}

}  // namespace

Result<GraphWalk> WalkGraph(Trackable* root) {
  GraphWalk walk;
  auto add = [&](Trackable* object, std::string key_prefix) {
    walk.node_of.emplace(object, static_cast<int>(walk.objects.size()));
    WalkedObject& w = walk.objects.emplace_back();
    w.object = object;
    w.key_prefix = std::move(key_prefix);
    w.children = object->TrackableChildren();
    w.attributes = object->TrackableAttributes();
    w.slots = object->TrackableSlots();
  };
  add(root, "");
  // Breadth-first over children; the first path to an object names it.
  for (size_t i = 0; i < walk.objects.size(); ++i) {
    std::unordered_set<std::string_view> names;
    for (const Trackable::Child& c : walk.objects[i].children) {
      const std::string where =
          walk.objects[i].key_prefix.empty() ? "the checkpoint" : walk.objects[i].key_prefix;
      if (c.object == nullptr) {
        return Status::InvalidArgument("child \"" + c.name + "\" of " + where + " is null");
      }
      if (!names.insert(c.name).second) {
        return Status::InvalidArgument("two children of " + where + " are named \"" + c.name +
                                       "\"");
      }
      if (!walk.node_of.contains(c.object))
        add(c.object, JoinKey(walk.objects[i].key_prefix, c.name));
    }
  }
  // Slot variables not reached otherwise are named after their original
  // variable and the optimizer, as TensorFlow does.
  std::vector<std::vector<ObjectGraph::SlotRef>> slot_refs(walk.objects.size());
  for (size_t i = 0; i < walk.objects.size(); ++i) {
    const std::vector<Trackable::Slot> slots = walk.objects[i].slots;  // add() may reallocate
    for (const Trackable::Slot& s : slots) {
      if (s.original == nullptr || s.slot == nullptr) continue;
      auto orig = walk.node_of.find(s.original);
      if (orig == walk.node_of.end()) continue;  // a variable not saved here
      if (!walk.node_of.contains(s.slot)) {
        add(s.slot, walk.objects[orig->second].key_prefix + "/" + std::string(kSlotSegment) + "/" +
                        walk.objects[i].key_prefix + "/" + EscapeLocalName(s.name));
      }
      if (slot_refs.size() < walk.objects.size()) slot_refs.resize(walk.objects.size());
      slot_refs[i].push_back({orig->second, s.name, walk.node_of.at(s.slot)});
    }
  }
  slot_refs.resize(walk.objects.size());
  // The saved graph.
  walk.graph.nodes.resize(walk.objects.size());
  for (size_t i = 0; i < walk.objects.size(); ++i) {
    const WalkedObject& w = walk.objects[i];
    ObjectGraph::Node& node = walk.graph.nodes[i];
    for (const Trackable::Child& c : w.children) {
      node.children.push_back({walk.node_of.at(c.object), c.name});
    }
    const auto* variable = dynamic_cast<const Variable*>(w.object);
    for (const Trackable::Attribute& a : w.attributes) {
      node.attributes.push_back({a.name, variable != nullptr ? variable->name() : "",
                                 AttributeKey(w.key_prefix, a.name)});
    }
    node.slot_variables = std::move(slot_refs[i]);
  }
  // has_checkpoint_values: a value at or below the node.
  std::vector<bool> has(walk.objects.size());
  for (size_t i = 0; i < has.size(); ++i) has[i] = !walk.graph.nodes[i].attributes.empty();
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < has.size(); ++i) {
      if (has[i]) continue;
      const ObjectGraph::Node& node = walk.graph.nodes[i];
      bool any = std::any_of(node.children.begin(), node.children.end(),
                             [&](const ObjectGraph::ChildRef& c) { return has[c.node_id]; });
      any = any || std::any_of(
                       node.slot_variables.begin(), node.slot_variables.end(),
                       [&](const ObjectGraph::SlotRef& s) { return has[s.slot_variable_node_id]; });
      if (any) has[i] = changed = true;
    }
  }
  for (size_t i = 0; i < has.size(); ++i) walk.graph.nodes[i].has_checkpoint_values = has[i];
  return walk;
}

ObjectGraph GraphFromKeys(const std::vector<std::string>& keys) {
  ObjectGraph graph;
  graph.nodes.emplace_back();
  auto child = [&](int parent, std::string name) {
    for (const ObjectGraph::ChildRef& c : graph.nodes[parent].children) {
      if (c.local_name == name) return c.node_id;
    }
    const int id = static_cast<int>(graph.nodes.size());
    graph.nodes.emplace_back();
    graph.nodes[parent].children.push_back({id, std::move(name)});
    return id;
  };
  auto node_at = [&](std::string_view path) {
    int node = 0;
    while (!path.empty()) {
      const size_t slash = path.find('/');
      node = child(node, UnescapeLocalName(path.substr(0, slash)));
      path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
    }
    return node;
  };
  const std::string attributes_sep = "/" + std::string(kAttributesSegment) + "/";
  const std::string slot_sep = "/" + std::string(kSlotSegment) + "/";
  for (const std::string& key : keys) {
    const size_t at = key.rfind(attributes_sep);
    if (at == std::string::npos) continue;
    const std::string_view path = std::string_view(key).substr(0, at);
    ObjectGraph::SerializedTensor attribute{
        UnescapeLocalName(std::string_view(key).substr(at + attributes_sep.size())), "", key};
    const size_t slot_at = path.find(slot_sep);
    const size_t last_slash = path.rfind('/');
    if (slot_at != std::string_view::npos && last_slash > slot_at + slot_sep.size()) {
      const int original = node_at(path.substr(0, slot_at));
      const std::string_view rest = path.substr(0, last_slash).substr(slot_at + slot_sep.size());
      const int optimizer = node_at(rest);
      const int slot = static_cast<int>(graph.nodes.size());
      graph.nodes.emplace_back().attributes.push_back(std::move(attribute));
      graph.nodes[optimizer].slot_variables.push_back(
          {original, UnescapeLocalName(path.substr(last_slash + 1)), slot});
    } else {
      graph.nodes[node_at(path)].attributes.push_back(std::move(attribute));
    }
  }
  return graph;
}

RestoreSession::RestoreSession(std::string path, BundleReader reader, ObjectGraph graph,
                               std::vector<std::string> keys, std::shared_ptr<Trackable> root,
                               std::vector<std::shared_ptr<Trackable>> keepalive)
    : path_(std::move(path)),
      reader_(std::move(reader)),
      graph_(std::move(graph)),
      keys_(std::move(keys)),
      root_(std::move(root)),
      keepalive_(std::move(keepalive)) {}

Status RestoreSession::RestoreRoot(std::shared_ptr<Trackable> root) {
  root_ = std::move(root);
  return Restore(0, root_.get());
}

Status RestoreSession::Restore(int start_node, Trackable* start) {
  std::vector<Planned> plan;
  std::deque<std::pair<int, Trackable*>> queue{{start_node, start}};
  std::set<std::pair<int, const Trackable*>> visited;
  std::vector<std::pair<int, Trackable*>> slot_owners;
  std::map<const Trackable*, int> new_node_of;
  auto node_of = [&](const Trackable* t) -> int {
    if (auto it = new_node_of.find(t); it != new_node_of.end()) return it->second;
    if (auto it = node_of_.find(t); it != node_of_.end()) return it->second;
    return -1;
  };
  size_t slot_owners_done = 0;
  while (true) {
    while (!queue.empty()) {
      auto [node_id, object] = queue.front();
      queue.pop_front();
      if (!visited.insert({node_id, object}).second) continue;
      // Already matched (and so waiting for deferred values itself): skip
      // unless it is where this call starts.
      if (object != start && node_of_.contains(object)) continue;
      new_node_of.emplace(object, node_id);
      const ObjectGraph::Node& saved = graph_.nodes[node_id];
      bool pending = false;
      // Values.
      std::vector<Trackable::Attribute> attributes = object->TrackableAttributes();
      for (const ObjectGraph::SerializedTensor& sa : saved.attributes) {
        auto it = std::find_if(attributes.begin(), attributes.end(),
                               [&](const Trackable::Attribute& a) { return a.name == sa.name; });
        if (it == attributes.end()) {
          pending = true;
          continue;
        }
        if (applied_.contains({sa.checkpoint_key, object})) continue;
        Result<Tensor> value = reader_.Lookup(sa.checkpoint_key);
        if (!value.ok()) {
          return value.status().WithContext("restoring \"" + sa.checkpoint_key + "\" from " +
                                            path_);
        }
        if (const auto* variable = dynamic_cast<const Variable*>(object)) {
          if (value->dtype() != variable->dtype() || value->shape() != variable->shape()) {
            return Status::InvalidArgument(
                "checkpoint " + path_ + ": \"" + sa.checkpoint_key + "\" is " +
                ShapeString(*value) + " but variable " + variable->name() + " is " +
                std::string(DTypeName(variable->dtype())) + variable->shape().ToString());
          }
        }
        plan.push_back({object, sa.checkpoint_key, std::move(*it), std::move(value).value()});
      }
      // Children by name.
      const std::vector<Trackable::Child> children = object->TrackableChildren();
      for (const ObjectGraph::ChildRef& sc : saved.children) {
        auto it = std::find_if(children.begin(), children.end(), [&](const Trackable::Child& c) {
          return c.name == sc.local_name && c.object != nullptr;
        });
        if (it == children.end()) {
          pending = true;
        } else {
          queue.emplace_back(sc.node_id, it->object);
        }
      }
      if (!saved.slot_variables.empty()) {
        pending = true;  // slots may appear when their optimizer builds them
        slot_owners.emplace_back(node_id, object);
      }
      // Objects this session owns (the root, save_counter, iterator
      // wrappers) never grow children later; recording the session on them
      // would also make an ownership cycle.
      const bool owned = object == root_.get() ||
                         std::any_of(keepalive_.begin(), keepalive_.end(),
                                     [o = object](const auto& k) { return k.get() == o; });
      if (pending && !owned) {
        std::shared_ptr<DeferredRestore>& deferred = Checkpoint::DeferredOf(object);
        if (deferred == nullptr || deferred->session.get() != this) {
          deferred = std::make_shared<DeferredRestore>();
          deferred->session = shared_from_this();
        }
        if (std::find(deferred->nodes.begin(), deferred->nodes.end(), node_id) ==
            deferred->nodes.end()) {
          deferred->nodes.push_back(node_id);
        }
      }
    }
    // Slots once their original variables are matched.
    if (slot_owners_done == slot_owners.size()) break;
    for (; slot_owners_done < slot_owners.size(); ++slot_owners_done) {
      auto [node_id, optimizer] = slot_owners[slot_owners_done];
      for (const Trackable::Slot& s : optimizer->TrackableSlots()) {
        if (s.original == nullptr || s.slot == nullptr) continue;
        const int original = node_of(s.original);
        if (original < 0) continue;
        for (const ObjectGraph::SlotRef& ref : graph_.nodes[node_id].slot_variables) {
          if (ref.original_variable_node_id == original && ref.slot_name == s.name) {
            queue.emplace_back(ref.slot_variable_node_id, s.slot);
          }
        }
      }
    }
  }
  // Apply, now that every value was read and checked.
  for (Planned& p : plan) {
    Status s = p.attribute.restore(p.value);
    if (!s.ok()) return s.WithContext("restoring \"" + p.key + "\" from " + path_);
    applied_.insert({p.key, p.object});
    restored_attributes_.insert({p.object, p.attribute.name});
    restored_keys_.insert(p.key);
  }
  for (const auto& [object, node] : new_node_of) node_of_.emplace(object, node);
  return Status::OK();
}

}  // namespace sluice::nn_internal
