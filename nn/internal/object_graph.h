// TensorFlow's TrackableObjectGraph proto (tensorflow/core/protobuf/
// trackable_object_graph.proto), the value a checkpoint stores under
// "_CHECKPOINTABLE_OBJECT_GRAPH": which objects a checkpoint holds, their
// named dependencies, the keys of their values and optimizer slots.
//
// Encoded and decoded by hand (the fields used by tf.train.Checkpoint; other
// fields are skipped on decode). Decode never trusts a length or an index:
// malformed bytes and child / slot references to missing nodes are DataLoss.
// Pure functions: thread-safe.
#ifndef SLUICE_NN_INTERNAL_OBJECT_GRAPH_H_
#define SLUICE_NN_INTERNAL_OBJECT_GRAPH_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/core/result.h"

namespace sluice::nn_internal {

struct ObjectGraph {
  struct ChildRef {
    int32_t node_id = 0;     // field 1
    std::string local_name;  // field 2
  };
  struct SerializedTensor {
    std::string name;            // field 1: "VARIABLE_VALUE", "ITERATOR_STATE"
    std::string full_name;       // field 2: the variable's name, informative
    std::string checkpoint_key;  // field 3
  };
  struct SlotRef {
    int32_t original_variable_node_id = 0;  // field 1
    std::string slot_name;                  // field 2
    int32_t slot_variable_node_id = 0;      // field 3
  };
  struct Node {
    std::vector<ChildRef> children;             // field 1
    std::vector<SerializedTensor> attributes;   // field 2
    std::vector<SlotRef> slot_variables;        // field 3
    std::optional<bool> has_checkpoint_values;  // field 5, a BoolValue
  };
  std::vector<Node> nodes;  // field 1; nodes[0] is the root
};

std::string EncodeObjectGraph(const ObjectGraph& graph);
// DataLoss (naming `what`, e.g. the file) for malformed bytes, an empty
// graph, or a reference to a node that does not exist.
Result<ObjectGraph> DecodeObjectGraph(std::string_view bytes, std::string_view what);

}  // namespace sluice::nn_internal

#endif  // SLUICE_NN_INTERNAL_OBJECT_GRAPH_H_
