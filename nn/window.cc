#include "sluice/nn/window.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace sluice::nn {

Result<Padding> ParsePadding(std::string_view text) {
  std::string lower;
  for (char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "valid") return Padding::kValid;
  if (lower == "same") return Padding::kSame;
  return Status::InvalidArgument("padding \"" + std::string(text) + "\": expected valid or same");
}

Result<WindowDim> ComputeWindowDim(int64_t in, int kernel, int stride, Padding padding) {
  if (in <= 0 || kernel <= 0 || stride <= 0) {
    return Status::InvalidArgument("window: input size " + std::to_string(in) + ", kernel " +
                                   std::to_string(kernel) + " and stride " +
                                   std::to_string(stride) + " must all be positive");
  }
  WindowDim d;
  if (padding == Padding::kValid) {
    if (in < kernel) {
      return Status::InvalidArgument("window: kernel " + std::to_string(kernel) +
                                     " is larger than the input (" + std::to_string(in) +
                                     ") with valid padding");
    }
    d.out = (in - kernel) / stride + 1;
    return d;
  }
  d.out = (in + stride - 1) / stride;
  int64_t total = std::max<int64_t>((d.out - 1) * stride + kernel - in, 0);
  d.pad_before = total / 2;
  d.pad_after = total - d.pad_before;
  return d;
}

namespace {
Status CheckRank4(const Shape& x, const char* what) {
  if (x.unknown_rank() || x.rank() != 4 || !x.IsFullyDefined()) {
    return Status::InvalidArgument(std::string(what) + ": input must be [batch, height, width, " +
                                   "channels], got " + x.ToString());
  }
  return Status::OK();
}
}  // namespace

Result<Shape> Conv2DOutputShape(const Shape& x, const Shape& filter, const Window2D& window) {
  SLUICE_RETURN_IF_ERROR(CheckRank4(x, "Conv2D"));
  if (filter.unknown_rank() || filter.rank() != 4 || filter.dim(0) != window.kernel_h ||
      filter.dim(1) != window.kernel_w || filter.dim(2) != x.dim(3)) {
    return Status::InvalidArgument("Conv2D: filter " + filter.ToString() + " must be [" +
                                   std::to_string(window.kernel_h) + ", " +
                                   std::to_string(window.kernel_w) + ", " +
                                   std::to_string(x.dim(3)) + ", out] for input " + x.ToString());
  }
  SLUICE_ASSIGN_OR_RETURN(
      WindowDim h, ComputeWindowDim(x.dim(1), window.kernel_h, window.stride_h, window.padding));
  SLUICE_ASSIGN_OR_RETURN(
      WindowDim w, ComputeWindowDim(x.dim(2), window.kernel_w, window.stride_w, window.padding));
  return Shape{x.dim(0), h.out, w.out, filter.dim(3)};
}

Result<Shape> Pool2DOutputShape(const Shape& x, const Window2D& window) {
  SLUICE_RETURN_IF_ERROR(CheckRank4(x, "Pool2D"));
  SLUICE_ASSIGN_OR_RETURN(
      WindowDim h, ComputeWindowDim(x.dim(1), window.kernel_h, window.stride_h, window.padding));
  SLUICE_ASSIGN_OR_RETURN(
      WindowDim w, ComputeWindowDim(x.dim(2), window.kernel_w, window.stride_w, window.padding));
  return Shape{x.dim(0), h.out, w.out, x.dim(3)};
}

}  // namespace sluice::nn
