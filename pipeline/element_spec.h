// ElementSpec: what a Dataset's elements look like (tf.data's element_spec),
// known when the graph is built so mismatches are reported then, not after an
// hour of training.
//
// One ComponentSpec per component: its name ("" if unnamed), dtype and shape,
// where a dimension may be unknown (kUnknownDim) and the rank may be unknown.
// A spec may also be wholly unknown (a map function that declared nothing):
// checks that need it are then made on the elements as they flow.
// Value type; const methods are thread-safe.
#ifndef SLUICE_PIPELINE_ELEMENT_SPEC_H_
#define SLUICE_PIPELINE_ELEMENT_SPEC_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sluice/core/dtype.h"
#include "sluice/core/element.h"
#include "sluice/core/shape.h"
#include "sluice/core/status.h"

namespace sluice {

// Cardinality values, as tf.data's: a count >= 0, or one of these.
inline constexpr int64_t kInfiniteCardinality = -1;
inline constexpr int64_t kUnknownCardinality = -2;

struct ComponentSpec {
  std::string name;
  DType dtype = DType::kFloat32;
  Shape shape;  // may have unknown dims or unknown rank
  friend bool operator==(const ComponentSpec&, const ComponentSpec&) = default;
};

class ElementSpec {
 public:
  // A wholly unknown spec.
  ElementSpec() = default;
  explicit ElementSpec(std::vector<ComponentSpec> components)
      : components_(std::move(components)) {}
  static ElementSpec Unknown() { return ElementSpec(); }
  // The spec that `e` conforms to most tightly (exact shapes).
  static ElementSpec Of(const Element& e);

  bool known() const { return components_.has_value(); }
  // REQUIRES: known().
  const std::vector<ComponentSpec>& components() const { return *components_; }
  size_t size() const { return components_ ? components_->size() : 0; }

  // OK if `e` has as many components with the same dtypes and shapes
  // compatible with this spec's (unknown dims match anything). Otherwise
  // InvalidArgument saying which component differs and how.
  Status Check(const Element& e) const;
  // The most specific spec that both this and `other` conform to (dims that
  // differ become unknown), or InvalidArgument if the counts or dtypes
  // differ. Unknown combined with anything is unknown.
  Result<ElementSpec> MostSpecificCompatible(const ElementSpec& other) const;

  // "(label: int64[], image: uint8[?,?,3])" or "<unknown>".
  std::string DebugString() const;
  friend bool operator==(const ElementSpec&, const ElementSpec&) = default;

 private:
  std::optional<std::vector<ComponentSpec>> components_;
};

// "int64[?,3]": dtype and shape with "?" for unknown dims, "<unknown rank>".
std::string ShapeSpecString(DType dtype, const Shape& shape);

}  // namespace sluice

#endif  // SLUICE_PIPELINE_ELEMENT_SPEC_H_
