#include "sluice/records/example_parser.h"

#include <algorithm>
#include <memory>
#include <new>

#include "sluice/records/internal/composite.h"
#include "sluice/records/internal/feature_walk.h"
#include "sluice/records/internal/parse_spec.h"

namespace sluice {

using records_internal::ByteSpan;
using records_internal::CompiledFeature;
using records_internal::FeatureValue;
using records_internal::ValueKind;
using records_internal::Where;
using records_internal::WireError;

struct ExampleParser::Impl {
  std::vector<CompiledFeature> features;
  records_internal::KeyTable table;
  // Shared by every Element this parser makes.
  std::shared_ptr<std::vector<std::string>> single_names =
      std::make_shared<std::vector<std::string>>();
  // Shared by every Element this parser makes.
  std::shared_ptr<std::vector<std::string>> batch_names =
      std::make_shared<std::vector<std::string>>();
  // Set when the spec has SparseFeature / RaggedFeature entries: `features`
  // are then the raw spec's, and results are assembled (composite.h).
  std::shared_ptr<const records_internal::CompositePlan> composite;
};

struct ExampleBatchWriter::State {
  std::shared_ptr<const ExampleParser::Impl> parser;
  int64_t batch_size = 0;
  size_t num_features = 0;
  std::vector<Tensor> fixed;                // per feature: the [B, shape...] FixedLen output
  std::vector<char*> fixed_data;            // ... and its first byte
  std::vector<FeatureValue> values;         // [row][feature]
  std::vector<uint64_t> items;              // [row][feature], from CheckFeatureValue
  std::vector<std::vector<ByteSpan>> more;  // [row]
  std::vector<Buffer> owners;               // [row]
  std::vector<uint8_t> parsed;              // [row]
  bool finished = false;
};

namespace {

// Specs up to this size parse a single Example without a heap allocation
// for the walk state.
constexpr size_t kStackFeatures = 32;

inline const uint8_t* Bytes(std::string_view s) {
  return reinterpret_cast<const uint8_t*>(s.data());
}

Shape SingleShape(const CompiledFeature& f, uint64_t items) {
  switch (f.kind) {
    case FeatureKind::kFixedLen: return f.shape;
    case FeatureKind::kVarLen: return Shape{static_cast<int64_t>(items)};
    case FeatureKind::kFixedLenSequence:
    case FeatureKind::kSparse:
    case FeatureKind::kRagged: break;  // never compiled: see internal/composite.h
  }
  return f.shape.Prepend(static_cast<int64_t>(items));
}

inline char* RowPointer(Tensor& t, int64_t row, int64_t row_elements) {
  return static_cast<char*>(t.raw_data()) +
         static_cast<size_t>(row) * static_cast<size_t>(row_elements) * DTypeSize(t.dtype());
}

}  // namespace

// --- ExampleParser -----------------------------------------------------------

Result<ExampleParser> ExampleParser::Create(const ParseSpec& spec) {
  SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<const records_internal::CompositePlan> composite,
                          records_internal::PlanComposite(spec));
  SLUICE_ASSIGN_OR_RETURN(
      std::vector<CompiledFeature> features,
      CompileSpec(composite ? composite->raw_spec : spec, records_internal::SpecRole::kExample));
  auto impl = std::make_shared<Impl>();
  impl->composite = std::move(composite);
  impl->table = records_internal::KeyTable(records_internal::KeysOf(features));
  for (const CompiledFeature& f : features) {
    impl->single_names->push_back(f.key);
    impl->batch_names->push_back(f.key);
    if (f.kind == FeatureKind::kVarLen)
      impl->batch_names->push_back(f.key + std::string(kRowLengthsSuffix));
  }
  impl->features = std::move(features);
  return ExampleParser(std::move(impl));
}

Result<Element> ExampleParser::ParseSingle(const Tensor& serialized) const {
  if (serialized.dtype() != DType::kString || serialized.shape().rank() != 0) {
    return Status::InvalidArgument("ParseSingle: a serialized Example is a string scalar, got " +
                                   serialized.DebugString(0));
  }
  const std::string_view bytes = serialized.scalar<std::string_view>();
  return ParseSingle(bytes, serialized.StringOwnerOf(bytes));
}

Result<Element> ExampleParser::ParseBatch(const Tensor& serialized) const {
  if (serialized.dtype() != DType::kString || serialized.shape().rank() != 1) {
    return Status::InvalidArgument("ParseBatch: serialized Examples are a string vector, got " +
                                   serialized.DebugString(0));
  }
  std::span<const std::string_view> views = serialized.flat<std::string_view>();
  std::vector<Buffer> owners;
  owners.reserve(views.size());
  for (std::string_view v : views) {
    // Runs of records share their read buffer: try the last owner first.
    if (owners.empty() || !owners.back() ||
        !(v.data() >= reinterpret_cast<const char*>(owners.back().data()) &&
          v.data() + v.size() <=
              reinterpret_cast<const char*>(owners.back().data()) + owners.back().size())) {
      owners.push_back(serialized.StringOwnerOf(v));
    } else {
      owners.push_back(owners.back());
    }
  }
  return ParseBatch(views, owners);
}

bool ExampleParser::fixed_length_only() const {
  if (impl_->composite) return false;
  for (const CompiledFeature& f : impl_->features) {
    if (f.kind != FeatureKind::kFixedLen) return false;
  }
  return true;
}

const std::vector<std::string>& ExampleParser::batch_output_names() const {
  if (impl_->composite) return *impl_->composite->batch_names;
  return *impl_->batch_names;
}

Result<Element> ExampleParser::ParseSingle(std::string_view serialized, const Buffer& owner) const {
  const Impl& im = *impl_;
  SLUICE_RETURN_IF_ERROR(records_internal::CheckOwner(serialized, owner, "Example"));
  const size_t n = im.features.size();
  // Walk state and output layout live on the stack for ordinary specs.
  struct Slot {
    uint64_t items;
    size_t offset;
  };
  Slot stack_slots[kStackFeatures];
  FeatureValue stack_values[kStackFeatures];
  std::unique_ptr<Slot[]> heap_slots;
  std::unique_ptr<FeatureValue[]> heap_values;
  Slot* slots = stack_slots;
  FeatureValue* values = stack_values;
  if (n > kStackFeatures) {
    heap_slots.reset(new Slot[n]);
    heap_values.reset(new FeatureValue[n]);
    slots = heap_slots.get();
    values = heap_values.get();
  }
  std::vector<ByteSpan> more;
  WireError err;
  uint32_t hint = 0;
  const uint8_t* begin = Bytes(serialized);
  if (!records_internal::WalkExample(begin, begin + serialized.size(),
                                     {&im.table, values, &more, &err, &hint})) {
    return records_internal::MalformedError("Example", begin, err);
  }
  // All outputs share one allocation, each at a cache-line boundary.
  size_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    const CompiledFeature& f = im.features[i];
    uint64_t items = 0;
    SLUICE_RETURN_IF_ERROR(
        records_internal::CheckFeatureValue(f, values[i], Where{"feature", f.key}, &items));
    // Element counts are bounded by the input size (or by the spec's shape).
    const uint64_t elements = f.kind == FeatureKind::kFixedLen ? static_cast<uint64_t>(f.elements)
                              : f.kind == FeatureKind::kVarLen ? items
                                                               : values[i].count;
    slots[i].items = items;
    slots[i].offset = total;
    size_t bytes = 0;
    if (__builtin_mul_overflow(static_cast<size_t>(elements), f.element_size, &bytes) ||
        __builtin_add_overflow(total, bytes + Buffer::kAlignment - 1, &total)) {
      return Status::ResourceExhausted("feature '" + f.key + "' is too large to allocate");
    }
    total = total / Buffer::kAlignment * Buffer::kAlignment;
  }
  SLUICE_ASSIGN_OR_RETURN(Buffer arena, Buffer::Allocate(total));
  std::vector<Tensor> outputs;
  outputs.reserve(n);
  bool copy_strings = false;
  for (size_t i = 0; i < n; ++i) {
    const CompiledFeature& f = im.features[i];
    const FeatureValue& v = values[i];
    const size_t offset = slots[i].offset;
    records_internal::WriteFeatureValues(f, v, more.data(), arena.data() + offset);
    if (f.dtype != DType::kString) {
      Result<Tensor> t =
          f.kind == FeatureKind::kFixedLen
              ? Tensor::FromBuffer(f.dtype, f.shape, arena, offset)
              : Tensor::FromBuffer(f.dtype, SingleShape(f, slots[i].items), arena, offset);
      if (!t.ok()) return t.status();
      outputs.push_back(std::move(t).value());
      continue;
    }
    std::vector<Buffer> owners;
    if (owner) {
      owners.push_back(owner);
      if (v.kind == ValueKind::kNone && f.default_value) {
        for (const Buffer& b : f.default_value->string_owners()) owners.push_back(b);
      }
    } else {
      copy_strings = true;
    }
    SLUICE_ASSIGN_OR_RETURN(Tensor t, Tensor::FromStringViews(SingleShape(f, slots[i].items), arena,
                                                              std::move(owners), offset));
    outputs.push_back(std::move(t));
  }
  if (copy_strings) SLUICE_RETURN_IF_ERROR(records_internal::CopyStringsToOwnedBuffer(outputs));
  if (im.composite) {
    return records_internal::AssembleSingle(*im.composite,
                                            Element(std::move(outputs), im.single_names));
  }
  return Element(std::move(outputs), im.single_names);
}

Result<Element> ExampleParser::ParseBatch(std::span<const std::string_view> serialized,
                                          std::span<const Buffer> owners) const {
  if (!owners.empty() && owners.size() != serialized.size()) {
    return Status::InvalidArgument("ParseBatch: " + std::to_string(owners.size()) + " owners for " +
                                   std::to_string(serialized.size()) +
                                   " examples; pass one per example or none");
  }
  SLUICE_ASSIGN_OR_RETURN(ExampleBatchWriter writer,
                          StartBatch(static_cast<int64_t>(serialized.size())));
  static const Buffer kNoOwner;
  for (size_t r = 0; r < serialized.size(); ++r) {
    SLUICE_RETURN_IF_ERROR(writer.ParseInto(static_cast<int64_t>(r), serialized[r],
                                            owners.empty() ? kNoOwner : owners[r]));
  }
  return writer.Finish();
}

Result<ExampleBatchWriter> ExampleParser::StartBatch(int64_t batch_size) const {
  if (batch_size < 0) {
    return Status::OutOfRange("StartBatch: batch_size " + std::to_string(batch_size) +
                              " is negative");
  }
  const size_t num_features = impl_->features.size();
  const size_t rows = static_cast<size_t>(batch_size);
  // The per-row walk state; bound it before allocating.
  const size_t per_row = num_features * (sizeof(FeatureValue) + sizeof(uint64_t)) +
                         sizeof(std::vector<ByteSpan>) + sizeof(Buffer) + 1;
  if (rows > Buffer::kMaxAllocation / per_row) {
    return Status::ResourceExhausted("StartBatch: batch_size " + std::to_string(batch_size) +
                                     " is too large");
  }
  auto state = std::make_unique<ExampleBatchWriter::State>();
  state->parser = impl_;
  state->batch_size = batch_size;
  state->num_features = num_features;
  state->fixed.resize(num_features);
  for (size_t i = 0; i < num_features; ++i) {
    const CompiledFeature& f = impl_->features[i];
    if (f.kind != FeatureKind::kFixedLen) continue;
    SLUICE_ASSIGN_OR_RETURN(state->fixed[i],
                            Tensor::Allocate(f.dtype, f.shape.Prepend(batch_size)));
  }
  for (Tensor& t : state->fixed) state->fixed_data.push_back(static_cast<char*>(t.raw_data()));
  try {
    state->values.resize(rows * num_features);
    state->items.resize(rows * num_features);
    state->more.resize(rows);
    state->owners.resize(rows);
    state->parsed.assign(rows, 0);
  } catch (const std::bad_alloc&) {
    return Status::ResourceExhausted("StartBatch: out of memory for a batch of " +
                                     std::to_string(batch_size));
  }
  return ExampleBatchWriter(std::move(state));
}

// --- ExampleBatchWriter ------------------------------------------------------

ExampleBatchWriter::ExampleBatchWriter(std::unique_ptr<State> state) : state_(std::move(state)) {}
ExampleBatchWriter::ExampleBatchWriter(ExampleBatchWriter&&) noexcept = default;
ExampleBatchWriter& ExampleBatchWriter::operator=(ExampleBatchWriter&&) noexcept = default;
ExampleBatchWriter::~ExampleBatchWriter() = default;

int64_t ExampleBatchWriter::batch_size() const { return state_ ? state_->batch_size : 0; }

Status ExampleBatchWriter::ParseInto(int64_t row, std::string_view serialized,
                                     const Buffer& owner) {
  if (!state_ || state_->finished) {
    return Status::FailedPrecondition("ExampleBatchWriter::ParseInto after Finish");
  }
  State& s = *state_;
  if (row < 0 || row >= s.batch_size) {
    return Status::OutOfRange("ExampleBatchWriter::ParseInto: row " + std::to_string(row) +
                              " outside a batch of " + std::to_string(s.batch_size));
  }
  const size_t r = static_cast<size_t>(row);
  s.parsed[r] = 0;
  SLUICE_RETURN_IF_ERROR(records_internal::CheckOwner(serialized, owner, "Example"));
  const ExampleParser::Impl& im = *s.parser;
  const size_t nf = s.num_features;
  FeatureValue* values = s.values.data() + r * nf;
  uint64_t* items = s.items.data() + r * nf;
  std::vector<ByteSpan>& more = s.more[r];
  more.clear();
  WireError err;
  uint32_t hint = 0;
  const uint8_t* begin = Bytes(serialized);
  if (!records_internal::WalkExample(begin, begin + serialized.size(),
                                     {&im.table, values, &more, &err, &hint})) {
    return Status::DataLoss(
        std::string(records_internal::MalformedError("Example", begin, err).message()) +
        " (example " + std::to_string(row) + " of the batch)");
  }
  for (size_t i = 0; i < nf; ++i) {
    const CompiledFeature& f = im.features[i];
    SLUICE_RETURN_IF_ERROR(
        records_internal::CheckFeatureValue(f, values[i], Where{"feature", f.key, row}, &items[i]));
    if (f.kind == FeatureKind::kFixedLen) {
      records_internal::WriteFeatureValues(
          f, values[i], more.data(),
          s.fixed_data[i] + r * static_cast<size_t>(f.elements) * f.element_size);
    }
  }
  s.owners[r] = owner;
  s.parsed[r] = 1;
  return Status::OK();
}

Result<Element> ExampleBatchWriter::Finish() { return Finish(batch_size()); }

Result<Element> ExampleBatchWriter::Finish(int64_t num_rows) {
  if (!state_ || state_->finished) {
    return Status::FailedPrecondition("ExampleBatchWriter::Finish called twice");
  }
  State& s = *state_;
  if (num_rows < 0 || num_rows > s.batch_size) {
    return Status::OutOfRange("ExampleBatchWriter::Finish: " + std::to_string(num_rows) +
                              " rows requested from a batch of " + std::to_string(s.batch_size));
  }
  const size_t rows = static_cast<size_t>(num_rows);
  bool all_owned = true;
  for (size_t r = 0; r < rows; ++r) {
    if (!s.parsed[r]) {
      return Status::FailedPrecondition("ExampleBatchWriter::Finish: example " + std::to_string(r) +
                                        " of the batch was not parsed");
    }
    if (!s.owners[r]) all_owned = false;
  }
  s.finished = true;
  const ExampleParser::Impl& im = *s.parser;
  const size_t nf = s.num_features;
  std::vector<Tensor> out;
  out.reserve(im.batch_names->size());
  for (size_t i = 0; i < nf; ++i) {
    const CompiledFeature& f = im.features[i];
    Tensor t;
    switch (f.kind) {
      case FeatureKind::kFixedLen: {
        if (num_rows == s.batch_size) {
          t = std::move(s.fixed[i]);
        } else {
          SLUICE_ASSIGN_OR_RETURN(t, s.fixed[i].Slice(0, num_rows));
        }
        break;
      }
      case FeatureKind::kVarLen: {
        uint64_t total = 0;
        for (size_t r = 0; r < rows; ++r) total += s.items[r * nf + i];
        SLUICE_ASSIGN_OR_RETURN(t, Tensor::Allocate(f.dtype, Shape{static_cast<int64_t>(total)}));
        SLUICE_ASSIGN_OR_RETURN(Tensor lengths, Tensor::Allocate(DType::kInt64, Shape{num_rows}));
        int64_t* len = lengths.flat<int64_t>().data();
        int64_t offset = 0;
        for (size_t r = 0; r < rows; ++r) {
          const uint64_t n = records_internal::WriteFeatureValues(
              f, s.values[r * nf + i], s.more[r].data(), RowPointer(t, offset, 1));
          len[r] = static_cast<int64_t>(n);
          offset += static_cast<int64_t>(n);
        }
        out.push_back(std::move(t));
        t = std::move(lengths);
        break;
      }
      case FeatureKind::kFixedLenSequence: {
        uint64_t max_items = 0;
        for (size_t r = 0; r < rows; ++r) max_items = std::max(max_items, s.items[r * nf + i]);
        const int64_t row_elements = static_cast<int64_t>(max_items) * f.elements;
        SLUICE_ASSIGN_OR_RETURN(
            t, Tensor::Allocate(
                   f.dtype, f.shape.Prepend(static_cast<int64_t>(max_items)).Prepend(num_rows)));
        for (size_t r = 0; r < rows; ++r) {
          char* row = RowPointer(t, static_cast<int64_t>(r), row_elements);
          const uint64_t n =
              records_internal::WriteFeatureValues(f, s.values[r * nf + i], s.more[r].data(), row);
          records_internal::WritePadding(f, row + n * DTypeSize(f.dtype),
                                         static_cast<uint64_t>(row_elements) - n);
        }
        break;
      }
      case FeatureKind::kSparse:
      case FeatureKind::kRagged:
        return Status::Internal("composite feature compiled as raw");  // see composite.h
    }
    out.push_back(std::move(t));
  }
  // String outputs: keep the examples' buffers alive, or copy the bytes.
  if (all_owned) {
    size_t o = 0;
    for (size_t i = 0; i < nf; ++i, ++o) {
      const CompiledFeature& f = im.features[i];
      if (f.dtype == DType::kString) {
        records_internal::AddDefaultOwners(f, &out[o]);
        for (size_t r = 0; r < rows; ++r) out[o].AddStringOwner(s.owners[r]);
      }
      if (f.kind == FeatureKind::kVarLen) ++o;  // skip row_lengths
    }
  } else {
    SLUICE_RETURN_IF_ERROR(records_internal::CopyStringsToOwnedBuffer(out));
  }
  // Release the walk state (and the examples' owners) now.
  s.values = {};
  s.items = {};
  s.more = {};
  s.owners = {};
  s.fixed = {};
  if (im.composite) {
    return records_internal::AssembleBatch(*im.composite, Element(std::move(out), im.batch_names),
                                           num_rows);
  }
  return Element(std::move(out), im.batch_names);
}

}  // namespace sluice
