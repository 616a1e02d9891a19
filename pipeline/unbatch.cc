// unbatch: splits each element along its first dimension into rows.
#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/stages.h"
#include "sluice/pipeline/internal/state.h"

namespace sluice::pipeline_internal {
namespace {

ElementSpec UnbatchedSpec(const ElementSpec& in) {
  if (!in.known()) return ElementSpec::Unknown();
  std::vector<ComponentSpec> out = in.components();
  for (ComponentSpec& c : out) {
    if (!c.shape.unknown_rank()) c.shape = c.shape.Subshape(1);
  }
  return ElementSpec(std::move(out));
}

int64_t UnbatchedCardinality(const Dataset& input) {
  const int64_t n = input.cardinality();
  if (n == 0 || n == kInfiniteCardinality) return n;
  const ElementSpec& s = input.element_spec();
  if (n < 0 || !s.known() || s.size() == 0) return kUnknownCardinality;
  const Shape& first = s.components()[0].shape;
  if (first.unknown_rank() || first.dim(0) == Shape::kUnknownDim) return kUnknownCardinality;
  return n * first.dim(0);
}

class UnbatchIterator : public IteratorNode {
 public:
  UnbatchIterator(IteratorContext& ctx, const DatasetNode& node,
                  std::unique_ptr<IteratorNode> input)
      : IteratorNode(&ctx, ctx.CountersFor(&node)), node_(node), input_(std::move(input)) {}

  Status Save(StateWriter& w) override {
    w.Tag("unbatch");
    w.Bool(current_.has_value());
    if (current_) {
      SLUICE_RETURN_IF_ERROR(w.Elem(*current_));
      w.I64(row_);
    }
    return input_->Save(w);
  }
  Status Restore(StateReader& r) override {
    SLUICE_RETURN_IF_ERROR(r.Tag("unbatch"));
    SLUICE_ASSIGN_OR_RETURN(bool has, r.Bool());
    current_.reset();
    rows_ = row_ = 0;
    if (has) {
      SLUICE_ASSIGN_OR_RETURN(Element e, r.Elem());
      SLUICE_ASSIGN_OR_RETURN(int64_t row, r.I64());
      SLUICE_RETURN_IF_ERROR(SetCurrent(std::move(e)));
      if (row < 0 || row > rows_) return Status::DataLoss("iterator state: bad unbatch row");
      row_ = row;
    }
    return input_->Restore(r);
  }

 protected:
  NextResult GetNext() override {
    for (;;) {
      if (current_ && row_ < rows_) {
        std::vector<Tensor> comps;
        comps.reserve(current_->size());
        for (const Tensor& t : current_->components()) {
          SLUICE_ASSIGN_OR_RETURN(Tensor row, t.Row(row_));
          comps.push_back(std::move(row));
        }
        ++row_;
        Element out(std::move(comps), names_);
        out.set_origin(current_->origin_source(), current_->origin_index());
        return std::optional<Element>(std::move(out));
      }
      current_.reset();
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, input_->Next());
      if (!e) return e;
      SLUICE_RETURN_IF_ERROR(SetCurrent(std::move(*e)));
      row_ = 0;
    }
  }

 private:
  Status SetCurrent(Element e) {
    rows_ = 0;
    for (size_t i = 0; i < e.size(); ++i) {
      const Shape& s = e[i].shape();
      if (s.rank() == 0) {
        return Status::InvalidArgument("stage '" + node_.name() + "': component " +
                                       std::to_string(i) + " is a scalar (" +
                                       ShapeSpecString(e[i].dtype(), s) + "); cannot unbatch it");
      }
      if (i > 0 && s.dim(0) != rows_) {
        return Status::InvalidArgument(
            "stage '" + node_.name() + "': components have different first dimensions: " +
            ShapeSpecString(e[0].dtype(), e[0].shape()) + " and " +
            ShapeSpecString(e[i].dtype(), s) + " (component " + std::to_string(i) + ")");
      }
      rows_ = s.dim(0);
    }
    names_ = std::make_shared<const std::vector<std::string>>(e.names());
    current_ = std::move(e);
    return Status::OK();
  }

  const DatasetNode& node_;
  std::unique_ptr<IteratorNode> input_;
  std::optional<Element> current_;
  std::shared_ptr<const std::vector<std::string>> names_;
  int64_t rows_ = 0;
  int64_t row_ = 0;
};

class UnbatchNode : public DatasetNode {
 public:
  explicit UnbatchNode(const Dataset& input)
      : DatasetNode("unbatch", "", {input.node()}, UnbatchedSpec(input.element_spec()),
                    UnbatchedCardinality(input)) {}
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams& params) const override {
    SLUICE_ASSIGN_OR_RETURN(auto input, MakeIteratorOf(*inputs()[0], ctx, params));
    return std::unique_ptr<IteratorNode>(
        std::make_unique<UnbatchIterator>(ctx, *this, std::move(input)));
  }
};

}  // namespace

Dataset MakeUnbatch(const Dataset& input) {
  const ElementSpec& spec = input.element_spec();
  if (spec.known()) {
    for (size_t i = 0; i < spec.size(); ++i) {
      const ComponentSpec& c = spec.components()[i];
      if (!c.shape.unknown_rank() && c.shape.rank() == 0) {
        return Dataset::FromError(Status::InvalidArgument(
            "unbatch: component " + std::to_string(i) + " of " + spec.DebugString() +
            " is a scalar; unbatch needs at least one dimension"));
      }
    }
  }
  return Dataset(std::make_shared<UnbatchNode>(input));
}

}  // namespace sluice::pipeline_internal
