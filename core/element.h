// Element: one item flowing through a pipeline, an ordered tuple of Tensors
// whose components may also carry names (as tf.data's dict elements do).
//
// Components are reachable by index or by name. Copying an Element copies
// the Tensor handles, not their bytes, and shares the list of names (which
// is copied only if one copy adds a component). A stage that makes many
// elements with the same names builds the list once and passes it to the
// shared-names constructor. Value type; const methods may be called
// concurrently.
#ifndef SLUICE_CORE_ELEMENT_H_
#define SLUICE_CORE_ELEMENT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/core/result.h"
#include "sluice/core/tensor.h"

namespace sluice {

class Element {
 public:
  Element() = default;
  // Unnamed components.
  explicit Element(std::vector<Tensor> components);
  // Named components. REQUIRES: names.size() == components.size() (a
  // shorter list is padded with "").
  Element(std::vector<Tensor> components, std::vector<std::string> names);
  // Named components sharing an immutable list of names.
  // REQUIRES: names != nullptr and names->size() == components.size().
  Element(std::vector<Tensor> components, std::shared_ptr<const std::vector<std::string>> names);

  size_t size() const { return components_.size(); }
  bool empty() const { return components_.empty(); }
  // REQUIRES: i < size().
  const Tensor& operator[](size_t i) const { return components_[i]; }
  Tensor& operator[](size_t i) { return components_[i]; }
  const std::vector<Tensor>& components() const { return components_; }
  std::vector<Tensor>& components() { return components_; }
  // One name per component; "" for an unnamed one.
  const std::vector<std::string>& names() const;
  // The shared list of names (null until the element has components), for
  // building elements that share it.
  const std::shared_ptr<const std::vector<std::string>>& shared_names() const { return names_; }

  // The first component called `name`, or nullptr.
  const Tensor* find(std::string_view name) const;
  Tensor* find(std::string_view name);
  // As find(), but NotFound listing the names that do exist.
  Result<Tensor> get(std::string_view name) const;
  // Index of the component called `name`, or -1.
  int index_of(std::string_view name) const;

  void push_back(Tensor t, std::string name = "");

  // Where the element came from, for error messages: a source (a file name)
  // and an index in it (a record number), or null and -1 when unknown.
  // Pipeline sources set it; stages carry it from input to output.
  const std::shared_ptr<const std::string>& origin_source() const { return origin_source_; }
  int64_t origin_index() const { return origin_index_; }
  void set_origin(std::shared_ptr<const std::string> source, int64_t index) {
    origin_source_ = std::move(source);
    origin_index_ = index;
  }
  // "file.tfrecord record 12", "record 12", or "" when unknown.
  std::string OriginString() const;

  // The element's position in its dataset before shard() (or distribute)
  // split it among shards, or -1 when it was not split. MapContext::rng()
  // keys per-element randomness by it, so a random augmentation does not
  // depend on how many ranks read the data. Carried like the origin; not
  // part of saved iterator state.
  int64_t key() const { return key_; }
  void set_key(int64_t key) { key_ = key; }

  // "(label: int64[] {3}, image: uint8[2,2,3] {...})"
  std::string DebugString(int max_entries = 6) const;

 private:
  std::vector<Tensor> components_;
  std::shared_ptr<const std::vector<std::string>> names_;  // null: no components yet
  std::shared_ptr<const std::string> origin_source_;
  int64_t origin_index_ = -1;
  int64_t key_ = -1;
};

}  // namespace sluice

#endif  // SLUICE_CORE_ELEMENT_H_
