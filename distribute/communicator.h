// Communicator: collective operations among the ranks of a job, on host
// buffers: barrier, broadcast, all-gather and all-reduce.
//
// Two transports: MPI (MpiCommunicator, one process per rank, started by
// mpirun or srun, on one host or many) and InProcessGroup (threads of one
// process as ranks: tests, and replicas on one machine). Connect() picks
// what the launcher set up.
//
// Every rank must call the same collectives in the same order with matching
// arguments (the in-process transport checks and fails the group with an
// error naming both calls; MPI cannot always tell). A collective that does
// not complete within the timeout fails with Unavailable naming the ranks
// that did not arrive, or those known to have exited; after any failure the
// communicator is broken and every later call repeats that error. A rank
// that fails itself calls Abort(), which the others see as an error naming
// it (in-process) or which ends the job (MPI: mpirun then names the rank).
//
// Results are the same on every rank, bit for bit: reductions add in rank
// order in-process, and MPI's are computed once per element and sent.
//
// Thread-safety: one collective at a time per communicator (calls from
// several threads are serialized, but then their order across ranks is not
// defined). Use Duplicate() for an independent channel that another thread
// may use concurrently.
#ifndef SLUICE_DISTRIBUTE_COMMUNICATOR_H_
#define SLUICE_DISTRIBUTE_COMMUNICATOR_H_

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/core/dtype.h"
#include "sluice/core/result.h"
#include "sluice/core/tensor.h"

namespace sluice {

enum class ReduceOp {
  kSum,
  kMean,  // the sum divided by size(); floating-point dtypes only (MPI with 2
          // ranks divides within its own pass: the same bits, no pass more)
  kMin,
  kMax,
};
std::string_view ReduceOpName(ReduceOp op);

struct CommunicatorOptions {
  // How long a collective waits for the other ranks before failing. Default:
  // 600 s, or SLUICE_COLLECTIVE_TIMEOUT_S when set (seconds, > 0).
  std::chrono::milliseconds timeout{0};
};
// The timeout Connect() and InProcessGroup use when options leave it 0.
std::chrono::milliseconds DefaultCollectiveTimeout();

class Communicator {
 public:
  virtual ~Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // "MPI (Open MPI v4.1.4), rank 1 of 4" or "in-process, rank 1 of 4".
  virtual std::string Describe() const = 0;

  virtual Status Barrier() = 0;
  // Copies `bytes` bytes at `data` on rank `root` into `data` on every rank.
  virtual Status Broadcast(void* data, size_t bytes, int root) = 0;
  // Every rank's `bytes` bytes at `in`, in rank order, into `out` (which
  // holds size() * bytes). `in` and `out` must not overlap.
  virtual Status AllGather(const void* in, void* out, size_t bytes) = 0;
  // Element-wise reduction of `count` values of `dtype` across ranks, in
  // place. Dtypes: float32, float64, int32, int64, uint8 (kMean: floats).
  virtual Status AllReduce(void* data, size_t count, DType dtype, ReduceOp op) = 0;
  // A new communicator over the same ranks whose collectives never mix with
  // this one's (MPI_Comm_dup). Itself a collective.
  virtual Result<std::unique_ptr<Communicator>> Duplicate() = 0;
  // This rank has failed (`why`): the other ranks' collectives fail naming
  // it. MPI: prints why and ends the whole job (MPI_Abort).
  virtual void Abort(const Status& why) = 0;

  // Tensor forms. REQUIRES: a dense tensor whose bytes this rank may write.
  Status AllReduce(Tensor& t, ReduceOp op);
  Status Broadcast(Tensor& t, int root);
  // Every rank's bytes, in rank order (sizes may differ between ranks).
  Result<std::vector<std::string>> AllGatherBytes(std::string_view mine);
  // One int64 from every rank, reduced.
  Result<int64_t> AllReduceInt(int64_t value, ReduceOp op);

 protected:
  Communicator(int rank, int size) : rank_(rank), size_(size) {}
  // InvalidArgument unless `op` applies to `dtype` and the dtype is one of
  // the supported ones.
  static Status CheckReduce(DType dtype, ReduceOp op);
  // out[i] = op(out[i], in[i]) for `count` values (kMean adds).
  static void Accumulate(void* out, const void* in, size_t count, DType dtype, ReduceOp op);
  // data[i] /= divisor for the floating dtypes (kMean's last step).
  static void Divide(void* data, size_t count, DType dtype, int divisor);

 private:
  const int rank_;
  const int size_;
};

// The communicator for this process as its launcher started it: a single
// rank when alone (world size 1); MPI when Open MPI, PMI or Slurm started
// several ranks and sluice was built with MPI. FailedPrecondition naming the
// launcher otherwise (torchrun or a cluster config start processes but give
// them no transport sluice can use).
Result<std::shared_ptr<Communicator>> Connect(CommunicatorOptions options = {});

}  // namespace sluice

#endif  // SLUICE_DISTRIBUTE_COMMUNICATOR_H_
