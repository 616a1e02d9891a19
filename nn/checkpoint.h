// Checkpoint: saves and restores a graph of Trackable objects (a model, its
// optimizer, a pipeline iterator, step counters) in TensorFlow's
// tf.train.Checkpoint format, so TensorFlow reads what sluice writes and
// sluice restores what TensorFlow (Keras) writes.
//
// A checkpoint "prefix-N" is a tensor bundle (prefix-N.index and
// prefix-N.data-00000-of-00001, see records/tensor_bundle.h) holding every
// value under its object-path key ("model/dense/kernel/.ATTRIBUTES/
// VARIABLE_VALUE", see trackable.h), the object graph under
// "_CHECKPOINTABLE_OBJECT_GRAPH" and the int64 "save_counter". Save() also
// rewrites the text file `checkpoint` in the prefix's folder (TensorFlow's
// CheckpointState), which LatestCheckpoint() reads.
//
// Restore() matches the saved object graph against the live one node by
// node from the root, by child names; values of objects that do not exist
// yet wait in the object until it calls RestoreDeferred(). Checkpoints
// without an object graph (written by name-based savers) are matched by
// key paths instead.
//
// Atomicity: the bundle and the state file are written under temporary
// names and renamed into place, so a failed or interrupted save leaves the
// previous checkpoint and state file intact.
//
// Ownership: a Checkpoint does not own the objects it tracks (they must
// outlive every call that walks them, including RestoreResult's methods and
// later RestoreDeferred() calls); it owns the save counter and the wrappers
// Track(name, Iterator*) makes. Thread-safety: none; use one thread, the
// one that trains.
#ifndef SLUICE_NN_CHECKPOINT_H_
#define SLUICE_NN_CHECKPOINT_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sluice/core/result.h"
#include "sluice/core/status.h"
#include "sluice/nn/trackable.h"

namespace sluice {
class Iterator;
}  // namespace sluice

namespace sluice::nn_internal {
class RestoreSession;
class CounterTrackable;
}  // namespace sluice::nn_internal

namespace sluice::nn {

// Wraps a pipeline Iterator as a Trackable with one attribute,
// "ITERATOR_STATE" (TensorFlow's name for dataset iterators): a scalar
// string tensor holding Iterator::save()'s bytes, restored with
// Iterator::restore() (which requires a fresh iterator). Does not own the
// iterator.
class IteratorTrackable : public Trackable {
 public:
  explicit IteratorTrackable(Iterator* iterator) : iterator_(iterator) {}
  std::vector<Attribute> TrackableAttributes() override;

 private:
  Iterator* iterator_;
};

// What a Restore() matched. Its methods look at the state now: values
// applied later by RestoreDeferred() count once applied. Copies share state.
class RestoreResult {
 public:
  RestoreResult() = default;

  // The checkpoint's keys whose values were applied, sorted.
  std::vector<std::string> restored_keys() const;
  // The checkpoint's keys no object took (yet), sorted; the object graph's
  // own key is not listed.
  std::vector<std::string> unused_keys() const;
  // The keys our objects would save under that got no value from the
  // checkpoint: objects it does not have, or whose attribute it lacks.
  std::vector<std::string> unmatched_objects() const;

  // As TensorFlow's assert_consumed(): FailedPrecondition unless every value
  // in the checkpoint was applied and every object we have got its values.
  Status AssertConsumed() const;
  // As assert_existing_objects_matched(): FailedPrecondition if an object we
  // have (reachable now) got no value from the checkpoint.
  Status AssertExistingObjectsMatched() const;
  // As assert_nontrivial_match(): FailedPrecondition unless at least one
  // value besides the save counter was applied.
  Status AssertNontrivialMatch() const;

 private:
  friend class Checkpoint;
  explicit RestoreResult(std::shared_ptr<nn_internal::RestoreSession> session)
      : session_(std::move(session)) {}
  std::shared_ptr<nn_internal::RestoreSession> session_;
};

// How a checkpoint is saved (tf.train.CheckpointOptions' place in the API).
struct CheckpointOptions {
  // Power-loss safety: fsync the bundle's files before their renames and
  // the state file, then their folder after, so a save that returned keeps
  // its checkpoint, and the state file names one that exists, after a power
  // loss. (Without it a killed process is already safe: every file is
  // renamed into place whole.) Costs a few fsyncs per save.
  bool sync = false;
};

class Checkpoint {
 public:
  Checkpoint();
  ~Checkpoint();
  Checkpoint(const Checkpoint&) = delete;
  Checkpoint& operator=(const Checkpoint&) = delete;

  // Adds a root dependency ("model", "optimizer", "iterator", "step"). As
  // tf.train.Checkpoint's keyword arguments, root children are ordered by
  // name, then "save_counter". InvalidArgument for an empty or reserved
  // name ("save_counter"), a name tracked before, or a null object. If a
  // Restore() came before, the object is restored from it now (deferred
  // restoration).
  Status Track(std::string name, Trackable* object);
  // Tracks `iterator` through an IteratorTrackable the Checkpoint owns.
  Status Track(std::string name, Iterator* iterator);

  // Increments the save counter and writes "prefix-N" (N = the new counter,
  // 1 for the first save), then points the folder's `checkpoint` state file
  // at it as tf.train.Checkpoint.save does. Returns "prefix-N". On error
  // the previous checkpoint, state file and counter are unchanged (except
  // when only the state file update fails).
  Result<std::string> Save(const std::string& prefix, const CheckpointOptions& options = {});
  // Writes a checkpoint at `path` exactly (no counter change, no state
  // file), as tf.train.Checkpoint.write.
  Result<std::string> Write(const std::string& path, const CheckpointOptions& options = {});
  // Restores from the checkpoint at prefix `path` (e.g. "dir/ckpt-3" or
  // LatestCheckpoint(dir)). NotFound if there is none; DataLoss (naming the
  // file) if it is corrupt; InvalidArgument (naming the key and both
  // shapes / dtypes) if a value does not fit its variable, in which case
  // nothing was applied. Values for objects that do not exist yet are kept
  // for them (see Trackable::RestoreDeferred()).
  Result<RestoreResult> Restore(const std::string& path);

  // The number of Save() calls, restored with a checkpoint.
  int64_t save_counter() const;

 private:
  friend class CheckpointManager;
  friend class nn_internal::RestoreSession;

  // Root children: tracked objects by name, then save_counter.
  std::vector<Trackable::Child> RootChildren() const;
  Status WriteBundle(const std::string& path, const CheckpointOptions& options);
  // Increments the counter and writes "prefix-<number or counter>"; the
  // counter is rolled back on error.
  Result<std::string> SaveNumbered(const std::string& prefix, std::optional<int64_t> number,
                                   const CheckpointOptions& options);
  static std::shared_ptr<nn_internal::DeferredRestore>& DeferredOf(Trackable* t) {
    return t->deferred_;
  }

  std::vector<std::pair<std::string, Trackable*>> tracked_;
  std::vector<std::shared_ptr<Trackable>> owned_;
  std::shared_ptr<nn_internal::CounterTrackable> counter_;
  std::shared_ptr<nn_internal::RestoreSession> last_restore_;
};

// TensorFlow's CheckpointState, the `checkpoint` text file in a folder.
// Paths as written (relative to the folder when inside it).
struct CheckpointState {
  std::string model_checkpoint_path;
  std::vector<std::string> all_model_checkpoint_paths;
  std::vector<double> all_model_checkpoint_timestamps;
  double last_preserved_timestamp = 0;
};

// Reads `dir`/checkpoint, making relative paths absolute against `dir` as
// tf.train.get_checkpoint_state does. NotFound without one; DataLoss if it
// does not parse.
Result<CheckpointState> ReadCheckpointState(const std::string& dir);
// Parses the text of a state file (as ReadCheckpointState, without the
// file); `name` is used in errors.
Result<CheckpointState> ParseCheckpointState(std::string_view text, const std::string& dir,
                                             const std::string& name);
// Writes `dir`/checkpoint atomically (temporary file, fsynced, then rename,
// then `dir` fsynced: the state file is what a restart trusts), paths inside
// `dir` made relative, in TensorFlow's text format.
Status WriteCheckpointState(const std::string& dir, const CheckpointState& state);
// The newest checkpoint prefix the state file in `dir` names, if that file
// exists, parses and the checkpoint's index file exists
// (tf.train.latest_checkpoint).
std::optional<std::string> LatestCheckpoint(const std::string& dir);

// Keeps the newest `max_to_keep` checkpoints "directory/name-N" of one
// Checkpoint, as tf.train.CheckpointManager: each Save() writes one, records
// it in the state file (with timestamps), then deletes the oldest beyond
// max_to_keep (max_to_keep <= 0 keeps all). Checkpoints an earlier manager
// recorded in the directory's state file are picked up and count toward
// max_to_keep; those recorded without timestamps (by Checkpoint::Save) are
// kept. Does not own `checkpoint`, which must outlive it. Not thread-safe.
class CheckpointManager {
 public:
  CheckpointManager(Checkpoint* checkpoint, std::string directory, int max_to_keep,
                    std::string checkpoint_name = "ckpt");

  // Writes "directory/name-N", N = `checkpoint_number` or else the
  // checkpoint's save counter after incrementing it (always incremented).
  // Returns the prefix written. Creates `directory` if needed. A process
  // killed at any moment of a Save() leaves latest_checkpoint() restorable
  // (the previous checkpoint, or this one); `options.sync` extends that to
  // a power loss.
  Result<std::string> Save(std::optional<int64_t> checkpoint_number = {},
                           const CheckpointOptions& options = {});
  std::optional<std::string> latest_checkpoint() const { return latest_; }
  // The checkpoints managed (oldest first), which later saves may delete.
  const std::vector<std::string>& checkpoints() const { return checkpoints_; }
  const std::string& directory() const { return directory_; }

 private:
  Status RecordState();

  Checkpoint* checkpoint_;
  std::string directory_;
  int max_to_keep_;
  std::string prefix_;
  std::optional<std::string> latest_;
  std::vector<std::string> checkpoints_;
  std::vector<double> timestamps_;
  double last_preserved_timestamp_ = 0;
};

}  // namespace sluice::nn

#endif  // SLUICE_NN_CHECKPOINT_H_
