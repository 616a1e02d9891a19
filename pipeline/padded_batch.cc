// padded_batch: batches elements of varying shapes, padding each component
// to padded_shapes (unknown dims: the batch's longest) with padding_values.
#include <algorithm>
#include <cstring>

#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/stack.h"
#include "sluice/pipeline/internal/stages.h"
#include "sluice/pipeline/internal/state.h"

namespace sluice::pipeline_internal {
namespace {

std::string Label(const Element& e, size_t c) {
  const std::string& n = e.names()[c];
  return n.empty() ? std::to_string(c) : "'" + n + "'";
}

// Copies `row` (rank r) into `dst`, whose shape `to` has the same rank and
// dims >= row's: the row lands in the low corner.
void CopyPadded(const Tensor& row, const Shape& to, char* dst, size_t es) {
  const Shape& from = row.shape();
  const int r = from.rank();
  const char* src = static_cast<const char*>(row.raw_data());
  if (row.num_elements() == 0) return;
  if (r == 0) {
    std::memcpy(dst, src, es);
    return;
  }
  // Strides (in elements) of the destination.
  std::vector<int64_t> stride(static_cast<size_t>(r), 1);
  for (int d = r - 2; d >= 0; --d) stride[d] = stride[d + 1] * to.dim(d + 1);
  const size_t run = static_cast<size_t>(from.dim(r - 1)) * es;
  const int64_t runs = row.num_elements() / from.dim(r - 1);
  std::vector<int64_t> idx(static_cast<size_t>(r), 0);  // over dims [0, r-1)
  for (int64_t k = 0; k < runs; ++k) {
    int64_t off = 0;
    for (int d = 0; d < r - 1; ++d) off += idx[d] * stride[d];
    std::memcpy(dst + off * static_cast<int64_t>(es), src + k * static_cast<int64_t>(run), run);
    for (int d = r - 2; d >= 0; --d) {
      if (++idx[d] < from.dim(d)) break;
      idx[d] = 0;
    }
  }
}

class PaddedBatchIterator : public IteratorNode {
 public:
  PaddedBatchIterator(IteratorContext& ctx, const DatasetNode& node,
                      std::unique_ptr<IteratorNode> input, int64_t bs, const PaddedBatchOptions& o)
      : IteratorNode(&ctx, ctx.CountersFor(&node)),
        node_(node),
        input_(std::move(input)),
        bs_(bs),
        o_(o) {}

  Status Save(StateWriter& w) override {
    w.Tag("padded_batch");
    return input_->Save(w);
  }
  Status Restore(StateReader& r) override {
    SLUICE_RETURN_IF_ERROR(r.Tag("padded_batch"));
    return input_->Restore(r);
  }
  bool positional() const override { return input_->positional(); }
  int64_t position() const override { return (input_->position() + bs_ - 1) / bs_; }
  Status SeekTo(int64_t n) override { return input_->SeekTo(n * bs_); }

 protected:
  NextResult GetNext() override {
    std::vector<Element> rows;
    rows.reserve(static_cast<size_t>(std::min<int64_t>(bs_, 4096)));
    // The rows are charged while the batch is built (they left the input's
    // buffers); rows that alone exceed the budget are an error.
    ScopedCharge charge(ctx()->memory());
    input_->ExpectNext(bs_);
    while (static_cast<int64_t>(rows.size()) < bs_) {
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, input_->Next());
      if (!e) break;
      charge.Add(ElementBytes(*e));
      rows.push_back(std::move(*e));
      if (charge.bytes() > ctx()->memory().limit()) {
        return TooBigForBudget(node_.name(),
                               "the first " + std::to_string(rows.size()) + " rows of a batch of " +
                                   std::to_string(bs_),
                               charge.bytes(), ctx()->memory().limit());
      }
    }
    if (rows.empty() || (o_.drop_remainder && static_cast<int64_t>(rows.size()) < bs_)) {
      return std::optional<Element>();
    }
    Result<Element> b = [&] {
      WorkTimer timer(this);
      return Pad(rows);
    }();
    if (!b.ok()) return b.status();
    return std::optional<Element>(std::move(b).value());
  }

 private:
  Status Err(const std::string& what) const {
    return Status::InvalidArgument("stage '" + node_.name() + "': " + what);
  }

  Result<Element> Pad(const std::vector<Element>& rows) const {
    const size_t nc = rows[0].size();
    if (!o_.padded_shapes.empty() && o_.padded_shapes.size() != nc) {
      return Err(std::to_string(o_.padded_shapes.size()) + " padded_shapes for elements of " +
                 std::to_string(nc) + " components");
    }
    if (!o_.padding_values.empty() && o_.padding_values.size() != nc) {
      return Err(std::to_string(o_.padding_values.size()) + " padding_values for elements of " +
                 std::to_string(nc) + " components");
    }
    std::vector<Tensor> out;
    out.reserve(nc);
    for (size_t c = 0; c < nc; ++c) {
      SLUICE_ASSIGN_OR_RETURN(Tensor t, PadComponent(rows, c));
      out.push_back(std::move(t));
    }
    Element e(std::move(out), rows[0].names());
    e.set_origin(rows[0].origin_source(), rows[0].origin_index());
    return e;
  }

  Result<Tensor> PadComponent(const std::vector<Element>& rows, size_t c) const {
    const Tensor& first = rows[0][c];
    const DType dtype = first.dtype();
    const int rank = first.shape().rank();
    const Shape* padded = o_.padded_shapes.empty() ? nullptr : &o_.padded_shapes[c];
    if (padded && !padded->unknown_rank() && padded->rank() != rank) {
      return Err("component " + Label(rows[0], c) + " of element 0 of the batch is " +
                 ShapeSpecString(dtype, first.shape()) + " but its padded shape is " +
                 padded->ToString() + " (ranks differ)");
    }
    std::vector<int64_t> dims(static_cast<size_t>(rank), 0);
    for (size_t i = 0; i < rows.size(); ++i) {
      if (rows[i].size() != rows[0].size()) {
        return Err("element " + std::to_string(i) + " of the batch has " +
                   std::to_string(rows[i].size()) + " components, element 0 has " +
                   std::to_string(rows[0].size()));
      }
      const Tensor& t = rows[i][c];
      if (t.dtype() != dtype || t.shape().rank() != rank) {
        return Err("cannot batch component " + Label(rows[0], c) + ": element 0 of the batch is " +
                   ShapeSpecString(dtype, first.shape()) + " but element " + std::to_string(i) +
                   " is " + ShapeSpecString(t.dtype(), t.shape()) +
                   " (padded_batch pads dimensions, not dtypes or ranks)");
      }
      for (int d = 0; d < rank; ++d) {
        const int64_t p = padded && !padded->unknown_rank() ? padded->dim(d) : Shape::kUnknownDim;
        if (p != Shape::kUnknownDim && t.shape().dim(d) > p) {
          return Err("component " + Label(rows[i], c) + " of element " + std::to_string(i) +
                     " of the batch is " + ShapeSpecString(t.dtype(), t.shape()) +
                     ", larger than its padded shape " + padded->ToString() + " in dimension " +
                     std::to_string(d));
        }
        dims[d] = p != Shape::kUnknownDim ? p : std::max(dims[d], t.shape().dim(d));
      }
    }
    const Tensor* pad = o_.padding_values.empty() ? nullptr : &o_.padding_values[c];
    if (pad && (pad->dtype() != dtype || pad->num_elements() != 1)) {
      return Err("padding value of component " + Label(rows[0], c) + " is " +
                 ShapeSpecString(pad->dtype(), pad->shape()) + "; expected a " +
                 std::string(DTypeName(dtype)) + " scalar");
    }
    Shape row_shape{std::span<const int64_t>(dims)};
    const Shape shape = row_shape.Prepend(static_cast<int64_t>(rows.size()));
    SLUICE_ASSIGN_OR_RETURN(Tensor out,
                            pad ? Tensor::Allocate(dtype, shape) : Tensor::Zeros(dtype, shape));
    const size_t es = DTypeSize(dtype);
    char* base = static_cast<char*>(out.raw_data());
    if (pad) {
      const char* v = static_cast<const char*>(pad->raw_data());
      for (int64_t k = 0; k < out.num_elements(); ++k) std::memcpy(base + k * es, v, es);
      for (const Buffer& b : pad->string_owners()) out.AddStringOwner(b);
    }
    const size_t row_bytes = static_cast<size_t>(row_shape.num_elements()) * es;
    for (size_t i = 0; i < rows.size(); ++i) {
      const Tensor& t = rows[i][c];
      CopyPadded(t, row_shape, base + i * row_bytes, es);
      for (const Buffer& b : t.string_owners()) out.AddStringOwner(b);
    }
    return out;
  }

  const DatasetNode& node_;
  std::unique_ptr<IteratorNode> input_;
  const int64_t bs_;
  const PaddedBatchOptions& o_;
};

// The output spec, or InvalidArgument if the options contradict a known spec.
Result<ElementSpec> PaddedSpec(const ElementSpec& in, int64_t bs, const PaddedBatchOptions& o) {
  if (!in.known()) return ElementSpec::Unknown();
  const size_t nc = in.size();
  if (!o.padded_shapes.empty() && o.padded_shapes.size() != nc) {
    return Status::InvalidArgument("padded_batch: " + std::to_string(o.padded_shapes.size()) +
                                   " padded_shapes for elements " + in.DebugString() + " of " +
                                   std::to_string(nc) + " components");
  }
  if (!o.padding_values.empty() && o.padding_values.size() != nc) {
    return Status::InvalidArgument("padded_batch: " + std::to_string(o.padding_values.size()) +
                                   " padding_values for elements " + in.DebugString() + " of " +
                                   std::to_string(nc) + " components");
  }
  std::vector<ComponentSpec> out = in.components();
  for (size_t c = 0; c < nc; ++c) {
    ComponentSpec& cs = out[c];
    const std::string label = cs.name.empty() ? std::to_string(c) : "'" + cs.name + "'";
    if (!o.padding_values.empty()) {
      const Tensor& p = o.padding_values[c];
      if (p.dtype() != cs.dtype || p.shape().rank() != 0) {
        return Status::InvalidArgument("padded_batch: padding value of component " + label +
                                       " is " + ShapeSpecString(p.dtype(), p.shape()) +
                                       "; expected a " + std::string(DTypeName(cs.dtype)) +
                                       " scalar");
      }
    }
    if (!o.padded_shapes.empty()) {
      const Shape& p = o.padded_shapes[c];
      if (p.unknown_rank()) {
        // Pads every dimension to the batch's longest: the spec keeps its shape.
      } else if (cs.shape.unknown_rank()) {
        cs.shape = p;
      } else if (p.rank() != cs.shape.rank()) {
        return Status::InvalidArgument(
            "padded_batch: component " + label + " is " + ShapeSpecString(cs.dtype, cs.shape) +
            " but its padded shape " + p.ToString() + " has another rank");
      } else {
        for (int d = 0; d < p.rank(); ++d) {
          const int64_t known = cs.shape.dim(d);
          if (p.dim(d) == Shape::kUnknownDim) continue;
          if (known != Shape::kUnknownDim && known > p.dim(d)) {
            return Status::InvalidArgument("padded_batch: component " + label + " is " +
                                           ShapeSpecString(cs.dtype, cs.shape) +
                                           ", larger than its padded shape " + p.ToString());
          }
          cs.shape.set_dim(d, p.dim(d));
        }
      }
    }
    if (!cs.shape.unknown_rank()) cs.shape = cs.shape.Prepend(bs);
  }
  return ElementSpec(std::move(out));
}

class PaddedBatchNode : public DatasetNode {
 public:
  PaddedBatchNode(const Dataset& input, int64_t bs, PaddedBatchOptions o, ElementSpec spec)
      : DatasetNode("padded_batch", o.name, {input.node()}, std::move(spec),
                    BatchedCardinality(input.cardinality(), bs, o.drop_remainder)),
        bs_(bs),
        o_(std::move(o)) {}
  std::string Describe() const override { return name() + "(" + std::to_string(bs_) + ")"; }
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams& params) const override {
    SLUICE_ASSIGN_OR_RETURN(auto input, MakeIteratorOf(*inputs()[0], ctx, params));
    return std::unique_ptr<IteratorNode>(
        std::make_unique<PaddedBatchIterator>(ctx, *this, std::move(input), bs_, o_));
  }

 private:
  int64_t bs_;
  PaddedBatchOptions o_;
};

}  // namespace

Dataset MakePaddedBatch(const Dataset& input, int64_t batch_size, PaddedBatchOptions options) {
  if (batch_size < 1) {
    return Dataset::FromError(Status::InvalidArgument(
        "padded_batch: batch_size must be >= 1, got " + std::to_string(batch_size)));
  }
  Result<ElementSpec> spec = PaddedSpec(
      input.element_spec(), options.drop_remainder ? batch_size : Shape::kUnknownDim, options);
  if (!spec.ok()) return Dataset::FromError(spec.status());
  return Dataset(std::make_shared<PaddedBatchNode>(input, batch_size, std::move(options),
                                                   std::move(spec).value()));
}

}  // namespace sluice::pipeline_internal
