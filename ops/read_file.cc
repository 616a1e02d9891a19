#include "sluice/ops/read_file.h"

#include <new>
#include <string_view>

namespace sluice::ops {

Result<Tensor> ReadFile(const std::string& path, int64_t max_bytes) {
  ReadWholeFileOptions options;
  options.max_bytes = max_bytes;
  Result<WholeFile> file = ReadWholeFile(path, options);
  if (!file.ok()) return file.status().WithContext("read_file");
  // One string_view over the bytes, stored in its own small buffer.
  SLUICE_ASSIGN_OR_RETURN(Buffer views, Buffer::Allocate(sizeof(std::string_view)));
  new (views.data()) std::string_view(file->bytes());
  return Tensor::FromStringViews(Shape{}, std::move(views), {std::move(file->buffer)});
}

}  // namespace sluice::ops
