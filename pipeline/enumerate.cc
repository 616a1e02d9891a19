// enumerate: prepends an int64 scalar component "index" (start, start+1...).
#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/stages.h"
#include "sluice/pipeline/internal/state.h"

namespace sluice::pipeline_internal {
namespace {

ElementSpec EnumerateSpec(const ElementSpec& in) {
  if (!in.known()) return ElementSpec::Unknown();
  std::vector<ComponentSpec> out;
  out.push_back({"index", DType::kInt64, Shape{}});
  for (const ComponentSpec& c : in.components()) out.push_back(c);
  return ElementSpec(std::move(out));
}

Element Prepend(int64_t index, Element e) {
  std::vector<Tensor> comps;
  std::vector<std::string> names;
  comps.reserve(e.size() + 1);
  names.reserve(e.size() + 1);
  comps.push_back(Tensor::Scalar<int64_t>(index));
  names.push_back("index");
  for (size_t i = 0; i < e.size(); ++i) {
    comps.push_back(std::move(e[i]));
    names.push_back(e.names()[i]);
  }
  Element out(std::move(comps), std::move(names));
  out.set_origin(e.origin_source(), e.origin_index());
  return out;
}

class EnumerateIterator : public IteratorNode {
 public:
  EnumerateIterator(IteratorContext& ctx, const DatasetNode& node,
                    std::unique_ptr<IteratorNode> input, int64_t start)
      : IteratorNode(&ctx, ctx.CountersFor(&node)), input_(std::move(input)), start_(start) {}

  Status Save(StateWriter& w) override {
    w.Tag("enumerate");
    w.I64(count_);
    return input_->Save(w);
  }
  Status Restore(StateReader& r) override {
    SLUICE_RETURN_IF_ERROR(r.Tag("enumerate"));
    SLUICE_ASSIGN_OR_RETURN(count_, r.I64());
    return input_->Restore(r);
  }
  bool positional() const override { return input_->positional(); }
  int64_t position() const override { return input_->position(); }
  Status SeekTo(int64_t n) override {
    count_ = n;
    return input_->SeekTo(n);
  }

 protected:
  NextResult GetNext() override {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, input_->Next());
    if (!e) return e;
    return std::optional<Element>(Prepend(start_ + count_++, std::move(*e)));
  }

 private:
  std::unique_ptr<IteratorNode> input_;
  const int64_t start_;
  int64_t count_ = 0;
};

class EnumerateNode : public DatasetNode {
 public:
  EnumerateNode(const Dataset& input, int64_t start)
      : DatasetNode("enumerate", "", {input.node()}, EnumerateSpec(input.element_spec()),
                    input.cardinality()),
        start_(start) {}
  std::string Describe() const override {
    return start_ == 0 ? name() : name() + "(" + std::to_string(start_) + ")";
  }
  bool random_access() const override { return inputs()[0]->random_access(); }
  Result<Element> Get(IteratorContext& ctx, int64_t i) const override {
    SLUICE_ASSIGN_OR_RETURN(Element e, inputs()[0]->Get(ctx, i));
    return Prepend(start_ + i, std::move(e));
  }
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams& params) const override {
    SLUICE_ASSIGN_OR_RETURN(auto input, MakeIteratorOf(*inputs()[0], ctx, params));
    return std::unique_ptr<IteratorNode>(
        std::make_unique<EnumerateIterator>(ctx, *this, std::move(input), start_));
  }

 private:
  int64_t start_;
};

}  // namespace

Dataset MakeEnumerate(const Dataset& input, int64_t start) {
  return Dataset(std::make_shared<EnumerateNode>(input, start));
}

}  // namespace sluice::pipeline_internal
