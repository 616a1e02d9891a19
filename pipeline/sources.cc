// range, from_tensor_slices, from_tensors: in-memory random-access sources.
#include "sluice/pipeline/internal/indexed_iterator.h"
#include "sluice/pipeline/internal/stages.h"

namespace sluice::pipeline_internal {
namespace {

class RandomAccessSource : public DatasetNode {
 public:
  using DatasetNode::DatasetNode;
  bool random_access() const override { return true; }
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams&) const override {
    return std::unique_ptr<IteratorNode>(std::make_unique<IndexedIterator>(ctx, *this));
  }
};

int64_t RangeCount(int64_t start, int64_t stop, int64_t step) {
  if (step > 0) return stop > start ? (stop - start - 1) / step + 1 : 0;
  return start > stop ? (start - stop - 1) / (-step) + 1 : 0;
}

class RangeNode : public RandomAccessSource {
 public:
  RangeNode(int64_t start, int64_t stop, int64_t step)
      : RandomAccessSource("range", "", {}, ElementSpec({{"", DType::kInt64, Shape{}}}),
                           RangeCount(start, stop, step)),
        start_(start),
        stop_(stop),
        step_(step) {}
  std::string Describe() const override {
    return "range(" + std::to_string(start_) + ", " + std::to_string(stop_) + ", " +
           std::to_string(step_) + ")";
  }
  Result<Element> Get(IteratorContext&, int64_t i) const override {
    return Element({Tensor::Scalar<int64_t>(start_ + i * step_)});
  }

 private:
  int64_t start_, stop_, step_;
};

class SlicesNode : public RandomAccessSource {
 public:
  SlicesNode(std::vector<Tensor> tensors, std::shared_ptr<const std::vector<std::string>> names,
             ElementSpec spec, int64_t n)
      : RandomAccessSource("from_tensor_slices", "", {}, std::move(spec), n),
        tensors_(std::move(tensors)),
        names_(std::move(names)) {}
  Result<Element> Get(IteratorContext&, int64_t i) const override {
    std::vector<Tensor> row;
    row.reserve(tensors_.size());
    for (const Tensor& t : tensors_) {
      SLUICE_ASSIGN_OR_RETURN(Tensor r, t.Row(i));
      row.push_back(std::move(r));
    }
    return Element(std::move(row), names_);
  }

 private:
  std::vector<Tensor> tensors_;
  std::shared_ptr<const std::vector<std::string>> names_;
};

class TensorsNode : public RandomAccessSource {
 public:
  explicit TensorsNode(Element e)
      : RandomAccessSource("from_tensors", "", {}, ElementSpec::Of(e), 1), e_(std::move(e)) {}
  Result<Element> Get(IteratorContext&, int64_t) const override { return e_; }

 private:
  Element e_;
};

}  // namespace

Dataset MakeRange(int64_t start, int64_t stop, int64_t step) {
  if (step == 0) return Dataset::FromError(Status::InvalidArgument("range: step must not be 0"));
  return Dataset(std::make_shared<RangeNode>(start, stop, step));
}

Dataset MakeFromTensorSlices(std::vector<Tensor> tensors, std::vector<std::string> names) {
  if (tensors.empty()) {
    return Dataset::FromError(Status::InvalidArgument("from_tensor_slices: no tensors given"));
  }
  if (!names.empty() && names.size() != tensors.size()) {
    return Dataset::FromError(
        Status::InvalidArgument("from_tensor_slices: " + std::to_string(names.size()) +
                                " names for " + std::to_string(tensors.size()) + " tensors"));
  }
  names.resize(tensors.size());
  std::string shapes;
  bool mismatch = false;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (i) shapes += ", ";
    shapes += ShapeSpecString(tensors[i].dtype(), tensors[i].shape());
    if (tensors[i].shape().rank() == 0) {
      return Dataset::FromError(Status::InvalidArgument(
          "from_tensor_slices: tensor " + std::to_string(i) + " is a scalar (" +
          ShapeSpecString(tensors[i].dtype(), tensors[i].shape()) +
          "); slicing needs at least one dimension"));
    }
    if (tensors[i].shape().dim(0) != tensors[0].shape().dim(0)) mismatch = true;
  }
  if (mismatch) {
    return Dataset::FromError(Status::InvalidArgument(
        "from_tensor_slices: the tensors' first dimensions differ: " + shapes));
  }
  std::vector<ComponentSpec> spec;
  for (size_t i = 0; i < tensors.size(); ++i) {
    spec.push_back({names[i], tensors[i].dtype(), tensors[i].shape().Subshape(1)});
  }
  const int64_t n = tensors[0].shape().dim(0);
  auto shared = std::make_shared<const std::vector<std::string>>(std::move(names));
  return Dataset(
      std::make_shared<SlicesNode>(std::move(tensors), shared, ElementSpec(std::move(spec)), n));
}

Dataset MakeFromTensors(Element element) {
  return Dataset(std::make_shared<TensorsNode>(std::move(element)));
}

}  // namespace sluice::pipeline_internal
