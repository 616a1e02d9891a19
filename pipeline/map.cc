// map (sequential, or parallel through AsyncMapIterator) and prefetch.
// Followed by batch, map places its outputs into the batch's buffers
// (RowPlacer) when the results come in order.
#include <optional>

#include "sluice/pipeline/internal/async_map.h"
#include "sluice/pipeline/internal/errors.h"
#include "sluice/pipeline/internal/row_placer.h"
#include "sluice/pipeline/internal/stages.h"
#include "sluice/pipeline/internal/state.h"
#include "sluice/pipeline/parse_example.h"
#include "sluice/pipeline/parse_sequence_example.h"

namespace sluice::pipeline_internal {
namespace {

// Applies fn to one element, with the stage's error wording and spec check;
// the output keeps the input's origin unless fn set its own.
Result<Element> ApplyMap(const MapFn& fn, const std::optional<ElementSpec>& spec,
                         const std::string& stage, Element in, const MapContext& mc) {
  auto source = in.origin_source();
  const int64_t origin = in.origin_index();
  const int64_t key = in.key();
  MapContext keyed = mc;
  keyed.key = key;
  Result<Element> out = fn(std::move(in), keyed);
  if (!out.ok()) return StageError(out.status(), stage, mc.index, source, origin);
  if (spec) {
    Status s = spec->Check(*out);
    if (!s.ok()) {
      return StageError(s.WithContext("output does not match the declared output_spec"), stage,
                        mc.index, source, origin);
    }
  }
  if (!out->origin_source() && out->origin_index() < 0) out->set_origin(source, origin);
  if (out->key() < 0) out->set_key(key);
  return out;
}

// ApplyMap, then the output placed into its batch's buffer (if `placer`).
Result<Element> ApplyAndPlace(const MapFn& fn, const std::optional<ElementSpec>& spec,
                              const std::string& stage, RowPlacer* placer, Element in,
                              const MapContext& mc) {
  MapContext placed = mc;
  placed.placer = placer;
  Result<Element> out = ApplyMap(fn, spec, stage, std::move(in), placed);
  if (placer != nullptr) {
    if (out.ok()) {
      placer->Place(mc.index, *out);
    } else {
      placer->Skip(mc.index);
    }
  }
  return out;
}

class SyncMapIterator : public IteratorNode {
 public:
  SyncMapIterator(IteratorContext& ctx, const DatasetNode& node,
                  std::unique_ptr<IteratorNode> input, const MapFn& fn,
                  const std::optional<ElementSpec>& spec, uint64_t seed,
                  std::unique_ptr<RowPlacer> placer)
      : IteratorNode(&ctx, ctx.CountersFor(&node)),
        node_(node),
        input_(std::move(input)),
        fn_(fn),
        spec_(spec),
        seed_(seed),
        placer_(std::move(placer)) {}

  Status Save(StateWriter& w) override {
    w.Tag("map");
    w.I64(index_);
    return input_->Save(w);
  }
  Status Restore(StateReader& r) override {
    SLUICE_RETURN_IF_ERROR(r.Tag("map"));
    SLUICE_ASSIGN_OR_RETURN(index_, r.I64());
    return input_->Restore(r);
  }
  bool positional() const override { return input_->positional(); }
  int64_t position() const override { return input_->position(); }
  Status SeekTo(int64_t n) override {
    index_ = n;
    return input_->SeekTo(n);
  }

 protected:
  NextResult GetNext() override {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> in, input_->Next());
    if (!in) return in;
    MapContext mc{index_++, seed_, &ctx()->cancel_flag()};
    Result<Element> out = [&]() -> Result<Element> {
      // A call slower than 20 us, or the stage's first (not measured yet,
      // it may compute), holds the stage's CPU share (calls that wait, say
      // file reads in a sub-dataset of a parallel interleave, overlap),
      // taken before the share sampler starts; cancellation lets waiters
      // through at once, and no call starts then. Cheaper calls are not
      // governed (taking units would cost about what they do) and are
      // sampled one in 256.
      std::optional<CpuUse> use;
      if (counters()->slow_calls.load(std::memory_order_relaxed) ||
          counters()->calls.load(std::memory_order_relaxed) == 0) {
        use.emplace(ctx()->cpu(), counters()->cpu_permille.load(std::memory_order_relaxed));
        if (ctx()->cancelled()) return Status::Cancelled("pipeline cancelled");
      }
      CallTimer share(counters(), 1, /*count_busy=*/false, /*sample_every=*/256);
      WorkTimer timer(this);
      return ApplyAndPlace(fn_, spec_, node_.name(), placer_.get(), std::move(*in), mc);
    }();
    if (!out.ok()) return out.status();
    return std::optional<Element>(std::move(out).value());
  }

 private:
  const DatasetNode& node_;
  std::unique_ptr<IteratorNode> input_;
  const MapFn& fn_;
  const std::optional<ElementSpec>& spec_;
  const uint64_t seed_;
  const std::unique_ptr<RowPlacer> placer_;  // null: not fused with a batch
  int64_t index_ = 0;
};

class MapNode : public DatasetNode {
 public:
  MapNode(const Dataset& input, MapFn fn, MapOptions o)
      : DatasetNode("map", o.name, {input.node()},
                    o.output_spec ? *o.output_spec : ElementSpec::Unknown(), input.cardinality()),
        fn_(std::move(fn)),
        options_(std::move(o)) {}

  std::string Describe() const override {
    if (options_.parallelism == 1) return name();
    return name() + "(parallelism=" +
           (options_.parallelism == kAutotune ? std::string("autotune")
                                              : std::to_string(options_.parallelism)) +
           ")";
  }
  bool random_access() const override { return inputs()[0]->random_access(); }
  bool places_rows() const override { return true; }
  // parse_example over FixedLen features (and parse_sequence_example over
  // FixedLen context features alone) parses whole batches of records.
  std::optional<Dataset> FuseWithBatch(int64_t batch_size,
                                       const BatchOptions& options) const override {
    const ParseExampleFn* parse = fn_.target<ParseExampleFn>();
    const ParseSequenceExampleFn* seq = fn_.target<ParseSequenceExampleFn>();
    const bool fusable =
        (parse != nullptr && parse->status().ok() && parse->parser().fixed_length_only()) ||
        (seq != nullptr && seq->status().ok() && seq->parser().batch_is_stacked());
    if (!fusable || options_.output_spec) return std::nullopt;
    return Dataset(inputs()[0]).batch(batch_size, options).map(fn_, options_);
  }
  Result<Element> Get(IteratorContext& ctx, int64_t i) const override {
    SLUICE_ASSIGN_OR_RETURN(Element in, inputs()[0]->Get(ctx, i));
    MapContext mc{i, ctx.StageSeed(this, std::nullopt), &ctx.cancel_flag()};
    CpuUse use(ctx.cpu(), 1000);
    return ApplyMap(fn_, options_.output_spec, name(), std::move(in), mc);
  }

  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams& params) const override {
    IteratorParams inner = params;
    inner.rows_per_batch = 0;  // for this stage only
    SLUICE_ASSIGN_OR_RETURN(auto input, MakeIteratorOf(*inputs()[0], ctx, inner));
    const uint64_t seed = ctx.StageSeed(this, std::nullopt);
    const bool deterministic = options_.deterministic.value_or(ctx.deterministic());
    // Rows land in their batch slots only if they come out in input order.
    std::unique_ptr<RowPlacer> placer;
    if (params.rows_per_batch > 0 && (options_.parallelism == 1 || deterministic)) {
      placer = std::make_unique<RowPlacer>(params.rows_per_batch);
    }
    if (options_.parallelism == 1) {
      return std::unique_ptr<IteratorNode>(std::make_unique<SyncMapIterator>(
          ctx, *this, std::move(input), fn_, options_.output_spec, seed, std::move(placer)));
    }
    AsyncMapConfig c;
    const std::string stage = name();
    const MapFn* fn = &fn_;
    const std::optional<ElementSpec>* spec = &options_.output_spec;
    std::shared_ptr<RowPlacer> shared_placer = std::move(placer);
    c.fn = [fn, spec, stage, shared_placer](Element e, const MapContext& mc) {
      return ApplyAndPlace(*fn, *spec, stage, shared_placer.get(), std::move(e), mc);
    };
    c.parallelism = options_.parallelism;
    c.buffer_size = 0;
    c.deterministic = deterministic;
    c.seed = seed;
    c.name = stage;
    c.tag = "parallel_map";
    return std::unique_ptr<IteratorNode>(std::make_unique<AsyncMapIterator>(
        &ctx, ctx.CountersFor(this), std::move(input), std::move(c)));
  }

 private:
  MapFn fn_;
  MapOptions options_;
};

class PrefetchNode : public DatasetNode {
 public:
  PrefetchNode(const Dataset& input, int64_t n, PrefetchOptions o)
      : DatasetNode("prefetch", o.name, {input.node()}, input.element_spec(), input.cardinality()),
        n_(n) {}
  std::string Describe() const override {
    return name() + "(" + (n_ == kAutotune ? std::string("autotune") : std::to_string(n_)) + ")";
  }
  bool random_access() const override { return inputs()[0]->random_access(); }
  Result<Element> Get(IteratorContext& ctx, int64_t i) const override {
    return inputs()[0]->Get(ctx, i);
  }
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams& params) const override {
    SLUICE_ASSIGN_OR_RETURN(auto input, MakeIteratorOf(*inputs()[0], ctx, params));
    AsyncMapConfig c;
    c.parallelism = 1;
    c.buffer_size = n_;
    c.deterministic = true;
    c.name = name();
    c.tag = "prefetch";
    return std::unique_ptr<IteratorNode>(std::make_unique<AsyncMapIterator>(
        &ctx, ctx.CountersFor(this), std::move(input), std::move(c)));
  }

 private:
  int64_t n_;
};

}  // namespace

Dataset MakeMap(const Dataset& input, MapFn fn, MapOptions options) {
  if (!fn) return Dataset::FromError(Status::InvalidArgument("map: the function is empty"));
  if (const ParseExampleFn* parse = fn.target<ParseExampleFn>(); parse && !parse->status().ok()) {
    return Dataset::FromError(parse->status().WithContext("parse_example"));
  }
  if (const ParseSequenceExampleFn* parse = fn.target<ParseSequenceExampleFn>();
      parse && !parse->status().ok()) {
    return Dataset::FromError(parse->status().WithContext("parse_sequence_example"));
  }
  if (options.parallelism < 1 && options.parallelism != kAutotune) {
    return Dataset::FromError(Status::InvalidArgument(
        "map: parallelism must be >= 1 or kAutotune, got " + std::to_string(options.parallelism)));
  }
  return Dataset(std::make_shared<MapNode>(input, std::move(fn), std::move(options)));
}

Dataset MakePrefetch(const Dataset& input, int64_t buffer_size, PrefetchOptions options) {
  if (buffer_size == 0) return input;
  if (buffer_size < 0 && buffer_size != kAutotune) {
    return Dataset::FromError(Status::InvalidArgument(
        "prefetch: buffer_size must be >= 0 or kAutotune, got " + std::to_string(buffer_size)));
  }
  return Dataset(std::make_shared<PrefetchNode>(input, buffer_size, std::move(options)));
}

}  // namespace sluice::pipeline_internal

namespace sluice {

Result<Tensor> MapContext::AllocateOutput(size_t component, DType dtype, const Shape& shape) const {
  if (placer != nullptr) {
    if (std::optional<Tensor> row = placer->Reserve(index, component, dtype, shape)) {
      return std::move(*row);
    }
  }
  return Tensor::Allocate(dtype, shape);
}

}  // namespace sluice
