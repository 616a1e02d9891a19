#include "sluice/core/element.h"

namespace sluice {

Element::Element(std::vector<Tensor> components)
    : components_(std::move(components)),
      names_(std::make_shared<const std::vector<std::string>>(components_.size())) {}

Element::Element(std::vector<Tensor> components, std::vector<std::string> names)
    : components_(std::move(components)) {
  names.resize(components_.size());
  names_ = std::make_shared<const std::vector<std::string>>(std::move(names));
}

Element::Element(std::vector<Tensor> components,
                 std::shared_ptr<const std::vector<std::string>> names)
    : components_(std::move(components)), names_(std::move(names)) {}

const std::vector<std::string>& Element::names() const {
  static const std::vector<std::string> kNone;
  return names_ ? *names_ : kNone;
}

int Element::index_of(std::string_view name) const {
  const std::vector<std::string>& n = names();
  for (size_t i = 0; i < n.size(); ++i) {
    if (n[i] == name) return static_cast<int>(i);
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
  for (const std::string& n : names()) {
    if (n.empty()) continue;
    if (!have.empty()) have += ", ";
    have += n;
  }
  return Status::NotFound("element has no component named '" + std::string(name) +
                          "' (it has: " + (have.empty() ? "no named components" : have) + ")");
}

void Element::push_back(Tensor t, std::string name) {
  auto names = std::make_shared<std::vector<std::string>>(this->names());
  names->push_back(std::move(name));
  names_ = std::move(names);
  components_.push_back(std::move(t));
}

std::string Element::OriginString() const {
  std::string out;
  if (origin_source_) out = *origin_source_;
  if (origin_index_ >= 0) {
    if (!out.empty()) out += ' ';
    out += "record " + std::to_string(origin_index_);
  }
  return out;
}

std::string Element::DebugString(int max_entries) const {
  std::string out = "(";
  for (size_t i = 0; i < components_.size(); ++i) {
    if (i) out += ", ";
    if (!names()[i].empty()) out += names()[i] + ": ";
    out += components_[i].DebugString(max_entries);
  }
  return out + ")";
}

}  // namespace sluice
