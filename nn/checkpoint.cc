#include "sluice/nn/checkpoint.h"
#include "sluice/core/filesystem.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "sluice/nn/internal/checkpoint_graph.h"
#include "sluice/pipeline/iterator.h"
#include "sluice/records/tensor_bundle.h"

namespace sluice::nn {
namespace {

using nn_internal::kObjectGraphKey;
using nn_internal::kSaveCounterName;

constexpr std::string_view kIteratorState = "ITERATOR_STATE";
constexpr size_t kMaxListed = 10;

std::string ListSome(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size() && i < kMaxListed; ++i) {
    if (i > 0) out += ", ";
    out += "\"" + items[i] + "\"";
  }
  if (items.size() > kMaxListed) out += ", ... (" + std::to_string(items.size()) + " in all)";
  return out;
}

}  // namespace

// --- IteratorTrackable -------------------------------------------------------

std::vector<Trackable::Attribute> IteratorTrackable::TrackableAttributes() {
  return {Attribute{std::string(kIteratorState),
                    [this]() -> Result<Tensor> {
                      SLUICE_ASSIGN_OR_RETURN(std::string state, iterator_->save());
                      return Tensor::StringScalar(state);
                    },
                    [this](const Tensor& t) -> Status {
                      if (t.dtype() != DType::kString || t.shape().rank() != 0) {
                        return Status::InvalidArgument("an iterator state is a string[], not " +
                                                       std::string(DTypeName(t.dtype())) +
                                                       t.shape().ToString());
                      }
                      return iterator_->restore(t.scalar<std::string_view>());
                    }}};
}

// --- RestoreResult -----------------------------------------------------------

std::vector<std::string> RestoreResult::restored_keys() const {
  if (session_ == nullptr) return {};
  return {session_->restored_keys().begin(), session_->restored_keys().end()};
}

std::vector<std::string> RestoreResult::unused_keys() const {
  std::vector<std::string> out;
  if (session_ == nullptr) return out;
  for (const std::string& key : session_->keys()) {
    if (key != kObjectGraphKey && !session_->restored_keys().contains(key)) out.push_back(key);
  }
  return out;
}

std::vector<std::string> RestoreResult::unmatched_objects() const {
  std::vector<std::string> out;
  if (session_ == nullptr) return out;
  Result<nn_internal::GraphWalk> walk = nn_internal::WalkGraph(session_->root());
  if (!walk.ok()) return {"(cannot walk the objects: " + walk.status().ToString() + ")"};
  for (size_t i = 0; i < walk->objects.size(); ++i) {
    const nn_internal::WalkedObject& w = walk->objects[i];
    for (size_t a = 0; a < w.attributes.size(); ++a) {
      if (!session_->WasRestored(w.object, w.attributes[a].name)) {
        out.push_back(walk->graph.nodes[i].attributes[a].checkpoint_key);
      }
    }
  }
  return out;
}

Status RestoreResult::AssertConsumed() const {
  if (session_ == nullptr) return Status::FailedPrecondition("nothing was restored");
  const std::vector<std::string> unused = unused_keys();
  if (!unused.empty()) {
    return Status::FailedPrecondition("values in checkpoint " + session_->path() +
                                      " were not restored: " + ListSome(unused));
  }
  return AssertExistingObjectsMatched();
}

Status RestoreResult::AssertExistingObjectsMatched() const {
  if (session_ == nullptr) return Status::FailedPrecondition("nothing was restored");
  const std::vector<std::string> unmatched = unmatched_objects();
  if (!unmatched.empty()) {
    return Status::FailedPrecondition("checkpoint " + session_->path() +
                                      " has no value for: " + ListSome(unmatched));
  }
  return Status::OK();
}

Status RestoreResult::AssertNontrivialMatch() const {
  if (session_ == nullptr) return Status::FailedPrecondition("nothing was restored");
  const std::string counter_key = std::string(kSaveCounterName) + "/.ATTRIBUTES/VARIABLE_VALUE";
  for (const std::string& key : session_->restored_keys()) {
    if (key != counter_key) return Status::OK();
  }
  return Status::FailedPrecondition("nothing but the save counter matched in checkpoint " +
                                    session_->path());
}

// --- Checkpoint --------------------------------------------------------------

Checkpoint::Checkpoint() : counter_(std::make_shared<nn_internal::CounterTrackable>()) {}
Checkpoint::~Checkpoint() = default;

std::vector<Trackable::Child> Checkpoint::RootChildren() const {
  std::vector<Trackable::Child> children;
  for (const auto& [name, object] : tracked_) children.push_back({name, object});
  std::sort(children.begin(), children.end(),
            [](const Trackable::Child& a, const Trackable::Child& b) { return a.name < b.name; });
  children.push_back({std::string(kSaveCounterName), counter_.get()});
  return children;
}

Status Checkpoint::Track(std::string name, Trackable* object) {
  if (object == nullptr)
    return Status::InvalidArgument("Checkpoint::Track(\"" + name + "\", null)");
  if (name.empty() || name == kSaveCounterName) {
    return Status::InvalidArgument("Checkpoint::Track: the name \"" + name + "\" is reserved");
  }
  for (const auto& t : tracked_) {
    if (t.first == name) {
      return Status::InvalidArgument("Checkpoint::Track: \"" + name + "\" is tracked already");
    }
  }
  tracked_.emplace_back(std::move(name), object);
  if (last_restore_ != nullptr) {
    return last_restore_->RestoreRoot(std::make_shared<nn_internal::RootTrackable>(RootChildren()));
  }
  return Status::OK();
}

Status Checkpoint::Track(std::string name, Iterator* iterator) {
  if (iterator == nullptr) {
    return Status::InvalidArgument("Checkpoint::Track(\"" + name + "\", null iterator)");
  }
  auto wrapper = std::make_shared<IteratorTrackable>(iterator);
  SLUICE_RETURN_IF_ERROR(Track(std::move(name), wrapper.get()));
  owned_.push_back(std::move(wrapper));
  return Status::OK();
}

int64_t Checkpoint::save_counter() const { return counter_->value; }

Status Checkpoint::WriteBundle(const std::string& path, const CheckpointOptions& options) {
  nn_internal::RootTrackable root(RootChildren());
  SLUICE_ASSIGN_OR_RETURN(nn_internal::GraphWalk walk, nn_internal::WalkGraph(&root));
  const std::string parent = ParentPath(path);
  if (!parent.empty()) {
    if (Status s = CreateDirs(parent); !s.ok()) {
      return Status::FailedPrecondition("cannot create folder " + parent + " for checkpoint " +
                                        path + ": " + std::string(s.message()));
    }
  }
  SLUICE_ASSIGN_OR_RETURN(BundleWriter writer, BundleWriter::Create(path, {.sync = options.sync}));
  for (size_t i = 0; i < walk.objects.size(); ++i) {
    nn_internal::WalkedObject& w = walk.objects[i];
    for (size_t a = 0; a < w.attributes.size(); ++a) {
      const std::string& key = walk.graph.nodes[i].attributes[a].checkpoint_key;
      Result<Tensor> value = w.attributes[a].save();
      if (!value.ok()) {
        return value.status().WithContext("saving \"" + key + "\" to checkpoint " + path);
      }
      SLUICE_RETURN_IF_ERROR(writer.Add(key, *value));
    }
  }
  SLUICE_RETURN_IF_ERROR(writer.Add(
      kObjectGraphKey, Tensor::StringScalar(nn_internal::EncodeObjectGraph(walk.graph))));
  return writer.Finish();
}

Result<std::string> Checkpoint::Write(const std::string& path, const CheckpointOptions& options) {
  SLUICE_RETURN_IF_ERROR(WriteBundle(path, options));
  return path;
}

Result<std::string> Checkpoint::SaveNumbered(const std::string& prefix,
                                             std::optional<int64_t> number,
                                             const CheckpointOptions& options) {
  const int64_t previous = counter_->value;
  counter_->value = previous + 1;
  const std::string path = prefix + "-" + std::to_string(number.value_or(counter_->value));
  Status s = WriteBundle(path, options);
  if (!s.ok()) {
    counter_->value = previous;
    return s;
  }
  return path;
}

Result<std::string> Checkpoint::Save(const std::string& prefix, const CheckpointOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(std::string path, SaveNumbered(prefix, std::nullopt, options));
  CheckpointState state;
  state.model_checkpoint_path = path;
  state.all_model_checkpoint_paths = {path};
  const std::string dir = ParentPath(prefix);
  SLUICE_RETURN_IF_ERROR(WriteCheckpointState(dir.empty() ? "." : dir, state));
  return path;
}

Result<RestoreResult> Checkpoint::Restore(const std::string& path) {
  Result<BundleReader> reader = BundleReader::Open(path);
  if (!reader.ok()) return reader.status().WithContext("restoring checkpoint " + path);
  std::vector<std::string> keys = reader->Keys();
  nn_internal::ObjectGraph graph;
  if (std::binary_search(keys.begin(), keys.end(), std::string(kObjectGraphKey))) {
    Result<Tensor> bytes = reader->Lookup(kObjectGraphKey);
    if (!bytes.ok()) return bytes.status().WithContext("restoring checkpoint " + path);
    if (bytes->dtype() != DType::kString || bytes->num_elements() != 1) {
      return Status::DataLoss("checkpoint " + path + ": " + std::string(kObjectGraphKey) + " is " +
                              std::string(DTypeName(bytes->dtype())) + bytes->shape().ToString() +
                              ", not a string scalar");
    }
    SLUICE_ASSIGN_OR_RETURN(
        graph, nn_internal::DecodeObjectGraph(bytes->flat<std::string_view>()[0], path + ".index"));
  } else {
    graph = nn_internal::GraphFromKeys(keys);
  }
  std::vector<std::shared_ptr<Trackable>> keepalive = owned_;
  keepalive.push_back(counter_);
  auto root = std::make_shared<nn_internal::RootTrackable>(RootChildren());
  auto session = std::make_shared<nn_internal::RestoreSession>(path, std::move(reader).value(),
                                                               std::move(graph), std::move(keys),
                                                               root, std::move(keepalive));
  SLUICE_RETURN_IF_ERROR(session->Restore(0, root.get()));
  last_restore_ = session;
  return RestoreResult(session);
}

}  // namespace sluice::nn
