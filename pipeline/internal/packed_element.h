// PackedElement: an element held compactly while it waits in a buffer.
//
// An Element of small tensors costs a few hundred bytes besides its
// payload (the component vector, each Tensor and Shape, each buffer's
// control block and alignment). A shuffle buffer of 10,000 1 KiB elements
// would hold 40 % more than its payload. ElementPacker::Pack copies an
// element whose payload is at most kMaxPackedBytes into one malloc'd block
// (a small header, then each component's bytes 16-byte aligned) and keeps
// the names and origin file in a shared record reused by consecutive
// elements; Unpack() gives back tensors that view the block. Larger
// elements, where the overhead is negligible, are kept as they are.
//
// Ownership: a PackedElement owns its block. Not thread-safe; move-only.
#ifndef SLUICE_PIPELINE_INTERNAL_PACKED_ELEMENT_H_
#define SLUICE_PIPELINE_INTERNAL_PACKED_ELEMENT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sluice/core/element.h"

namespace sluice::pipeline_internal {

// Names and origin file shared by consecutive packed elements.
struct PackedMeta {
  std::shared_ptr<const std::vector<std::string>> names;
  std::shared_ptr<const std::string> origin_source;
};

class PackedElement {
 public:
  PackedElement() = default;
  PackedElement(PackedElement&& o) noexcept { *this = std::move(o); }
  PackedElement& operator=(PackedElement&& o) noexcept;
  ~PackedElement();

  // The element; the tensors view this block, which they now own.
  Element Unpack() &&;
  // A copy whose tensors view the block without owning it.
  // REQUIRES: *this outlives the returned element and is not unpacked.
  Element Peek() const;

 private:
  friend class ElementPacker;
  Element Build(bool owning) const;

  void* block_ = nullptr;  // header + payload (malloc'd), or null
  std::shared_ptr<const PackedMeta> meta_;
  int64_t origin_index_ = -1;
  std::unique_ptr<Element> loose_;  // an element kept as it was
};

class ElementPacker {
 public:
  static constexpr int64_t kMaxPackedBytes = 64 << 10;
  PackedElement Pack(Element e);

 private:
  std::shared_ptr<const PackedMeta> last_;
};

}  // namespace sluice::pipeline_internal

#endif  // SLUICE_PIPELINE_INTERNAL_PACKED_ELEMENT_H_
