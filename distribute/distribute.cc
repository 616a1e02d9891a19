// distribute: the policy for a dataset, the counts that make every rank's
// share the same length, and the share itself (shard(), or a file source
// over this rank's files).
#include "sluice/distribute/distribute.h"
#include "sluice/core/filesystem.h"

#include <algorithm>
#include <filesystem>

#include "sluice/records/record_index.h"
#include "sluice/records/tfrecord_reader.h"

namespace sluice {
namespace {

std::string Count(int64_t n) { return n < 0 ? std::string("?") : std::to_string(n); }

// Records per file of `files` (by index when one matches, else by reading).
Result<std::vector<int64_t>> CountFiles(const std::vector<std::string>& files) {
  TFRecordReaderOptions o;
  o.verify_checksums = false;  // counting: the framing is checked, not the data
  std::vector<int64_t> counts;
  for (const std::string& f : files) {
    Result<uint64_t> n = CountRecords(f, o);
    if (!n.ok()) return n.status().WithContext("distribute (FILE): counting the records of " + f);
    counts.push_back(static_cast<int64_t>(*n));
  }
  return counts;
}

// The files of rank r of w: r, r + w, ...
std::vector<std::string> FilesOf(const std::vector<std::string>& files, int r, int w) {
  std::vector<std::string> mine;
  for (size_t i = static_cast<size_t>(r); i < files.size(); i += static_cast<size_t>(w)) {
    mine.push_back(files[i]);
  }
  return mine;
}

// Why RECORD is impossible for `ds`, for the error message.
std::string WhyNotRandomAccess(const Dataset& ds) {
  std::vector<std::string> files = ds.source_files();
  for (const std::string& f : files) {
    const Result<bool> has_index = PathExists(RecordIndex::PathFor(f));
    if (has_index.ok() && !*has_index) {
      return "its file " + f + " has no index (" + RecordIndex::PathFor(f) +
             "; make them with `sluice index`)";
    }
  }
  if (!files.empty()) {
    return "its files are compressed or their indexes do not match them (rebuild them with "
           "`sluice index`)";
  }
  if (ds.cardinality() < 0 && ds.random_access()) return "its size is not known";
  return "'" + ds.DebugString() +
         "' does not allow random access (apply distribute before shuffle buffers, batch, "
         "interleave and filter)";
}

Result<DistributePlan> PlanFile(const Dataset& ds, const InputContext& c,
                                const DistributeOptions& o, DistributePlan plan) {
  const std::vector<std::string> files = ds.source_files();
  const int w = c.world_size;
  if (files.empty()) {
    return Status::FailedPrecondition(
        "distribute (FILE): '" + ds.DebugString() +
        "' is not a file source; apply FILE sharding to TFRecordDataset(files) itself");
  }
  if (static_cast<int64_t>(files.size()) < w) {
    return Status::InvalidArgument(
        "distribute (FILE): " + std::to_string(files.size()) + " files for " + std::to_string(w) +
        " ranks; every rank needs at least one file (write more shards, index the files for "
        "RECORD sharding with `sluice index`, or use DATA)");
  }
  plan.policy = DistributePolicy::kFile;
  plan.files = FilesOf(files, c.rank, w);
  // Records per rank: with a communicator each rank counts its own files.
  std::vector<int64_t> totals(static_cast<size_t>(w), 0);
  if (c.communicator && w > 1) {
    SLUICE_ASSIGN_OR_RETURN(std::vector<int64_t> mine, CountFiles(plan.files));
    int64_t total = 0;
    for (int64_t n : mine) total += n;
    SLUICE_RETURN_IF_ERROR(c.communicator->AllGather(&total, totals.data(), sizeof(total)));
  } else {
    SLUICE_ASSIGN_OR_RETURN(std::vector<int64_t> all, CountFiles(files));
    for (size_t i = 0; i < all.size(); ++i) totals[i % static_cast<size_t>(w)] += all[i];
  }
  plan.total = 0;
  for (int64_t t : totals) plan.total += t;
  const int64_t lo = *std::min_element(totals.begin(), totals.end());
  const int64_t hi = *std::max_element(totals.begin(), totals.end());
  plan.per_rank = o.pad_for_eval ? hi : lo;
  plan.dropped = o.pad_for_eval ? 0 : plan.total - lo * w;
  plan.padded = o.pad_for_eval ? hi - totals[static_cast<size_t>(c.rank)] : 0;
  return plan;
}

// Adds the weight component: `weight` on every element.
Dataset Weighted(const Dataset& ds, float weight, const std::string& name) {
  return ds.map([weight, name](Element e) {
    e.push_back(Tensor::Scalar<float>(weight), name);
    return e;
  });
}

}  // namespace

InputContext InputContext::FromCluster(const ClusterSpec& cluster) {
  InputContext c;
  c.rank = cluster.rank;
  c.world_size = cluster.world_size;
  return c;
}

InputContext InputContext::FromCommunicator(std::shared_ptr<Communicator> communicator) {
  InputContext c;
  if (communicator) {
    c.rank = communicator->rank();
    c.world_size = communicator->size();
  }
  c.communicator = std::move(communicator);
  return c;
}

Status InputContext::Validate() const {
  if (world_size < 1 || rank < 0 || rank >= world_size) {
    return Status::InvalidArgument("distribute: rank " + std::to_string(rank) +
                                   " is outside [0, world size " + std::to_string(world_size) +
                                   ")");
  }
  if (communicator && (communicator->rank() != rank || communicator->size() != world_size)) {
    return Status::InvalidArgument("distribute: the input context says rank " +
                                   std::to_string(rank) + " of " + std::to_string(world_size) +
                                   " but its communicator is " + communicator->Describe());
  }
  return Status::OK();
}

std::string_view DistributePolicyName(DistributePolicy policy) {
  switch (policy) {
    case DistributePolicy::kAuto: return "AUTO";
    case DistributePolicy::kFile: return "FILE";
    case DistributePolicy::kData: return "DATA";
    case DistributePolicy::kRecord: return "RECORD";
    case DistributePolicy::kOff: return "OFF";
  }
  return "?";
}

std::string DistributePlan::ToString() const {
  std::string s = std::string(DistributePolicyName(policy)) + ": ";
  const std::string unit = policy == DistributePolicy::kFile ? "records" : "elements";
  if (policy == DistributePolicy::kOff) {
    s += "every rank reads all " + Count(total) + " " + unit;
  } else {
    s += Count(total) + " " + unit + " over " + std::to_string(world_size) + " ranks, " +
         Count(per_rank) + " each";
    if (padded > 0) s += " (this rank: " + std::to_string(padded) + " padding, weight 0)";
    if (dropped >= 0) {
      s += ", " + std::to_string(dropped) + " left over";
    } else {
      s += "; an incomplete last round is dropped";
    }
    if (policy == DistributePolicy::kFile) {
      s += "; rank " + std::to_string(rank) + " reads " + std::to_string(files.size()) +
           (files.size() == 1 ? " file" : " files");
    }
  }
  if (!why.empty()) s += " [" + why + "]";
  return s;
}

Result<DistributePlan> PlanDistribution(const Dataset& dataset, const InputContext& context,
                                        const DistributeOptions& options) {
  SLUICE_RETURN_IF_ERROR(dataset.status());
  SLUICE_RETURN_IF_ERROR(context.Validate());
  DistributePlan plan;
  plan.rank = context.rank;
  plan.world_size = context.world_size;
  plan.total = dataset.cardinality() >= 0 ? dataset.cardinality() : -1;
  const int64_t w = context.world_size;
  const bool indexed = dataset.random_access() && dataset.cardinality() >= 0;
  DistributePolicy policy = options.policy;
  if (policy == DistributePolicy::kAuto) {
    const std::vector<std::string> files = dataset.source_files();
    if (indexed) {
      policy = DistributePolicy::kRecord;
      plan.why = "AUTO: random access with a known size";
    } else if (!files.empty() && static_cast<int64_t>(files.size()) >= w) {
      policy = DistributePolicy::kFile;
      plan.why = "AUTO: files without usable indexes";
    } else {
      policy = DistributePolicy::kData;
      plan.why = files.empty() ? "AUTO: no random access and not a file source"
                               : "AUTO: fewer files than ranks and no usable indexes";
    }
  }
  switch (policy) {
    case DistributePolicy::kOff:
      plan.policy = policy;
      plan.per_rank = plan.total;
      plan.dropped = 0;
      return plan;
    case DistributePolicy::kFile: return PlanFile(dataset, context, options, std::move(plan));
    case DistributePolicy::kRecord:
      if (!indexed) {
        return Status::FailedPrecondition("distribute (RECORD): " + WhyNotRandomAccess(dataset));
      }
      [[fallthrough]];
    case DistributePolicy::kData:
      plan.policy = policy;
      if (plan.total >= 0) {
        plan.per_rank = options.pad_for_eval ? (plan.total + w - 1) / w : plan.total / w;
        plan.dropped = options.pad_for_eval ? 0 : plan.total % w;
        // With padding, ranks r >= n mod w (when it is not 0) get one copy.
        const int64_t rem = plan.total % w;
        plan.padded = options.pad_for_eval && rem != 0 && context.rank >= rem ? 1 : 0;
      }
      return plan;
    case DistributePolicy::kAuto: break;
  }
  return Status::Internal("distribute: no policy chosen");
}

Dataset DistributeDataset(const Dataset& dataset, const InputContext& context,
                          const DistributeOptions& options) {
  Result<DistributePlan> plan = PlanDistribution(dataset, context, options);
  if (!plan.ok()) return Dataset::FromError(plan.status());
  const int w = context.world_size;
  switch (plan->policy) {
    case DistributePolicy::kOff: return dataset;
    case DistributePolicy::kRecord:
    case DistributePolicy::kData:
      // Even for one rank: stages below keep the same place in the chain,
      // so seeds derived from the pipeline seed do not depend on w.
      return dataset.shard(
          w, context.rank,
          {.equal = true, .pad = options.pad_for_eval, .weight_name = options.weight_name});
    case DistributePolicy::kFile: {
      Dataset mine = dataset.with_source_files(plan->files);
      if (!options.pad_for_eval) return mine.take(plan->per_rank);
      Dataset real = Weighted(mine, 1.0f, options.weight_name);
      if (plan->padded == 0) return real;
      // Copies of a record from this rank's files, or the first record of
      // all if this rank has none.
      Dataset source = plan->per_rank - plan->padded > 0 ? mine : dataset;
      return real.concatenate(
          Weighted(source.take(1), 0.0f, options.weight_name).repeat(plan->padded));
    }
    case DistributePolicy::kAuto: break;
  }
  return Dataset::FromError(Status::Internal("distribute: no policy chosen"));
}

std::function<Dataset(const Dataset&)> distribute(InputContext context, DistributeOptions options) {
  return [context = std::move(context), options = std::move(options)](const Dataset& ds) {
    return DistributeDataset(ds, context, options);
  };
}

}  // namespace sluice
