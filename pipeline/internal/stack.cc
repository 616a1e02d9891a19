#include "sluice/pipeline/internal/stack.h"

#include <oneapi/tbb/parallel_for.h>

#include <cstring>
#include <optional>

#include "sluice/pipeline/element_spec.h"

namespace sluice::pipeline_internal {
namespace {

// The batch as a view, if component `c` of the rows already lies back to
// back in one allocation in order (rows a fused map placed into a batch
// buffer, or slices of one batch); nullopt otherwise.
std::optional<Tensor> JoinAdjacentRows(const std::vector<Element>& rows, size_t c,
                                       const Shape& shape, size_t row_bytes) {
  const Tensor& first = rows[0][c];
  if (row_bytes == 0 || !first.buffer()) return std::nullopt;
  for (size_t i = 1; i < rows.size(); ++i) {
    const Tensor& t = rows[i][c];
    if (!t.buffer().SameAllocation(first.buffer()) ||
        t.buffer_offset() != first.buffer_offset() + i * row_bytes) {
      return std::nullopt;
    }
  }
  Result<Tensor> t =
      Tensor::FromBuffer(first.dtype(), shape, first.buffer(), first.buffer_offset());
  if (!t.ok()) return std::nullopt;
  return std::move(t).value();
}

}  // namespace

Result<Tensor> StackComponent(const std::vector<Element>& rows, size_t c, const std::string& stage,
                              bool parallel) {
  const Tensor& first = rows[0][c];
  for (size_t i = 1; i < rows.size(); ++i) {
    if (rows[i].size() != rows[0].size()) {
      return Status::InvalidArgument("stage '" + stage + "': element " + std::to_string(i) +
                                     " of the batch has " + std::to_string(rows[i].size()) +
                                     " components, element 0 has " +
                                     std::to_string(rows[0].size()));
    }
    const Tensor& t = rows[i][c];
    if (t.dtype() != first.dtype() || !(t.shape() == first.shape())) {
      const std::string& n = rows[0].names()[c];
      return Status::InvalidArgument(
          "stage '" + stage + "': cannot batch component " +
          (n.empty() ? std::to_string(c) : "'" + n + "'") + ": element 0 of the batch is " +
          ShapeSpecString(first.dtype(), first.shape()) + " but element " + std::to_string(i) +
          " is " + ShapeSpecString(t.dtype(), t.shape()) +
          " (use padded_batch for varying shapes)");
    }
  }
  const Shape shape = first.shape().Prepend(static_cast<int64_t>(rows.size()));
  if (first.dtype() == DType::kString) {
    SLUICE_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(DType::kString, shape));
    auto dst = out.flat<std::string_view>();
    size_t k = 0;
    for (const Element& e : rows) {
      for (std::string_view s : e[c].flat<std::string_view>()) dst[k++] = s;
      for (const Buffer& b : e[c].string_owners()) out.AddStringOwner(b);
    }
    return out;
  }
  const size_t row_bytes = first.byte_size();
  if (std::optional<Tensor> joined = JoinAdjacentRows(rows, c, shape, row_bytes)) return *joined;
  SLUICE_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(first.dtype(), shape));
  char* base = static_cast<char*>(out.raw_data());
  auto copy = [&](size_t i) {
    if (row_bytes) std::memcpy(base + i * row_bytes, rows[i][c].raw_data(), row_bytes);
  };
  if (parallel && row_bytes * rows.size() >= (1 << 20)) {
    tbb::parallel_for(size_t{0}, rows.size(), copy);
  } else {
    for (size_t i = 0; i < rows.size(); ++i) copy(i);
  }
  return out;
}

Result<Element> StackElements(const std::vector<Element>& rows, const std::string& stage,
                              bool parallel) {
  std::vector<Tensor> out;
  out.reserve(rows[0].size());
  for (size_t c = 0; c < rows[0].size(); ++c) {
    SLUICE_ASSIGN_OR_RETURN(Tensor t, StackComponent(rows, c, stage, parallel));
    out.push_back(std::move(t));
  }
  Element e(std::move(out), rows[0].names());
  e.set_origin(rows[0].origin_source(), rows[0].origin_index());
  return e;
}

Result<Element> ConcatBatches(const std::vector<Element>& pieces, const std::string& stage) {
  const Element& first = pieces[0];
  for (const Element& p : pieces) {
    if (p.size() != first.size()) {
      return Status::InvalidArgument("stage '" + stage + "': cannot join batches of " +
                                     std::to_string(first.size()) + " and " +
                                     std::to_string(p.size()) + " components");
    }
  }
  std::vector<Tensor> out;
  out.reserve(first.size());
  for (size_t c = 0; c < first.size(); ++c) {
    const Tensor& f = first[c];
    if (f.shape().rank() == 0) {
      return Status::InvalidArgument("stage '" + stage +
                                     "': a stacked piece has a scalar component");
    }
    int64_t rows = 0;
    for (const Element& p : pieces) {
      const Tensor& t = p[c];
      if (t.dtype() != f.dtype() || t.shape().rank() != f.shape().rank() ||
          !(t.shape().Subshape(1) == f.shape().Subshape(1))) {
        return Status::InvalidArgument("stage '" + stage + "': cannot join batches of " +
                                       ShapeSpecString(f.dtype(), f.shape()) + " and " +
                                       ShapeSpecString(t.dtype(), t.shape()));
      }
      rows += t.shape().dim(0);
    }
    Shape shape = f.shape().Subshape(1).Prepend(rows);
    SLUICE_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(f.dtype(), shape));
    if (f.dtype() == DType::kString) {
      auto dst = t.flat<std::string_view>();
      size_t k = 0;
      for (const Element& p : pieces) {
        for (std::string_view v : p[c].flat<std::string_view>()) dst[k++] = v;
        for (const Buffer& b : p[c].string_owners()) t.AddStringOwner(b);
      }
    } else {
      char* dst = static_cast<char*>(t.raw_data());
      for (const Element& p : pieces) {
        if (p[c].byte_size()) std::memcpy(dst, p[c].raw_data(), p[c].byte_size());
        dst += p[c].byte_size();
      }
    }
    out.push_back(std::move(t));
  }
  Element e(std::move(out), first.shared_names());
  e.set_origin(first.origin_source(), first.origin_index());
  return e;
}

}  // namespace sluice::pipeline_internal
