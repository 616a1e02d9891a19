#include "sluice/records/sequence_example_parser.h"

#include "sluice/records/internal/composite.h"
#include "sluice/records/internal/feature_walk.h"
#include "sluice/records/internal/parse_spec.h"
#include "sluice/records/internal/stack.h"

namespace sluice {

using records_internal::ByteSpan;
using records_internal::CompiledFeature;
using records_internal::Fail;
using records_internal::FeatureValue;
using records_internal::MakeTag;
using records_internal::ValueKind;
using records_internal::Where;
using records_internal::WireError;
using records_internal::WireErrorCode;

struct SequenceExampleParser::Impl {
  std::vector<CompiledFeature> context;
  std::vector<CompiledFeature> sequence;
  records_internal::KeyTable context_table;
  records_internal::KeyTable sequence_table;
  // Shared by every Element this parser makes.
  std::shared_ptr<std::vector<std::string>> context_names =
      std::make_shared<std::vector<std::string>>();
  // Shared by every Element this parser makes.
  std::shared_ptr<std::vector<std::string>> sequence_names =
      std::make_shared<std::vector<std::string>>();
  std::shared_ptr<std::vector<std::string>> batch_context_names =
      std::make_shared<std::vector<std::string>>();
  std::shared_ptr<std::vector<std::string>> batch_sequence_names =
      std::make_shared<std::vector<std::string>>();
  // Set when the context spec has RaggedFeatures: `context` is then the
  // raw spec's, the names above are the raw outputs', and the context is
  // assembled (internal/composite.h).
  std::shared_ptr<const records_internal::CompositePlan> composite;
  // Set when the sequence spec has RaggedFeatures: `sequence` is then the
  // raw spec's and each example's feature lists are assembled.
  std::shared_ptr<const records_internal::CompositePlan> sequence_composite;
  // The feature-list outputs, as ParseBatch joins them.
  struct SeqOut {
    FeatureKind kind;
    DType dtype;
    Shape item;         // FixedLenSequence: the item; Ragged: the flat values' inner dims
    size_t splits = 0;  // Ragged: row splits per example (steps first)
    DType splits_dtype = DType::kInt64;
  };
  std::vector<SeqOut> seq_outs;
};

namespace {

constexpr uint32_t kTag1 = MakeTag(1, records_internal::kWireLengthDelimited);
constexpr uint32_t kTag2 = MakeTag(2, records_internal::kWireLengthDelimited);

// The FeatureList bodies of one feature list: repeated `value` fields of one
// map entry merge, so a list may span several bodies.
struct ListValue {
  const uint8_t* body = nullptr;
  uint32_t size = 0;
  uint32_t num_more = 0;
  uint32_t more_begin = 0;
  bool present = false;
};

struct SequenceWalk {
  const records_internal::KeyTable* table;
  ListValue* lists;
  std::vector<ByteSpan>* more;
  WireError* err;
};

inline bool Enter(int depth, const uint8_t* at, WireError* err) {
  if (depth - 1 < 0) {
    return Fail(err, WireErrorCode::kTooDeep, at, records_internal::kRecursionLimit);
  }
  return true;
}

// Calls fn(step_begin, step_end) for each Feature (step) of a FeatureList
// body. Skips other fields. Validates when `depth` >= 0.
template <typename Fn>
bool ForEachStep(const uint8_t* p, const uint8_t* end, int depth, WireError* err, Fn&& fn) {
  while (p < end) {
    const uint8_t* at = p;
    uint32_t tag;
    if (!records_internal::ReadTag(p, end, &tag, err)) return false;
    if (tag == kTag1) {
      uint32_t len;
      if (!records_internal::ReadLength(p, end, &len, err)) return false;
      if (!Enter(depth, at, err)) return false;
      if (!fn(p, p + len, depth - 1)) return false;
      p += len;
    } else if (!records_internal::SkipField(tag, at, p, end, depth, err)) {
      return false;
    }
  }
  return true;
}

bool WalkListEntry(const uint8_t* p, const uint8_t* end, int depth, const SequenceWalk& w) {
  const uint8_t* key = nullptr;
  uint32_t key_len = 0;
  ListValue pending;
  pending.present = true;
  while (p < end) {
    const uint8_t* at = p;
    uint32_t tag;
    if (!records_internal::ReadTag(p, end, &tag, w.err)) return false;
    if (tag == kTag1) {
      uint32_t len;
      if (!records_internal::ReadLength(p, end, &len, w.err)) return false;
      if (!records_internal::IsValidUtf8(p, len)) {
        return Fail(w.err, WireErrorCode::kBadUtf8Key, p);
      }
      key = p;
      key_len = len;
      p += len;
    } else if (tag == kTag2) {
      uint32_t len;
      if (!records_internal::ReadLength(p, end, &len, w.err)) return false;
      if (!Enter(depth, at, w.err)) return false;
      // Validate every step now; resolve them later, for matched keys only.
      const bool ok =
          ForEachStep(p, p + len, depth - 1, w.err, [&](const uint8_t* s, const uint8_t* e, int d) {
            FeatureValue ignored{};
            return records_internal::WalkFeature(s, e, d, &ignored, nullptr, w.err);
          });
      if (!ok) return false;
      if (pending.body == nullptr && pending.num_more == 0 && pending.size == 0) {
        pending.body = p;
        pending.size = len;
      } else {
        if (pending.num_more == 0) pending.more_begin = static_cast<uint32_t>(w.more->size());
        w.more->push_back(ByteSpan{p, len});
        ++pending.num_more;
      }
      p += len;
    } else if (!records_internal::SkipField(tag, at, p, end, depth, w.err)) {
      return false;
    }
  }
  const int index = w.table->Find(key, key_len);
  if (index >= 0) w.lists[index] = pending;
  return true;
}

bool WalkSequenceExample(const uint8_t* p, const uint8_t* end,
                         const records_internal::WalkOutput& context, const SequenceWalk& w) {
  for (size_t i = 0; i < context.table->size(); ++i) context.values[i] = FeatureValue{};
  for (size_t i = 0; i < w.table->size(); ++i) w.lists[i] = ListValue{};
  const int depth = records_internal::kRecursionLimit;
  while (p < end) {
    const uint8_t* at = p;
    uint32_t tag;
    if (!records_internal::ReadTag(p, end, &tag, w.err)) return false;
    if (tag == kTag1 || tag == kTag2) {
      uint32_t len;
      if (!records_internal::ReadLength(p, end, &len, w.err)) return false;
      if (!Enter(depth, at, w.err)) return false;
      const uint8_t* body_end = p + len;
      if (tag == kTag1) {  // context: Features
        if (!records_internal::WalkFeatures(p, body_end, depth - 1, context)) return false;
      } else {  // feature_lists: FeatureLists, map<string, FeatureList>
        const int d = depth - 1;
        while (p < body_end) {
          const uint8_t* entry_at = p;
          uint32_t entry_tag;
          if (!records_internal::ReadTag(p, body_end, &entry_tag, w.err)) return false;
          if (entry_tag == kTag1) {
            uint32_t entry_len;
            if (!records_internal::ReadLength(p, body_end, &entry_len, w.err)) return false;
            if (!Enter(d, entry_at, w.err)) return false;
            if (!WalkListEntry(p, p + entry_len, d - 1, w)) return false;
            p += entry_len;
          } else if (!records_internal::SkipField(entry_tag, entry_at, p, body_end, d, w.err)) {
            return false;
          }
        }
      }
      p = body_end;
    } else if (!records_internal::SkipField(tag, at, p, end, depth, w.err)) {
      return false;
    }
  }
  return true;
}

// Calls fn(body, end) for each FeatureList body of lv.
template <typename Fn>
void ForEachListBody(const ListValue& lv, const std::vector<ByteSpan>& more, Fn&& fn) {
  fn(lv.body, lv.body + lv.size);
  for (uint32_t i = 0; i < lv.num_more; ++i) {
    const ByteSpan& s = more[lv.more_begin + i];
    fn(s.data, s.data + s.size);
  }
}

// Resolves and checks the steps of one sequence feature; appends one
// FeatureValue per step to *steps (extra list bodies in *step_more).
Status ResolveSteps(const CompiledFeature& f, const ListValue& lv,
                    const std::vector<ByteSpan>& more, std::vector<FeatureValue>* steps,
                    std::vector<ByteSpan>* step_more, uint64_t* total_values) {
  steps->clear();
  step_more->clear();
  *total_values = 0;
  if (!lv.present) {
    if (f.kind == FeatureKind::kFixedLenSequence && !f.allow_missing) {
      return records_internal::MissingFeatureError(Where{"feature list", f.key}, f);
    }
    return Status::OK();
  }
  WireError err;
  bool ok = true;
  ForEachListBody(lv, more, [&](const uint8_t* p, const uint8_t* end) {
    ok = ok && ForEachStep(p, end, records_internal::kRecursionLimit, &err,
                           [&](const uint8_t* s, const uint8_t* e, int d) {
                             FeatureValue v{};
                             if (!records_internal::WalkFeature(s, e, d, &v, step_more, &err)) {
                               return false;
                             }
                             steps->push_back(v);
                             return true;
                           });
  });
  if (!ok) return Status::Internal("re-walking a validated feature list failed");
  for (size_t i = 0; i < steps->size(); ++i) {
    const FeatureValue& v = (*steps)[i];
    const Where where{"feature list", f.key, -1, static_cast<int64_t>(i)};
    if (v.kind != ValueKind::kNone && v.kind != f.value_kind) {
      return records_internal::DTypeMismatchError(where, f, v.kind);
    }
    if (f.kind == FeatureKind::kFixedLenSequence && v.count != static_cast<uint64_t>(f.elements)) {
      return records_internal::ValueCountError(where, f, v.count);
    }
    *total_values += v.count;
  }
  return Status::OK();
}

}  // namespace

Result<SequenceExampleParser> SequenceExampleParser::Create(const ParseSpec& context_spec,
                                                            const ParseSpec& sequence_spec) {
  // RaggedFeatures in the context read plain VarLen features, as in an
  // Example; tf.io takes no SparseFeature in SequenceExample specs.
  for (const auto& [key, f] : context_spec) {
    if (f.kind == FeatureKind::kSparse) {
      return Status::InvalidArgument("parse spec: feature '" + key +
                                     "': a SequenceExample's context spec takes no "
                                     "SparseFeature (as tf.io.parse_sequence_example)");
    }
  }
  SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<const records_internal::CompositePlan> composite,
                          records_internal::PlanComposite(context_spec));
  SLUICE_ASSIGN_OR_RETURN(std::vector<CompiledFeature> context,
                          CompileSpec(composite ? composite->raw_spec : context_spec,
                                      records_internal::SpecRole::kContext));
  SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<const records_internal::CompositePlan> seq_composite,
                          records_internal::PlanComposite(sequence_spec, /*sequence=*/true));
  SLUICE_ASSIGN_OR_RETURN(std::vector<CompiledFeature> sequence,
                          CompileSpec(seq_composite ? seq_composite->raw_spec : sequence_spec,
                                      records_internal::SpecRole::kSequence));
  auto impl = std::make_shared<Impl>();
  impl->context_table = records_internal::KeyTable(records_internal::KeysOf(context));
  impl->sequence_table = records_internal::KeyTable(records_internal::KeysOf(sequence));
  for (const CompiledFeature& f : context) {
    impl->context_names->push_back(f.key);
    impl->batch_context_names->push_back(f.key);
    if (f.kind == FeatureKind::kVarLen)
      impl->batch_context_names->push_back(f.key + std::string(kRowLengthsSuffix));
  }
  for (const CompiledFeature& f : sequence) {
    impl->sequence_names->push_back(f.key);
    if (f.kind == FeatureKind::kVarLen) {
      impl->sequence_names->push_back(f.key + std::string(kRowLengthsSuffix));
    }
  }
  // The feature-list outputs: the raw features, or the composite plan's.
  std::vector<std::string> seq_keys;
  if (!seq_composite) {
    for (const CompiledFeature& f : sequence) {
      seq_keys.push_back(f.key);
      impl->seq_outs.push_back({f.kind, f.dtype, f.shape});
    }
  } else {
    for (const records_internal::CompositePlan::Output& o : seq_composite->outputs) {
      seq_keys.push_back(o.key);
      if (o.kind != FeatureKind::kRagged) {
        impl->seq_outs.push_back({o.kind, o.dtype, sequence[o.raw].shape});
        continue;
      }
      Shape inner;
      for (size_t i = o.dense_from; i < o.parts.size(); ++i) inner.AppendDim(o.parts[i].length);
      impl->seq_outs.push_back({o.kind, o.dtype, inner, o.dense_from + 1, o.splits_dtype});
    }
  }
  for (size_t i = 0; i < seq_keys.size(); ++i) {
    const std::string& key = seq_keys[i];
    const Impl::SeqOut& so = impl->seq_outs[i];
    impl->batch_sequence_names->push_back(key);
    if (so.kind == FeatureKind::kRagged) {
      for (size_t k = 0; k <= so.splits; ++k) {
        impl->batch_sequence_names->push_back(key + std::string(kRowSplitsSuffix) +
                                              std::to_string(k));
      }
      continue;
    }
    if (so.kind == FeatureKind::kVarLen) {
      impl->batch_sequence_names->push_back(key + std::string(kRowLengthsSuffix));
    }
    impl->batch_sequence_names->push_back(key + std::string(kLengthSuffix));
  }
  impl->context = std::move(context);
  impl->sequence = std::move(sequence);
  impl->composite = std::move(composite);
  impl->sequence_composite = std::move(seq_composite);
  return SequenceExampleParser(std::move(impl));
}

Result<ParsedSequenceExample> SequenceExampleParser::Parse(std::string_view serialized,
                                                           const Buffer& owner) const {
  SLUICE_ASSIGN_OR_RETURN(ParsedSequenceExample raw, ParseRaw(*impl_, serialized, owner));
  if (impl_->composite) {
    SLUICE_ASSIGN_OR_RETURN(raw.context,
                            records_internal::AssembleSingle(*impl_->composite, raw.context));
  }
  if (impl_->sequence_composite) {
    SLUICE_ASSIGN_OR_RETURN(raw.feature_lists, records_internal::AssembleBatch(
                                                   *impl_->sequence_composite, raw.feature_lists,
                                                   /*rows=*/-1));
  }
  return raw;
}

Result<ParsedSequenceExample> SequenceExampleParser::ParseRaw(const Impl& im,
                                                              std::string_view serialized,
                                                              const Buffer& owner) {
  SLUICE_RETURN_IF_ERROR(records_internal::CheckOwner(serialized, owner, "SequenceExample"));
  std::vector<FeatureValue> context_values(im.context.size());
  std::vector<ListValue> lists(im.sequence.size());
  std::vector<ByteSpan> more;
  WireError err;
  uint32_t hint = 0;
  const auto* begin = reinterpret_cast<const uint8_t*>(serialized.data());
  const records_internal::WalkOutput context_out{&im.context_table, context_values.data(), &more,
                                                 &err, &hint};
  const SequenceWalk seq_walk{&im.sequence_table, lists.data(), &more, &err};
  if (!WalkSequenceExample(begin, begin + serialized.size(), context_out, seq_walk)) {
    return records_internal::MalformedError("SequenceExample", begin, err);
  }

  // Context: as ExampleParser::ParseSingle.
  std::vector<Tensor> context;
  context.reserve(im.context.size());
  for (size_t i = 0; i < im.context.size(); ++i) {
    const CompiledFeature& f = im.context[i];
    const FeatureValue& v = context_values[i];
    uint64_t items = 0;
    SLUICE_RETURN_IF_ERROR(
        records_internal::CheckFeatureValue(f, v, Where{"context feature", f.key}, &items));
    const Shape shape =
        f.kind == FeatureKind::kFixedLen ? f.shape : Shape{static_cast<int64_t>(items)};
    SLUICE_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(f.dtype, shape));
    records_internal::WriteFeatureValues(f, v, more.data(), t.raw_data());
    if (f.dtype == DType::kString && owner) {
      if (v.kind == ValueKind::kNone) records_internal::AddDefaultOwners(f, &t);
      t.AddStringOwner(owner);
    }
    context.push_back(std::move(t));
  }

  // Feature lists.
  std::vector<Tensor> sequence;
  sequence.reserve(im.sequence_names->size());
  std::vector<FeatureValue> steps;
  std::vector<ByteSpan> step_more;
  for (size_t i = 0; i < im.sequence.size(); ++i) {
    const CompiledFeature& f = im.sequence[i];
    uint64_t total = 0;
    SLUICE_RETURN_IF_ERROR(ResolveSteps(f, lists[i], more, &steps, &step_more, &total));
    const auto num_steps = static_cast<int64_t>(steps.size());
    const Shape shape = f.kind == FeatureKind::kFixedLenSequence
                            ? f.shape.Prepend(num_steps)
                            : Shape{static_cast<int64_t>(total)};
    SLUICE_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(f.dtype, shape));
    auto* out = static_cast<char*>(t.raw_data());
    Tensor lengths;
    int64_t* len = nullptr;
    if (f.kind == FeatureKind::kVarLen) {
      SLUICE_ASSIGN_OR_RETURN(lengths, Tensor::Allocate(DType::kInt64, Shape{num_steps}));
      len = lengths.flat<int64_t>().data();
    }
    for (size_t s = 0; s < steps.size(); ++s) {
      const uint64_t n = records_internal::WriteFeatureValues(f, steps[s], step_more.data(), out);
      out += n * DTypeSize(f.dtype);
      if (len != nullptr) len[s] = static_cast<int64_t>(n);
    }
    if (f.dtype == DType::kString && owner) t.AddStringOwner(owner);
    sequence.push_back(std::move(t));
    if (len != nullptr) sequence.push_back(std::move(lengths));
  }

  if (!owner) {
    SLUICE_RETURN_IF_ERROR(records_internal::CopyStringsToOwnedBuffer(context));
    SLUICE_RETURN_IF_ERROR(records_internal::CopyStringsToOwnedBuffer(sequence));
  }
  return ParsedSequenceExample{Element(std::move(context), im.context_names),
                               Element(std::move(sequence), im.sequence_names)};
}

}  // namespace sluice

namespace sluice {

const std::vector<std::string>& SequenceExampleParser::context_names() const {
  if (impl_->composite) return *impl_->composite->single_names;
  return *impl_->context_names;
}
const std::vector<std::string>& SequenceExampleParser::feature_list_names() const {
  if (impl_->sequence_composite) return *impl_->sequence_composite->batch_names;
  return *impl_->sequence_names;
}
const std::vector<std::string>& SequenceExampleParser::batch_context_names() const {
  if (impl_->composite) return *impl_->composite->batch_names;
  return *impl_->batch_context_names;
}
const std::vector<std::string>& SequenceExampleParser::batch_feature_list_names() const {
  return *impl_->batch_sequence_names;
}

bool SequenceExampleParser::batch_is_stacked() const {
  if (!impl_->seq_outs.empty() || impl_->composite) return false;
  for (const CompiledFeature& f : impl_->context) {
    if (f.kind != FeatureKind::kFixedLen) return false;
  }
  return true;
}

Result<ParsedSequenceExample> SequenceExampleParser::Parse(const Tensor& serialized) const {
  if (serialized.dtype() != DType::kString || serialized.shape().rank() != 0) {
    return Status::InvalidArgument("Parse: a serialized SequenceExample is a string scalar, got " +
                                   serialized.DebugString(0));
  }
  const std::string_view bytes = serialized.scalar<std::string_view>();
  return Parse(bytes, serialized.StringOwnerOf(bytes));
}

Result<ParsedSequenceExample> SequenceExampleParser::ParseBatch(const Tensor& serialized) const {
  if (serialized.dtype() != DType::kString || serialized.shape().rank() != 1) {
    return Status::InvalidArgument(
        "ParseBatch: serialized SequenceExamples are a string vector, got " +
        serialized.DebugString(0));
  }
  std::span<const std::string_view> views = serialized.flat<std::string_view>();
  std::vector<Buffer> owners;
  owners.reserve(views.size());
  for (std::string_view v : views) owners.push_back(serialized.StringOwnerOf(v));
  return ParseBatch(views, owners);
}

Result<ParsedSequenceExample> SequenceExampleParser::ParseBatch(
    std::span<const std::string_view> serialized, std::span<const Buffer> owners) const {
  if (!owners.empty() && owners.size() != serialized.size()) {
    return Status::InvalidArgument("ParseBatch: " + std::to_string(owners.size()) + " owners for " +
                                   std::to_string(serialized.size()) +
                                   " examples; pass one per example or none");
  }
  const Impl& im = *impl_;
  const size_t rows = serialized.size();
  std::vector<ParsedSequenceExample> parsed;
  parsed.reserve(rows);
  for (size_t r = 0; r < rows; ++r) {
    Result<ParsedSequenceExample> one =
        ParseRaw(im, serialized[r], owners.empty() ? Buffer() : owners[r]);
    if (one.ok() && im.sequence_composite) {
      Result<Element> lists =
          records_internal::AssembleBatch(*im.sequence_composite, one->feature_lists, -1);
      if (lists.ok()) {
        one->feature_lists = std::move(lists).value();
      } else {
        one = lists.status();
      }
    }
    if (!one.ok()) {
      return Status(one.status().code(), std::string(one.status().message()) + " (example " +
                                             std::to_string(r) + " of the batch)");
    }
    parsed.push_back(std::move(one).value());
  }
  const auto batch = static_cast<int64_t>(rows);
  std::vector<Tensor> parts(rows);
  auto gather = [&](bool context, size_t component) {
    for (size_t r = 0; r < rows; ++r) {
      parts[r] = context ? parsed[r].context[component] : parsed[r].feature_lists[component];
    }
    return std::span<const Tensor>(parts);
  };
  // Per example: a component's dim 0 as an int64 [B] tensor.
  auto lengths = [&](bool context, size_t component) -> Result<Tensor> {
    SLUICE_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(DType::kInt64, Shape{batch}));
    for (size_t r = 0; r < rows; ++r) {
      const Tensor& x = context ? parsed[r].context[component] : parsed[r].feature_lists[component];
      t.flat<int64_t>()[r] = x.shape().dim(0);
    }
    return t;
  };
  std::vector<Tensor> context;
  for (size_t i = 0; i < im.context.size(); ++i) {
    const CompiledFeature& f = im.context[i];
    if (f.kind == FeatureKind::kFixedLen) {
      SLUICE_ASSIGN_OR_RETURN(Tensor t,
                              records_internal::StackRows(gather(true, i), f.dtype, f.shape));
      context.push_back(std::move(t));
    } else {
      SLUICE_ASSIGN_OR_RETURN(Tensor t,
                              records_internal::ConcatRows(gather(true, i), f.dtype, Shape{}));
      SLUICE_ASSIGN_OR_RETURN(Tensor l, lengths(true, i));
      context.push_back(std::move(t));
      context.push_back(std::move(l));
    }
  }
  std::vector<Tensor> sequence;
  size_t c = 0;  // component of the single parse
  for (const Impl::SeqOut& f : im.seq_outs) {
    if (f.kind == FeatureKind::kFixedLenSequence) {
      SLUICE_ASSIGN_OR_RETURN(Tensor t,
                              records_internal::StackPadded(gather(false, c), f.dtype, f.item));
      SLUICE_ASSIGN_OR_RETURN(Tensor l, lengths(false, c));
      sequence.push_back(std::move(t));
      sequence.push_back(std::move(l));
      c += 1;
    } else if (f.kind == FeatureKind::kVarLen) {
      SLUICE_ASSIGN_OR_RETURN(Tensor t,
                              records_internal::ConcatRows(gather(false, c), f.dtype, Shape{}));
      SLUICE_ASSIGN_OR_RETURN(
          Tensor rl, records_internal::ConcatRows(gather(false, c + 1), DType::kInt64, Shape{}));
      SLUICE_ASSIGN_OR_RETURN(Tensor l, lengths(false, c + 1));
      sequence.push_back(std::move(t));
      sequence.push_back(std::move(rl));
      sequence.push_back(std::move(l));
      c += 2;
    } else {
      // Ragged [steps, ...] per example: values joined, the examples' splits
      // over their steps first, then each level's splits joined.
      SLUICE_ASSIGN_OR_RETURN(Tensor t,
                              records_internal::ConcatRows(gather(false, c), f.dtype, f.item));
      sequence.push_back(std::move(t));
      SLUICE_ASSIGN_OR_RETURN(
          Tensor outer, records_internal::JoinSplits(gather(false, c + 1), f.splits_dtype, true));
      sequence.push_back(std::move(outer));
      for (size_t k = 0; k < f.splits; ++k) {
        SLUICE_ASSIGN_OR_RETURN(Tensor s, records_internal::JoinSplits(gather(false, c + 1 + k),
                                                                       f.splits_dtype, false));
        sequence.push_back(std::move(s));
      }
      c += 1 + f.splits;
    }
  }
  Element context_batch(std::move(context), im.batch_context_names);
  if (im.composite) {
    SLUICE_ASSIGN_OR_RETURN(context_batch,
                            records_internal::AssembleBatch(*im.composite, context_batch, batch));
  }
  return ParsedSequenceExample{std::move(context_batch),
                               Element(std::move(sequence), im.batch_sequence_names)};
}

}  // namespace sluice
