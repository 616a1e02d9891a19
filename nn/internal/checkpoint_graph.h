// The checkpoint implementation's view of a Trackable graph: the
// breadth-first walk that names objects and keys (as TensorFlow's
// ObjectGraphView), the saved graph built from it, and the restore session
// that matches a saved graph against live objects (deferred restoration
// included). Not thread-safe.
#ifndef SLUICE_NN_INTERNAL_CHECKPOINT_GRAPH_H_
#define SLUICE_NN_INTERNAL_CHECKPOINT_GRAPH_H_

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sluice/core/result.h"
#include "sluice/core/tensor.h"
#include "sluice/nn/internal/object_graph.h"
#include "sluice/nn/trackable.h"
#include "sluice/records/tensor_bundle.h"

namespace sluice::nn_internal {

// The nn type this implementation is written against.
using nn::Trackable;

inline constexpr std::string_view kObjectGraphKey = "_CHECKPOINTABLE_OBJECT_GRAPH";
inline constexpr std::string_view kAttributesSegment = ".ATTRIBUTES";
inline constexpr std::string_view kSlotSegment = ".OPTIMIZER_SLOT";
inline constexpr std::string_view kSaveCounterName = "save_counter";

// TensorFlow's escaping of a name inside a key: "." -> "..", "/" -> ".S".
std::string EscapeLocalName(std::string_view name);
// The inverse; unknown escapes are kept as they are.
std::string UnescapeLocalName(std::string_view name);

// The int64 scalar "save_counter", kept on the host.
class CounterTrackable : public Trackable {
 public:
  int64_t value = 0;
  std::vector<Attribute> TrackableAttributes() override;
};

// The Checkpoint itself as node 0: its children only.
class RootTrackable : public Trackable {
 public:
  explicit RootTrackable(std::vector<Child> children) : children_(std::move(children)) {}
  std::vector<Child> TrackableChildren() override { return children_; }

 private:
  std::vector<Child> children_;
};

// One object reached by the walk.
struct WalkedObject {
  Trackable* object = nullptr;
  std::string key_prefix;  // escaped path ("model/dense"); "" for the root
  std::vector<Trackable::Child> children;
  std::vector<Trackable::Attribute> attributes;
  std::vector<Trackable::Slot> slots;
};

// Objects in node order: breadth-first by children, then slot variables.
struct GraphWalk {
  std::vector<WalkedObject> objects;
  std::unordered_map<const Trackable*, int> node_of;
  ObjectGraph graph;  // the same nodes with keys, children and slots
};

// Walks from `root`. InvalidArgument for a null child or a name repeated
// among one object's children.
Result<GraphWalk> WalkGraph(Trackable* root);

// Builds a saved graph from keys alone (checkpoints without an object
// graph): a tree of path segments, attributes and optimizer slots.
ObjectGraph GraphFromKeys(const std::vector<std::string>& keys);

// Applies one checkpoint's values to live objects; shared by the
// RestoreResult and the objects waiting for deferred values.
class RestoreSession : public std::enable_shared_from_this<RestoreSession> {
 public:
  RestoreSession(std::string path, BundleReader reader, ObjectGraph graph,
                 std::vector<std::string> keys, std::shared_ptr<Trackable> root,
                 std::vector<std::shared_ptr<Trackable>> keepalive);

  // Matches saved node `node` with `object` and, breadth-first, their
  // children and slots; reads every value first (all errors, including
  // shape mismatches with Variables, come before anything is applied),
  // then applies them. Objects whose saved nodes have more than they now
  // hold remember this session for RestoreDeferred().
  Status Restore(int node, Trackable* object);
  // Re-matches the root with `root` (after Checkpoint::Track added a child).
  Status RestoreRoot(std::shared_ptr<Trackable> root);

  const std::string& path() const { return path_; }
  const std::vector<std::string>& keys() const { return keys_; }
  const std::set<std::string>& restored_keys() const { return restored_keys_; }
  Trackable* root() const { return root_.get(); }
  // Whether `object`'s attribute `name` got a value from this checkpoint.
  bool WasRestored(const Trackable* object, const std::string& name) const {
    return restored_attributes_.contains({object, name});
  }

 private:
  struct Planned {
    Trackable* object;
    std::string key;
    Trackable::Attribute attribute;
    Tensor value;
  };

  std::string path_;
  BundleReader reader_;
  ObjectGraph graph_;
  std::vector<std::string> keys_;
  std::shared_ptr<Trackable> root_;
  std::vector<std::shared_ptr<Trackable>> keepalive_;
  std::set<std::string> restored_keys_;
  std::set<std::pair<std::string, const Trackable*>> applied_;
  std::map<const Trackable*, int> node_of_;
  std::set<std::pair<const Trackable*, std::string>> restored_attributes_;
};

// What a Trackable's deferred_ holds: the session whose saved nodes it
// matched.
struct DeferredRestore {
  std::shared_ptr<RestoreSession> session;
  std::vector<int> nodes;
};

}  // namespace sluice::nn_internal

#endif  // SLUICE_NN_INTERNAL_CHECKPOINT_GRAPH_H_
