// StateWriter / StateReader: the byte stream of a saved iterator.
//
// Iterators save their fields in a fixed order and restore them in the same
// order; each stage opens with a tag (its kind) so a checkpoint from another
// pipeline is detected rather than misread. Integers are little-endian
// fixed width; strings and elements are length-prefixed. The reader checks
// every length against the bytes left: corrupt state is DataLoss, never a
// crash. Not thread-safe; one per save()/restore() call.
#ifndef SLUICE_PIPELINE_INTERNAL_STATE_H_
#define SLUICE_PIPELINE_INTERNAL_STATE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "sluice/core/element.h"
#include "sluice/core/result.h"

namespace sluice::pipeline_internal {

class StateWriter {
 public:
  void Tag(std::string_view stage_kind) { String(stage_kind); }
  void U64(uint64_t v);
  void I64(int64_t v) { U64(static_cast<uint64_t>(v)); }
  void Bool(bool v) { U64(v ? 1 : 0); }
  void String(std::string_view s);
  Status Elem(const Element& e);
  // A Status (code and message): for buffered errors.
  void Stat(const Status& s);
  const std::string& data() const { return data_; }
  std::string Release() { return std::move(data_); }

 private:
  std::string data_;
};

class StateReader {
 public:
  explicit StateReader(std::string_view data) : data_(data), size_(data.size()) {}
  // InvalidArgument if the next tag is not `stage_kind`.
  Status Tag(std::string_view stage_kind);
  Result<uint64_t> U64();
  Result<int64_t> I64();
  Result<bool> Bool();
  Result<std::string> String();
  Result<Element> Elem();
  // Reads a saved Status into *out (the return value is the read's own).
  Status Stat(Status* out);
  bool done() const { return data_.empty(); }
  size_t offset() const { return size_ - data_.size(); }

 private:
  Status Truncated(std::string_view what) const;
  std::string_view data_;
  size_t size_;
};

}  // namespace sluice::pipeline_internal

#endif  // SLUICE_PIPELINE_INTERNAL_STATE_H_
