#include "sluice/records/internal/stack.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace sluice::records_internal {
namespace {

void AddOwners(const Tensor& from, Tensor* to) {
  for (const Buffer& b : from.string_owners()) to->AddStringOwner(b);
}

Status CheckRow(const Tensor& t, DType dtype, const Shape& item_shape, size_t skip, size_t b) {
  bool ok = t.dtype() == dtype && t.shape().rank() == item_shape.rank() + static_cast<int>(skip);
  for (int d = 0; ok && d < item_shape.rank(); ++d) {
    ok = t.shape().dim(d + static_cast<int>(skip)) == item_shape.dim(d);
  }
  if (!ok) {
    return Status::Internal("batching example " + std::to_string(b) + ": got " + t.DebugString(0) +
                            ", expected " + std::string(DTypeName(dtype)) + " rows of " +
                            item_shape.ToString());
  }
  return Status::OK();
}

// Copies rows[b]'s bytes to out at element offset offsets[b].
Result<Tensor> Fill(std::span<const Tensor> rows, Tensor out, int64_t row_stride) {
  const size_t es = DTypeSize(out.dtype());
  auto* dst = static_cast<char*>(out.raw_data());
  int64_t at = 0;
  for (const Tensor& t : rows) {
    if (t.byte_size() > 0)
      std::memcpy(dst + static_cast<size_t>(at) * es, t.raw_data(), t.byte_size());
    at += row_stride > 0 ? row_stride : t.num_elements();
    AddOwners(t, &out);
  }
  return out;
}

}  // namespace

Result<Tensor> StackRows(std::span<const Tensor> rows, DType dtype, const Shape& row_shape) {
  for (size_t b = 0; b < rows.size(); ++b)
    SLUICE_RETURN_IF_ERROR(CheckRow(rows[b], dtype, row_shape, 0, b));
  SLUICE_ASSIGN_OR_RETURN(
      Tensor out, Tensor::Allocate(dtype, row_shape.Prepend(static_cast<int64_t>(rows.size()))));
  return Fill(rows, std::move(out), row_shape.num_elements());
}

Result<Tensor> StackPadded(std::span<const Tensor> rows, DType dtype, const Shape& item_shape) {
  int64_t max_n = 0;
  for (size_t b = 0; b < rows.size(); ++b) {
    SLUICE_RETURN_IF_ERROR(CheckRow(rows[b], dtype, item_shape, 1, b));
    max_n = std::max(max_n, rows[b].shape().dim(0));
  }
  SLUICE_ASSIGN_OR_RETURN(
      Tensor out,
      Tensor::Zeros(dtype, item_shape.Prepend(max_n).Prepend(static_cast<int64_t>(rows.size()))));
  return Fill(rows, std::move(out), max_n * item_shape.num_elements());
}

Result<Tensor> ConcatRows(std::span<const Tensor> rows, DType dtype, const Shape& item_shape) {
  int64_t total = 0;
  for (size_t b = 0; b < rows.size(); ++b) {
    SLUICE_RETURN_IF_ERROR(CheckRow(rows[b], dtype, item_shape, 1, b));
    total += rows[b].shape().dim(0);
  }
  SLUICE_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(dtype, item_shape.Prepend(total)));
  return Fill(rows, std::move(out), 0);
}

Result<Tensor> JoinSplits(std::span<const Tensor> rows, DType dtype, bool outer) {
  auto at = [](const Tensor& t, int64_t i) -> int64_t {
    return t.dtype() == DType::kInt64 ? t.flat<int64_t>()[static_cast<size_t>(i)]
                                      : t.flat<int32_t>()[static_cast<size_t>(i)];
  };
  std::vector<int64_t> out{0};
  for (size_t b = 0; b < rows.size(); ++b) {
    const Tensor& t = rows[b];
    if (t.dtype() != dtype || t.shape().rank() != 1 || t.num_elements() < 1) {
      return Status::Internal("joining row splits of example " + std::to_string(b) + ": got " +
                              t.DebugString(0));
    }
    if (outer) {
      out.push_back(out.back() + t.num_elements() - 1);
      continue;
    }
    const int64_t offset = out.back();
    for (int64_t i = 1; i < t.num_elements(); ++i) out.push_back(offset + at(t, i));
  }
  SLUICE_ASSIGN_OR_RETURN(Tensor t,
                          Tensor::Allocate(dtype, Shape{static_cast<int64_t>(out.size())}));
  if (dtype == DType::kInt64) {
    std::copy(out.begin(), out.end(), t.flat<int64_t>().begin());
  } else {
    if (out.back() > INT32_MAX) {
      return Status::InvalidArgument("row splits of the batch exceed int32 (row_splits_dtype)");
    }
    std::copy(out.begin(), out.end(), t.flat<int32_t>().begin());
  }
  return t;
}

}  // namespace sluice::records_internal
