#include "sluice/pipeline/internal/state.h"

#include <cstring>

#include "sluice/core/element_codec.h"

namespace sluice::pipeline_internal {

void StateWriter::U64(uint64_t v) {
  char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>(v >> (8 * i));
  data_.append(b, 8);
}

void StateWriter::String(std::string_view s) {
  U64(s.size());
  data_.append(s);
}

Status StateWriter::Elem(const Element& e) {
  std::string enc;
  SLUICE_RETURN_IF_ERROR(EncodeElement(e, &enc));
  String(enc);
  return Status::OK();
}

void StateWriter::Stat(const Status& s) {
  U64(s.ok() ? 0 : static_cast<uint64_t>(s.code()));
  String(s.message());
}

Status StateReader::Truncated(std::string_view what) const {
  return Status::DataLoss("iterator state: truncated reading " + std::string(what) + " at byte " +
                          std::to_string(offset()));
}

Result<uint64_t> StateReader::U64() {
  if (data_.size() < 8) return Truncated("an integer");
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(data_[i])) << (8 * i);
  data_.remove_prefix(8);
  return v;
}

Result<int64_t> StateReader::I64() {
  SLUICE_ASSIGN_OR_RETURN(uint64_t v, U64());
  return static_cast<int64_t>(v);
}

Result<bool> StateReader::Bool() {
  SLUICE_ASSIGN_OR_RETURN(uint64_t v, U64());
  if (v > 1)
    return Status::DataLoss("iterator state: bad flag at byte " + std::to_string(offset()));
  return v == 1;
}

Result<std::string> StateReader::String() {
  SLUICE_ASSIGN_OR_RETURN(uint64_t n, U64());
  if (n > data_.size()) return Truncated("a string of " + std::to_string(n) + " bytes");
  std::string s(data_.substr(0, n));
  data_.remove_prefix(n);
  return s;
}

Status StateReader::Tag(std::string_view stage_kind) {
  const size_t at = offset();
  SLUICE_ASSIGN_OR_RETURN(std::string tag, String());
  if (tag != stage_kind) {
    return Status::InvalidArgument("iterator state does not match this pipeline: expected stage '" +
                                   std::string(stage_kind) + "' at byte " + std::to_string(at) +
                                   ", found '" + tag.substr(0, 64) + "'");
  }
  return Status::OK();
}

Result<Element> StateReader::Elem() {
  const size_t at = offset();
  SLUICE_ASSIGN_OR_RETURN(std::string enc, String());
  std::string_view in = enc;
  return DecodeElement(&in, "iterator state at byte " + std::to_string(at));
}

Status StateReader::Stat(Status* out) {
  SLUICE_ASSIGN_OR_RETURN(uint64_t code, U64());
  SLUICE_ASSIGN_OR_RETURN(std::string msg, String());
  if (code == 0) {
    *out = Status::OK();
    return Status::OK();
  }
  if (code > 16)
    return Status::DataLoss("iterator state: bad status code at byte " + std::to_string(offset()));
  *out = Status(static_cast<StatusCode>(code), msg);
  return Status::OK();
}

}  // namespace sluice::pipeline_internal
