// distribute: every rank's exact share of a dataset (tf.distribute's input
// distribution, with tf.data's auto-shard policy names).
//
//   auto cluster = sluice::ClusterResolver::FromEnvironment().value();
//   auto ds = sluice::TFRecordDataset(files)          // with .idx indexes
//                 .global_shuffle({.seed = 7})
//                 .apply(sluice::distribute(sluice::InputContext::FromCluster(cluster)))
//                 .map(parse, {.parallelism = sluice::kAutotune})
//                 .batch(per_replica_batch, {.drop_remainder = true});
//
// Apply it where tf.data would shard: after the source (and global_shuffle,
// and maps that may run on every rank), before shuffle buffers and batch.
//
// Policies (DistributePolicy):
//   RECORD  the input allows random access with a known size n (indexed
//           TFRecord files, range, from_tensor_slices, list_files, and
//           global_shuffle, maps, take, skip over them): rank r of W takes
//           positions r, r + W, r + 2W, ... of the epoch's order, reading
//           nothing else. Position p is the same record whatever W is, so
//           step k's W per-rank batches of b together hold the single-rank
//           batch k of W*b.
//   FILE    the input is a file source (TFRecordDataset) with at least W
//           files: rank r reads files r, r + W, ...; record counts (from
//           .idx files or by walking the record headers) make every rank
//           stop at the same count. Fewer files than ranks: InvalidArgument.
//   DATA    every rank reads everything and keeps positions r, r + W, ...
//           (for inputs that are neither: a generator, an interleave).
//   OFF     every rank gets every element.
//   AUTO    (default) RECORD if possible, else FILE if the input is a file
//           source with enough files, else DATA.
// Every rank gets the same number of elements: floor(n / W), the n mod W
// left over dropped (PlanDistribution() reports how many), or with
// pad_for_eval ceil(n / W), the missing ones copies of the last round's
// first element carrying weight 0 in a float32 "sample_weight" component
// (1 on every real element): metrics weighted by it count each element
// once, none twice.
//
// Per-element randomness is keyed by the element's position in the epoch
// (MapContext::rng), so augmentations are the same for any W; so is
// global_shuffle's order, which depends on (seed, epoch) only.
//
// Iterator state stays cursors: save() on each rank, and restore() on the
// same or another number of ranks continues the same global order (RECORD,
// FILE and DATA at the same W; RECORD at any W). Restoring on W' ranks:
// every rank restores a state saved at the same step (any rank's).
//
// Plain functions; the InputContext may be shared between threads.
#ifndef SLUICE_DISTRIBUTE_DISTRIBUTE_H_
#define SLUICE_DISTRIBUTE_DISTRIBUTE_H_

#include <functional>
#include <memory>
#include <string>

#include "sluice/distribute/cluster_resolver.h"
#include "sluice/distribute/communicator.h"
#include "sluice/pipeline/dataset.h"

namespace sluice {

// Which rank this is, of how many; tf.distribute.InputContext's
// input_pipeline_id / num_input_pipelines.
struct InputContext {
  int rank = 0;
  int world_size = 1;
  // Optional. With it, FILE sharding counts only this rank's files and the
  // ranks agree on the step count through it; without it every rank counts
  // every file.
  std::shared_ptr<Communicator> communicator;

  static InputContext FromCluster(const ClusterSpec& cluster);
  static InputContext FromCommunicator(std::shared_ptr<Communicator> communicator);
  // InvalidArgument unless 0 <= rank < world_size.
  Status Validate() const;
};

enum class DistributePolicy { kAuto, kFile, kData, kRecord, kOff };
std::string_view DistributePolicyName(DistributePolicy policy);  // "AUTO", "FILE", ...

struct DistributeOptions {
  DistributePolicy policy = DistributePolicy::kAuto;
  // Pad every rank to ceil(n / W) elements with weight-0 copies instead of
  // dropping the n mod W left over (see above); for evaluation.
  bool pad_for_eval = false;
  std::string weight_name = "sample_weight";
};

// What DistributeDataset does for a dataset, and what it costs.
struct DistributePlan {
  DistributePolicy policy = DistributePolicy::kOff;  // never kAuto
  int rank = 0;
  int world_size = 1;
  int64_t total = -1;              // elements (records) in all, -1 when unknown
  int64_t per_rank = -1;           // elements every rank gets, -1 when unknown
  int64_t dropped = -1;            // left over, not read by any rank
  int64_t padded = 0;              // weight-0 copies on this rank
  std::vector<std::string> files;  // FILE: this rank's files
  std::string why;                 // why AUTO chose this policy
  // "RECORD: 60000 elements over 4 ranks, 15000 each (0 left over)".
  std::string ToString() const;
};

// Decides the policy and counts (FILE reads .idx files or record headers).
Result<DistributePlan> PlanDistribution(const Dataset& dataset, const InputContext& context,
                                        const DistributeOptions& options = {});
// This rank's share of `dataset`, or the planning error.
Dataset DistributeDataset(const Dataset& dataset, const InputContext& context,
                          const DistributeOptions& options = {});
// DistributeDataset as a transformation for Dataset::apply.
std::function<Dataset(const Dataset&)> distribute(InputContext context,
                                                  DistributeOptions options = {});

}  // namespace sluice

#endif  // SLUICE_DISTRIBUTE_DISTRIBUTE_H_
