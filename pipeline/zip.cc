// zip: element i is the components of element i of every input, in order.
#include <algorithm>

#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/stages.h"
#include "sluice/pipeline/internal/state.h"

namespace sluice::pipeline_internal {
namespace {

ElementSpec ZipSpec(const std::vector<Dataset>& inputs) {
  std::vector<ComponentSpec> out;
  for (const Dataset& d : inputs) {
    if (!d.element_spec().known()) return ElementSpec::Unknown();
    for (const ComponentSpec& c : d.element_spec().components()) out.push_back(c);
  }
  return ElementSpec(std::move(out));
}

int64_t ZipCardinality(const std::vector<Dataset>& inputs) {
  int64_t n = kInfiniteCardinality;
  for (const Dataset& d : inputs) {
    const int64_t c = d.cardinality();
    if (c == kUnknownCardinality) return kUnknownCardinality;
    if (c == kInfiniteCardinality) continue;
    n = n == kInfiniteCardinality ? c : std::min(n, c);
  }
  return n;
}

std::vector<std::shared_ptr<const DatasetNode>> Nodes(const std::vector<Dataset>& inputs) {
  std::vector<std::shared_ptr<const DatasetNode>> out;
  for (const Dataset& d : inputs) out.push_back(d.node());
  return out;
}

// Joins one element of every input (names and origin from the parts).
Element Join(std::vector<Element>& parts) {
  std::vector<Tensor> comps;
  std::vector<std::string> names;
  for (Element& p : parts) {
    for (size_t i = 0; i < p.size(); ++i) {
      comps.push_back(std::move(p[i]));
      names.push_back(p.names()[i]);
    }
  }
  Element out(std::move(comps), std::move(names));
  if (!parts.empty()) out.set_origin(parts[0].origin_source(), parts[0].origin_index());
  return out;
}

class ZipIterator : public IteratorNode {
 public:
  ZipIterator(IteratorContext& ctx, const DatasetNode& node,
              std::vector<std::unique_ptr<IteratorNode>> inputs)
      : IteratorNode(&ctx, ctx.CountersFor(&node)), inputs_(std::move(inputs)) {}

  Status Save(StateWriter& w) override {
    w.Tag("zip");
    w.Bool(ended_);
    for (auto& in : inputs_) SLUICE_RETURN_IF_ERROR(in->Save(w));
    return Status::OK();
  }
  Status Restore(StateReader& r) override {
    SLUICE_RETURN_IF_ERROR(r.Tag("zip"));
    SLUICE_ASSIGN_OR_RETURN(ended_, r.Bool());
    for (auto& in : inputs_) SLUICE_RETURN_IF_ERROR(in->Restore(r));
    return Status::OK();
  }
  bool positional() const override {
    return std::all_of(inputs_.begin(), inputs_.end(),
                       [](const auto& in) { return in->positional(); });
  }
  int64_t position() const override { return inputs_[0]->position(); }
  Status SeekTo(int64_t n) override {
    ended_ = false;
    for (auto& in : inputs_) SLUICE_RETURN_IF_ERROR(in->SeekTo(n));
    return Status::OK();
  }

 protected:
  NextResult GetNext() override {
    if (ended_) return std::optional<Element>();
    std::vector<Element> parts;
    parts.reserve(inputs_.size());
    for (auto& in : inputs_) {
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, in->Next());
      if (!e) {
        ended_ = true;
        return std::optional<Element>();
      }
      parts.push_back(std::move(*e));
    }
    return std::optional<Element>(Join(parts));
  }

 private:
  std::vector<std::unique_ptr<IteratorNode>> inputs_;
  bool ended_ = false;
};

class ZipNode : public DatasetNode {
 public:
  explicit ZipNode(const std::vector<Dataset>& inputs)
      : DatasetNode("zip", "", Nodes(inputs), ZipSpec(inputs), ZipCardinality(inputs)) {}
  std::string Describe() const override {
    return "zip(" + std::to_string(inputs().size()) + " datasets)";
  }
  bool random_access() const override {
    if (cardinality() < 0) return false;
    for (const auto& in : inputs()) {
      if (!in->random_access()) return false;
    }
    return true;
  }
  Result<Element> Get(IteratorContext& ctx, int64_t i) const override {
    std::vector<Element> parts;
    for (const auto& in : inputs()) {
      SLUICE_ASSIGN_OR_RETURN(Element e, in->Get(ctx, i));
      parts.push_back(std::move(e));
    }
    return Join(parts);
  }
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams& params) const override {
    std::vector<std::unique_ptr<IteratorNode>> its;
    for (const auto& in : inputs()) {
      SLUICE_ASSIGN_OR_RETURN(auto it, MakeIteratorOf(*in, ctx, params));
      its.push_back(std::move(it));
    }
    return std::unique_ptr<IteratorNode>(std::make_unique<ZipIterator>(ctx, *this, std::move(its)));
  }
};

}  // namespace

Dataset MakeZip(const std::vector<Dataset>& inputs) {
  if (inputs.empty()) return Dataset::FromError(Status::InvalidArgument("zip: no datasets given"));
  for (const Dataset& d : inputs) {
    if (!d.status().ok()) return d;
  }
  return Dataset(std::make_shared<ZipNode>(inputs));
}

}  // namespace sluice::pipeline_internal
