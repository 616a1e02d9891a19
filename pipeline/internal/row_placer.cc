#include "sluice/pipeline/internal/row_placer.h"

#include <cstring>
#include <utility>

namespace sluice::pipeline_internal {
namespace {

bool Placeable(const Tensor& t) {
  return t.dtype() != DType::kString && t.byte_size() >= RowPlacer::kMinBytes;
}

}  // namespace

RowPlacer::Open& RowPlacer::OpenLocked(int64_t b) {
  auto it = open_.find(b);
  if (it != open_.end()) return it->second;
  // Batches left open by elements that never came (a restore, the end of
  // the input): let the oldest go.
  while (open_.size() >= kMaxOpen) open_.erase(open_.begin());
  Open& o = open_[b];
  open_count_.store(open_.size(), std::memory_order_relaxed);
  return o;
}

void RowPlacer::SeenLocked(int64_t b) {
  auto it = open_.find(b);
  if (it != open_.end() && ++it->second.seen >= rows_) {
    open_.erase(it);
    open_count_.store(open_.size(), std::memory_order_relaxed);
  }
}

Buffer RowPlacer::ClaimLocked(Open& o, size_t c, size_t row, DType dtype, const Shape& shape,
                              size_t bytes) {
  if (o.columns.size() <= c) o.columns.resize(c + 1);
  Column& col = o.columns[c];
  if (!col.tried) {  // the batch's first row of this component
    col.tried = true;
    col.dtype = dtype;
    col.shape = shape;
    size_t total = 0;
    if (!__builtin_mul_overflow(bytes, static_cast<size_t>(rows_), &total) &&
        total <= kMaxBatchBytes) {
      Result<Buffer> buf = Buffer::Allocate(total);
      if (buf.ok()) {
        col.buffer = std::move(buf).value();
        col.used.assign(static_cast<size_t>(rows_), false);
      }
    }
  }
  if (!col.buffer || col.used[row] || col.dtype != dtype || !(col.shape == shape)) return Buffer();
  col.used[row] = true;
  return col.buffer;
}

std::optional<Tensor> RowPlacer::Reserve(int64_t index, size_t component, DType dtype,
                                         const Shape& shape) {
  if (index < 0 || dtype == DType::kString) return std::nullopt;
  const std::optional<int64_t> n = shape.CheckedNumElements();
  size_t bytes = 0;
  if (!n || __builtin_mul_overflow(static_cast<size_t>(*n), DTypeSize(dtype), &bytes) ||
      bytes < kMinBytes) {
    return std::nullopt;  // Tensor::Allocate reports a bad shape
  }
  const auto row = static_cast<size_t>(index % rows_);
  Buffer buffer;
  {
    std::lock_guard<std::mutex> l(mu_);
    buffer = ClaimLocked(OpenLocked(index / rows_), component, row, dtype, shape, bytes);
  }
  if (!buffer) return std::nullopt;
  Result<Tensor> view = Tensor::FromBuffer(dtype, shape, std::move(buffer), row * bytes);
  if (!view.ok()) return std::nullopt;
  return std::move(view).value();
}

void RowPlacer::Place(int64_t index, Element& e) {
  if (index < 0) return;
  bool any = false;
  for (size_t c = 0; c < e.size() && !any; ++c) any = Placeable(e[c]);
  const int64_t b = index / rows_;
  const auto row = static_cast<size_t>(index % rows_);
  if (!any) {
    // Nothing to place: only an open batch needs the count (an element
    // whose first rows were placed); the common case takes no lock.
    if (open_count_.load(std::memory_order_relaxed) == 0) return;
    std::lock_guard<std::mutex> l(mu_);
    SeenLocked(b);
    return;
  }
  struct Target {
    size_t component;
    Buffer buffer;
  };
  std::vector<Target> targets;
  {
    std::lock_guard<std::mutex> l(mu_);
    Open& o = OpenLocked(b);
    for (size_t c = 0; c < e.size(); ++c) {
      const Tensor& t = e[c];
      if (!Placeable(t)) continue;
      Buffer buffer = ClaimLocked(o, c, row, t.dtype(), t.shape(), t.byte_size());
      if (buffer) targets.push_back({c, std::move(buffer)});
    }
    SeenLocked(b);
  }
  for (Target& t : targets) {
    Tensor& src = e[t.component];
    const size_t bytes = src.byte_size();
    const size_t offset = row * bytes;
    std::memcpy(t.buffer.data() + offset, src.raw_data(), bytes);
    Result<Tensor> view = Tensor::FromBuffer(src.dtype(), src.shape(), std::move(t.buffer), offset);
    if (view.ok()) src = std::move(view).value();
  }
}

void RowPlacer::Skip(int64_t index) {
  if (index < 0 || open_count_.load(std::memory_order_relaxed) == 0) return;
  std::lock_guard<std::mutex> l(mu_);
  SeenLocked(index / rows_);
}

size_t RowPlacer::open() const {
  std::lock_guard<std::mutex> l(mu_);
  return open_.size();
}

}  // namespace sluice::pipeline_internal
