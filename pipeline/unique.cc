// unique: tf.data's unique. Each distinct element once, in order of first
// appearance. Elements have one int32, int64 or string component (of any
// shape, as tf.data's kernel: two elements are the same if their shapes and
// values are). The values seen are the iterator's state: saved with it and
// charged to the RAM budget as what the consumer's path must hold (as a
// shuffle buffer is).
#include <cstring>
#include <unordered_set>

#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/errors.h"
#include "sluice/pipeline/internal/stages.h"
#include "sluice/pipeline/internal/state.h"

namespace sluice::pipeline_internal {
namespace {

bool UniqueDType(DType d) {
  return d == DType::kInt32 || d == DType::kInt64 || d == DType::kString;
}

void AppendU64(std::string& s, uint64_t v) {
  char b[8];
  std::memcpy(b, &v, 8);
  s.append(b, 8);
}

// A byte key equal for two tensors exactly when their dtypes, shapes and
// values are.
std::string KeyOf(const Tensor& t) {
  std::string key;
  key.push_back(static_cast<char>(t.dtype()));
  key.push_back(static_cast<char>(t.shape().rank()));
  for (int64_t d : t.shape().dims()) AppendU64(key, static_cast<uint64_t>(d));
  if (t.dtype() == DType::kString) {
    for (std::string_view v : t.flat<std::string_view>()) {
      AppendU64(key, v.size());
      key.append(v);
    }
  } else {
    key.append(static_cast<const char*>(t.raw_data()), t.byte_size());
  }
  return key;
}

// What one kept value is charged: its bytes and the hash set's node.
int64_t KeyBytes(const std::string& key) { return static_cast<int64_t>(key.size()) + 48; }

class UniqueIterator : public IteratorNode {
 public:
  UniqueIterator(IteratorContext& ctx, const DatasetNode& node, std::unique_ptr<IteratorNode> input)
      : IteratorNode(&ctx, ctx.CountersFor(&node)), node_(node), input_(std::move(input)) {}
  ~UniqueIterator() override { Clear(); }

  Status Save(StateWriter& w) override {
    w.Tag("unique");
    w.I64(index_);
    w.U64(seen_.size());
    for (const std::string& key : seen_) w.String(key);
    return input_->Save(w);
  }
  Status Restore(StateReader& r) override {
    SLUICE_RETURN_IF_ERROR(r.Tag("unique"));
    Clear();
    SLUICE_ASSIGN_OR_RETURN(index_, r.I64());
    SLUICE_ASSIGN_OR_RETURN(uint64_t n, r.U64());
    for (uint64_t i = 0; i < n; ++i) {
      SLUICE_ASSIGN_OR_RETURN(std::string key, r.String());  // length checked by the reader
      auto [it, inserted] = seen_.insert(std::move(key));
      if (!inserted) return Status::DataLoss("iterator state: stage 'unique' saved a value twice");
      if (Status s = Charge(*it); !s.ok()) {
        seen_.erase(it);
        return s;
      }
    }
    return input_->Restore(r);
  }

 protected:
  NextResult GetNext() override {
    for (;;) {
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> in, input_->Next());
      if (!in) return in;
      const int64_t index = index_++;
      if (in->size() != 1 || !UniqueDType((*in)[0].dtype())) {
        return StageError(Status::InvalidArgument(
                              "unique takes elements of one int32, int64 or string component, "
                              "got " +
                              ElementSpec::Of(*in).DebugString()),
                          node_.name(), index, in->origin_source(), in->origin_index());
      }
      auto [it, inserted] = seen_.insert(KeyOf((*in)[0]));  // one lookup
      if (inserted) {
        if (Status s = Charge(*it); !s.ok()) {
          seen_.erase(it);
          return s;
        }
        return in;
      }
      if (ctx()->cancelled()) return Status::Cancelled("pipeline cancelled");
    }
  }

 private:
  // Charges a value just kept to the RAM budget.
  Status Charge(const std::string& key) {
    const int64_t b = KeyBytes(key);
    if (bytes_ + b > ctx()->memory().limit()) {
      return Status::ResourceExhausted(
          "stage '" + node_.name() + "': the " + std::to_string(seen_.size() - 1) +
          " distinct values seen (" + ByteSize(bytes_) + ") and the next would exceed the " +
          "RAM budget of " + ByteSize(ctx()->memory().limit()) + "; raise Options::ram_budget");
    }
    ctx()->memory().ChargeRequired(b);
    bytes_ += b;
    counters()->buffered_bytes.fetch_add(b, std::memory_order_relaxed);
    counters()->buffer_depth.store(static_cast<int64_t>(seen_.size()), std::memory_order_relaxed);
    return ctx()->memory().CheckRequired(node_.name());
  }
  void Clear() {
    ctx()->memory().ReleaseRequired(bytes_);
    counters()->buffered_bytes.fetch_sub(bytes_, std::memory_order_relaxed);
    counters()->buffer_depth.store(0, std::memory_order_relaxed);
    bytes_ = 0;
    seen_.clear();
  }

  const DatasetNode& node_;
  std::unique_ptr<IteratorNode> input_;
  std::unordered_set<std::string> seen_;
  int64_t bytes_ = 0;  // charged to the RAM budget
  int64_t index_ = 0;  // input elements seen
};

class UniqueNode : public DatasetNode {
 public:
  explicit UniqueNode(const Dataset& input)
      : DatasetNode("unique", "", {input.node()}, input.element_spec(),
                    input.cardinality() == 0 ? 0 : kUnknownCardinality) {}
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams& params) const override {
    SLUICE_ASSIGN_OR_RETURN(auto input, MakeIteratorOf(*inputs()[0], ctx, params));
    return std::unique_ptr<IteratorNode>(
        std::make_unique<UniqueIterator>(ctx, *this, std::move(input)));
  }
};

}  // namespace

Dataset MakeUnique(const Dataset& input) {
  const ElementSpec& spec = input.element_spec();
  if (spec.known() && (spec.size() != 1 || !UniqueDType(spec.components()[0].dtype))) {
    return Dataset::FromError(Status::InvalidArgument(
        "unique: the elements must have one int32, int64 or string component (tf.data's), got " +
        spec.DebugString()));
  }
  return Dataset(std::make_shared<UniqueNode>(input));
}

}  // namespace sluice::pipeline_internal
