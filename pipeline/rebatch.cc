// rebatch: tf.data's Dataset.rebatch. The rows of the input's batches
// regrouped into batches of the given size(s), as unbatch().batch(n) would,
// without making the rows: a batch that lies within one input batch is a
// view of its rows (no copy), one that spans input batches is one copy of
// the row ranges. The list form uses the sizes in turn, cyclically.
#include <algorithm>
#include <functional>
#include <limits>
#include <numeric>

#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/stack.h"
#include "sluice/pipeline/internal/stages.h"
#include "sluice/pipeline/internal/state.h"

namespace sluice::pipeline_internal {
namespace {

bool AllEqual(const std::vector<int64_t>& v) {
  return std::adjacent_find(v.begin(), v.end(), std::not_equal_to<>()) == v.end();
}

ElementSpec RebatchedSpec(const ElementSpec& in, const std::vector<int64_t>& sizes, bool drop) {
  if (!in.known()) return ElementSpec::Unknown();
  const int64_t dim0 = drop && AllEqual(sizes) ? sizes[0] : Shape::kUnknownDim;
  std::vector<ComponentSpec> out = in.components();
  for (ComponentSpec& c : out) {
    if (!c.shape.unknown_rank()) c.shape = c.shape.Subshape(1).Prepend(dim0);
  }
  return ElementSpec(std::move(out));
}

int64_t RebatchedCardinality(const Dataset& input, const std::vector<int64_t>& sizes, bool drop) {
  const int64_t n = input.cardinality();
  if (n == 0 || n == kInfiniteCardinality) return n;
  const ElementSpec& s = input.element_spec();
  if (n < 0 || !s.known() || s.size() == 0) return kUnknownCardinality;
  const Shape& first = s.components()[0].shape;
  if (first.unknown_rank() || first.dim(0) == Shape::kUnknownDim) return kUnknownCardinality;
  for (int64_t b : sizes) {
    if (b == 0) return kUnknownCardinality;  // empty batches: counted only while rows remain
  }
  if (first.dim(0) != 0 && n > std::numeric_limits<int64_t>::max() / first.dim(0)) {
    return kUnknownCardinality;
  }
  const int64_t rows = n * first.dim(0);
  const int64_t cycle = std::accumulate(sizes.begin(), sizes.end(), int64_t{0});
  int64_t out = rows / cycle * static_cast<int64_t>(sizes.size());
  int64_t rest = rows % cycle;
  for (size_t i = 0; rest > 0; ++i) {
    if (sizes[i] <= rest || !drop) ++out;
    rest -= sizes[i];
  }
  return out;
}

class RebatchIterator : public IteratorNode {
 public:
  RebatchIterator(IteratorContext& ctx, const DatasetNode& node,
                  std::unique_ptr<IteratorNode> input, const std::vector<int64_t>& sizes, bool drop)
      : IteratorNode(&ctx, ctx.CountersFor(&node)),
        node_(node),
        input_(std::move(input)),
        sizes_(sizes),
        drop_(drop) {}

  Status Save(StateWriter& w) override {
    w.Tag("rebatch");
    w.I64(turn_);
    w.Bool(ended_);
    w.Bool(current_.has_value());
    if (current_) {
      SLUICE_RETURN_IF_ERROR(w.Elem(*current_));
      w.I64(row_);
    }
    return input_->Save(w);
  }
  Status Restore(StateReader& r) override {
    SLUICE_RETURN_IF_ERROR(r.Tag("rebatch"));
    current_.reset();
    rows_ = row_ = 0;
    SLUICE_ASSIGN_OR_RETURN(turn_, r.I64());
    if (turn_ < 0 || turn_ >= static_cast<int64_t>(sizes_.size())) {
      return Status::DataLoss("iterator state: bad rebatch turn " + std::to_string(turn_));
    }
    SLUICE_ASSIGN_OR_RETURN(ended_, r.Bool());
    SLUICE_ASSIGN_OR_RETURN(bool has, r.Bool());
    if (has) {
      SLUICE_ASSIGN_OR_RETURN(Element e, r.Elem());
      SLUICE_ASSIGN_OR_RETURN(int64_t row, r.I64());
      SLUICE_RETURN_IF_ERROR(SetCurrent(std::move(e)));
      if (row < 0 || row > rows_) return Status::DataLoss("iterator state: bad rebatch row");
      row_ = row;
    }
    return input_->Restore(r);
  }

 protected:
  NextResult GetNext() override {
    const int64_t want = sizes_[static_cast<size_t>(turn_)];
    std::vector<Element> pieces;
    int64_t have = 0;
    for (;;) {
      if (current_ && row_ < rows_ && (have < want || want == 0)) {
        const int64_t take = std::min(want - have, rows_ - row_);
        SLUICE_ASSIGN_OR_RETURN(Element piece, Rows(row_, row_ + take));
        row_ += take;
        have += take;
        pieces.push_back(std::move(piece));
        if (have == want) break;
        continue;
      }
      if (ended_) break;
      if (ctx()->cancelled()) return Status::Cancelled("pipeline cancelled");
      current_.reset();
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, input_->Next());
      if (!e) {
        ended_ = true;
        break;
      }
      SLUICE_RETURN_IF_ERROR(SetCurrent(std::move(*e)));
    }
    if (pieces.empty() || (have < want && drop_)) return std::optional<Element>();
    turn_ = (turn_ + 1) % static_cast<int64_t>(sizes_.size());
    if (pieces.size() == 1) return std::optional<Element>(std::move(pieces[0]));
    WorkTimer timer(this);
    SLUICE_ASSIGN_OR_RETURN(Element out, ConcatBatches(pieces, node_.name()));
    return std::optional<Element>(std::move(out));
  }

 private:
  // Rows [begin, end) of the current input batch: views of its tensors.
  Result<Element> Rows(int64_t begin, int64_t end) const {
    std::vector<Tensor> comps;
    comps.reserve(current_->size());
    for (const Tensor& t : current_->components()) {
      SLUICE_ASSIGN_OR_RETURN(Tensor s, t.Slice(begin, end));
      comps.push_back(std::move(s));
    }
    Element out(std::move(comps), current_->shared_names());
    out.set_origin(current_->origin_source(), current_->origin_index());
    return out;
  }
  Status SetCurrent(Element e) {
    rows_ = 0;
    for (size_t i = 0; i < e.size(); ++i) {
      const Shape& s = e[i].shape();
      if (s.rank() == 0) {
        return Status::InvalidArgument(
            "stage '" + node_.name() + "': component " + std::to_string(i) + " is a scalar (" +
            ShapeSpecString(e[i].dtype(), s) + "); rebatch needs batches");
      }
      if (i > 0 && s.dim(0) != rows_) {
        return Status::InvalidArgument(
            "stage '" + node_.name() + "': components have different first dimensions: " +
            ShapeSpecString(e[0].dtype(), e[0].shape()) + " and " +
            ShapeSpecString(e[i].dtype(), s) + " (component " + std::to_string(i) + ")");
      }
      rows_ = s.dim(0);
    }
    current_ = std::move(e);
    row_ = 0;
    return Status::OK();
  }

  const DatasetNode& node_;
  std::unique_ptr<IteratorNode> input_;
  const std::vector<int64_t>& sizes_;
  const bool drop_;
  std::optional<Element> current_;  // the input batch being cut
  int64_t rows_ = 0;
  int64_t row_ = 0;   // its next row
  int64_t turn_ = 0;  // index into sizes_ of the next batch
  bool ended_ = false;
};

std::string SizesString(const std::vector<int64_t>& sizes) {
  if (sizes.size() == 1) return std::to_string(sizes[0]);
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + "]";
}

class RebatchNode : public DatasetNode {
 public:
  RebatchNode(const Dataset& input, std::vector<int64_t> sizes, RebatchOptions o)
      : DatasetNode("rebatch", o.name, {input.node()},
                    RebatchedSpec(input.element_spec(), sizes, o.drop_remainder),
                    RebatchedCardinality(input, sizes, o.drop_remainder)),
        sizes_(std::move(sizes)),
        drop_(o.drop_remainder) {}
  std::string Describe() const override { return name() + "(" + SizesString(sizes_) + ")"; }
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams& params) const override {
    SLUICE_ASSIGN_OR_RETURN(auto input, MakeIteratorOf(*inputs()[0], ctx, params));
    return std::unique_ptr<IteratorNode>(
        std::make_unique<RebatchIterator>(ctx, *this, std::move(input), sizes_, drop_));
  }

 private:
  std::vector<int64_t> sizes_;
  bool drop_;
};

}  // namespace

Dataset MakeRebatch(const Dataset& input, std::vector<int64_t> batch_sizes,
                    RebatchOptions options) {
  if (batch_sizes.empty()) {
    return Dataset::FromError(Status::InvalidArgument("rebatch: batch_size is an empty list"));
  }
  int64_t total = 0;
  for (int64_t b : batch_sizes) {
    if (b < 0 || (batch_sizes.size() == 1 && b == 0)) {
      return Dataset::FromError(Status::InvalidArgument(
          "rebatch: batch_size must be " + std::string(batch_sizes.size() == 1 ? ">= 1" : ">= 0") +
          ", got " + SizesString(batch_sizes)));
    }
    total += b;
  }
  if (total == 0) {
    return Dataset::FromError(Status::InvalidArgument("rebatch: the batch sizes " +
                                                      SizesString(batch_sizes) + " are all 0"));
  }
  const ElementSpec& spec = input.element_spec();
  if (spec.known()) {
    for (size_t i = 0; i < spec.size(); ++i) {
      const ComponentSpec& c = spec.components()[i];
      if (!c.shape.unknown_rank() && c.shape.rank() == 0) {
        return Dataset::FromError(Status::InvalidArgument(
            "rebatch: component " + std::to_string(i) + " of " + spec.DebugString() +
            " is a scalar; rebatch needs batches (at least one dimension)"));
      }
    }
  }
  return Dataset(std::make_shared<RebatchNode>(input, std::move(batch_sizes), std::move(options)));
}

}  // namespace sluice::pipeline_internal
