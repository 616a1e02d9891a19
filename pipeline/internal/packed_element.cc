#include "sluice/pipeline/internal/packed_element.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>

namespace sluice::pipeline_internal {
namespace {

constexpr size_t kAlign = 16;
constexpr int kMaxRank = 8;

size_t AlignUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

struct BlockHeader {
  uint32_t components;
  uint32_t size;  // of the whole block
};

// One per component, after the BlockHeader, followed by `rank` dims.
struct ComponentHeader {
  DType dtype;
  uint8_t rank;
  uint32_t offset;  // of the data (string_views for strings) in the block
  int64_t count;    // elements
};

size_t HeaderBytes(const Element& e) {
  size_t n = sizeof(BlockHeader);
  for (const Tensor& t : e.components()) {
    n += sizeof(ComponentHeader) + sizeof(int64_t) * static_cast<size_t>(t.shape().rank());
  }
  return AlignUp(n);
}

// Bytes `t` needs in a block, or 0 if it cannot be packed.
size_t PayloadBytes(const Tensor& t) {
  if (t.shape().unknown_rank() || t.shape().rank() > kMaxRank) return 0;
  if (t.dtype() != DType::kString) return AlignUp(t.byte_size());
  size_t n = t.byte_size();  // the views
  for (std::string_view s : t.flat<std::string_view>()) n += s.size();
  return AlignUp(n);
}

}  // namespace

PackedElement& PackedElement::operator=(PackedElement&& o) noexcept {
  if (this != &o) {
    std::free(block_);
    block_ = o.block_;
    o.block_ = nullptr;
    meta_ = std::move(o.meta_);
    origin_index_ = o.origin_index_;
    loose_ = std::move(o.loose_);
  }
  return *this;
}

PackedElement::~PackedElement() { std::free(block_); }

Element PackedElement::Build(bool owning) const {
  const auto* base = static_cast<const uint8_t*>(block_);
  BlockHeader h;
  std::memcpy(&h, base, sizeof(h));
  void* block = block_;
  Buffer buf = Buffer::Wrap(
      block, h.size,
      owning ? std::function<void()>([block] { std::free(block); }) : std::function<void()>());
  std::vector<Tensor> comps;
  comps.reserve(h.components);
  size_t at = sizeof(BlockHeader);
  for (uint32_t i = 0; i < h.components; ++i) {
    ComponentHeader c;
    std::memcpy(&c, base + at, sizeof(c));
    at += sizeof(c);
    int64_t dims[kMaxRank];
    std::memcpy(dims, base + at, sizeof(int64_t) * c.rank);
    at += sizeof(int64_t) * c.rank;
    const Shape shape(std::span<const int64_t>(dims, c.rank));
    Result<Tensor> t = c.dtype == DType::kString
                           ? Tensor::FromStringViews(shape, buf, {buf}, c.offset)
                           : Tensor::FromBuffer(c.dtype, shape, buf, c.offset);
    // The block was laid out by Pack for exactly these shapes.
    comps.push_back(std::move(t).value());
  }
  Element e = meta_->names ? Element(std::move(comps), meta_->names) : Element(std::move(comps));
  e.set_origin(meta_->origin_source, origin_index_);
  return e;
}

Element PackedElement::Unpack() && {
  if (loose_) return std::move(*loose_);
  Element e = Build(/*owning=*/true);
  block_ = nullptr;  // the tensors own it now
  return e;
}

Element PackedElement::Peek() const { return loose_ ? *loose_ : Build(/*owning=*/false); }

PackedElement ElementPacker::Pack(Element e) {
  PackedElement p;
  size_t payload = 0;
  bool packable = !e.empty();
  for (const Tensor& t : e.components()) {
    const size_t n = PayloadBytes(t);
    if (n == 0 && t.num_elements() != 0) packable = false;
    payload += n;
  }
  const size_t header = HeaderBytes(e);
  if (!packable || payload > static_cast<size_t>(kMaxPackedBytes)) {
    p.loose_ = std::make_unique<Element>(std::move(e));
    return p;
  }
  const size_t size = header + payload;
  auto* base = static_cast<uint8_t*>(std::malloc(size));
  if (base == nullptr) {  // keep it as it is rather than fail
    p.loose_ = std::make_unique<Element>(std::move(e));
    return p;
  }
  const BlockHeader h{static_cast<uint32_t>(e.size()), static_cast<uint32_t>(size)};
  std::memcpy(base, &h, sizeof(h));
  size_t at = sizeof(BlockHeader);
  size_t data = header;
  for (const Tensor& t : e.components()) {
    const ComponentHeader c{t.dtype(), static_cast<uint8_t>(t.shape().rank()),
                            static_cast<uint32_t>(data), t.num_elements()};
    std::memcpy(base + at, &c, sizeof(c));
    at += sizeof(c);
    std::memcpy(base + at, t.shape().dims().data(), sizeof(int64_t) * c.rank);
    at += sizeof(int64_t) * c.rank;
    if (t.dtype() != DType::kString) {
      if (t.byte_size() > 0) std::memcpy(base + data, t.raw_data(), t.byte_size());
      data += AlignUp(t.byte_size());
    } else {
      auto* views = reinterpret_cast<std::string_view*>(base + data);
      char* bytes = reinterpret_cast<char*>(base + data + t.byte_size());
      size_t k = 0;
      for (std::string_view s : t.flat<std::string_view>()) {
        if (!s.empty()) std::memcpy(bytes, s.data(), s.size());
        new (&views[k++]) std::string_view(bytes, s.size());
        bytes += s.size();
      }
      data = AlignUp(static_cast<size_t>(bytes - reinterpret_cast<char*>(base)));
    }
  }
  p.block_ = base;
  p.origin_index_ = e.origin_index();
  // Unnamed elements each carry their own list of empty names: keep none.
  std::shared_ptr<const std::vector<std::string>> names = e.shared_names();
  if (names) {
    bool any = false;
    for (const std::string& n : *names) any |= !n.empty();
    if (!any) names = nullptr;
  }
  if (!last_ || last_->names != names || last_->origin_source != e.origin_source()) {
    last_ = std::make_shared<const PackedMeta>(PackedMeta{std::move(names), e.origin_source()});
  }
  p.meta_ = last_;
  return p;
}

}  // namespace sluice::pipeline_internal
