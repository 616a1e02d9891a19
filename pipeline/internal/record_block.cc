#include "sluice/pipeline/internal/record_block.h"

#include <utility>

namespace sluice::pipeline_internal {

RecordBlock ReadRecordBlock(RecordReader& reader, size_t max_bytes, IteratorContext& ctx) {
  RecordBlock b;
  size_t bytes = 0;
  do {
    ReadItem item;
    item.before = reader.next_record_number();
    item.rec = reader.Next();
    item.moved = reader.next_record_number() > item.before;
    b.stopped = !item.rec.ok() || !item.rec->has_value();
    if (!b.stopped) bytes += (*item.rec)->data.size() + 16;  // with its framing
    b.items.push_back(std::move(item));
  } while (!b.stopped && bytes < max_bytes && !ctx.cancelled());
  b.after = reader.next_record_number();
  b.buffer_bytes = static_cast<int64_t>(reader.buffer_bytes());
  return b;
}

}  // namespace sluice::pipeline_internal
