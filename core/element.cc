#include "sluice/core/element.h"

namespace sluice {

Element::Element(std::vector<Tensor> components)
    : components_(std::move(components)), names_(components_.size()) {}

Element::Element(std::vector<Tensor> components, std::vector<std::string> names)
    : components_(std::move(components)), names_(std::move(names)) {
  names_.resize(components_.size());
}

int Element::index_of(std::string_view name) const {
  for (size_t i = 0; i < names_.size(); ++i) {
    if (names_[i] == name) return static_cast<int>(i);
  }
  return -1;
}

const Tensor* Element::find(std::string_view name) const {
  const int i = index_of(name);
  return i < 0 ? nullptr : &components_[i];
}

Tensor* Element::find(std::string_view name) {
  const int i = index_of(name);
  return i < 0 ? nullptr : &components_[i];
}

Result<Tensor> Element::get(std::string_view name) const {
  if (const Tensor* t = find(name)) return *t;
  std::string have;
  for (const std::string& n : names_) {
    if (n.empty()) continue;
    if (!have.empty()) have += ", ";
    have += n;
  }
  return Status::NotFound("element has no component named '" + std::string(name) +
                          "' (it has: " + (have.empty() ? "no named components" : have) + ")");
}

void Element::push_back(Tensor t, std::string name) {
  components_.push_back(std::move(t));
  names_.push_back(std::move(name));
}

std::string Element::DebugString(int max_entries) const {
  std::string out = "(";
  for (size_t i = 0; i < components_.size(); ++i) {
    if (i) out += ", ";
    if (!names_[i].empty()) out += names_[i] + ": ";
    out += components_[i].DebugString(max_entries);
  }
  return out + ")";
}

}  // namespace sluice
