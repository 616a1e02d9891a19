#include "sluice/pipeline/element_spec.h"

namespace sluice {

std::string ShapeSpecString(DType dtype, const Shape& shape) {
  std::string out(DTypeName(dtype));
  if (shape.unknown_rank()) return out + "<unknown rank>";
  out += '[';
  for (int i = 0; i < shape.rank(); ++i) {
    if (i) out += ',';
    out += shape.dim(i) == Shape::kUnknownDim ? "?" : std::to_string(shape.dim(i));
  }
  return out + ']';
}

ElementSpec ElementSpec::Of(const Element& e) {
  std::vector<ComponentSpec> c;
  c.reserve(e.size());
  for (size_t i = 0; i < e.size(); ++i) c.push_back({e.names()[i], e[i].dtype(), e[i].shape()});
  return ElementSpec(std::move(c));
}

Status ElementSpec::Check(const Element& e) const {
  if (!known()) return Status::OK();
  const auto& c = *components_;
  if (e.size() != c.size()) {
    return Status::InvalidArgument("element has " + std::to_string(e.size()) +
                                   " components, the spec " + DebugString() + " has " +
                                   std::to_string(c.size()));
  }
  for (size_t i = 0; i < c.size(); ++i) {
    if (e[i].dtype() != c[i].dtype || !c[i].shape.IsCompatibleWith(e[i].shape())) {
      const std::string label = c[i].name.empty() ? std::to_string(i) : "'" + c[i].name + "'";
      return Status::InvalidArgument("component " + label + " is " +
                                     ShapeSpecString(e[i].dtype(), e[i].shape()) +
                                     ", the spec says " + ShapeSpecString(c[i].dtype, c[i].shape));
    }
  }
  return Status::OK();
}

Result<ElementSpec> ElementSpec::MostSpecificCompatible(const ElementSpec& other) const {
  if (!known() || !other.known()) return ElementSpec::Unknown();
  const auto& a = *components_;
  const auto& b = *other.components_;
  if (a.size() != b.size()) {
    return Status::InvalidArgument("specs " + DebugString() + " and " + other.DebugString() +
                                   " have different numbers of components");
  }
  std::vector<ComponentSpec> out;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].dtype != b[i].dtype) {
      return Status::InvalidArgument("component " + std::to_string(i) + " is " +
                                     ShapeSpecString(a[i].dtype, a[i].shape) + " in one and " +
                                     ShapeSpecString(b[i].dtype, b[i].shape) + " in the other");
    }
    ComponentSpec c{a[i].name == b[i].name ? a[i].name : "", a[i].dtype, a[i].shape};
    if (a[i].shape.unknown_rank() || b[i].shape.unknown_rank() ||
        a[i].shape.rank() != b[i].shape.rank()) {
      c.shape = Shape::UnknownRank();
    } else {
      for (int d = 0; d < a[i].shape.rank(); ++d) {
        if (a[i].shape.dim(d) != b[i].shape.dim(d)) c.shape.set_dim(d, Shape::kUnknownDim);
      }
    }
    out.push_back(std::move(c));
  }
  return ElementSpec(std::move(out));
}

std::string ElementSpec::DebugString() const {
  if (!known()) return "<unknown>";
  std::string out = "(";
  for (size_t i = 0; i < components_->size(); ++i) {
    const ComponentSpec& c = (*components_)[i];
    if (i) out += ", ";
    if (!c.name.empty()) out += c.name + ": ";
    out += ShapeSpecString(c.dtype, c.shape);
  }
  return out + ")";
}

}  // namespace sluice
