// The host CrossDeviceOps: fused buckets reduced through a Communicator,
// in place where the bytes lie one after another, else a cache-sized piece
// at a time through one preallocated buffer; with overlap, full buckets go
// to a SerialQueue of their own while the backward pass goes on.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "sluice/core/background.h"
#include "sluice/nn/cross_device_ops.h"

namespace sluice::nn {
namespace {

// dst[i] = src[i] / divisor, as Communicator's kMean divides (float32 by
// the divisor as a float, float64 by it as a double): the same bits. In
// blocks through a local array, which the compiler turns into vector
// divisions even where dst and src are the same buffer.
template <typename T>
void DivideBlocks(T* dst, const T* src, size_t count, T k) {
  constexpr size_t kBlock = 32 / sizeof(T);
  size_t i = 0;
  for (; i + kBlock <= count; i += kBlock) {
    T block[kBlock];
    for (size_t j = 0; j < kBlock; ++j) block[j] = src[i + j];
    for (size_t j = 0; j < kBlock; ++j) block[j] /= k;
    for (size_t j = 0; j < kBlock; ++j) dst[i + j] = block[j];
  }
  for (; i < count; ++i) dst[i] = src[i] / k;
}

void DivideInto(void* dst, const void* src, size_t count, DType dtype, int divisor) {
  if (dtype == DType::kFloat32) {
    DivideBlocks(static_cast<float*>(dst), static_cast<const float*>(src), count,
                 static_cast<float>(divisor));
  } else {
    DivideBlocks(static_cast<double*>(dst), static_cast<const double*>(src), count,
                 static_cast<double>(divisor));
  }
}

Status CheckFloat(const DeviceTensor& t, size_t i) {
  const DType d = t.dtype();
  if (d == DType::kFloat32 || d == DType::kFloat64) return Status::OK();
  return Status::InvalidArgument("all-reduce: tensor " + std::to_string(i) + " is " +
                                 std::string(DTypeName(d)) + "; float32 or float64 only");
}

class HostCrossDeviceOps : public CrossDeviceOps {
 public:
  HostCrossDeviceOps(Backend& backend, Communicator& comm, CrossDeviceOptions options)
      : backend_(backend),
        comm_(comm),
        options_(options),
        on_host_(backend.device().kind() == DeviceKind::kCpu),
        threaded_(on_host_ && options.overlap) {}

  // Buckets not yet started are dropped; ~SerialQueue waits for the one
  // being reduced.
  ~HostCrossDeviceOps() override { queue_.DiscardPending(); }

  std::string name() const override {
    return "host (" + comm_.Describe() + "), buckets of " +
           std::to_string(options_.bucket_bytes >> 20) + " MB" + (threaded_ ? ", overlapped" : "");
  }

  Status AllReduceMean(std::span<DeviceTensor* const> tensors) override {
    for (size_t i = 0; i < tensors.size(); ++i) SLUICE_RETURN_IF_ERROR(CheckFloat(*tensors[i], i));
    size_t i = 0;
    while (i < tensors.size()) {
      size_t j = i + 1, bytes = tensors[i]->byte_size();
      while (j < tensors.size() && Fits(tensors[i]->dtype(), bytes, *tensors[j], i == 0)) {
        bytes += tensors[j]->byte_size();
        ++j;
      }
      SLUICE_RETURN_IF_ERROR(Reduce(tensors.subspan(i, j - i)));
      i = j;
    }
    return Status::OK();
  }

  Status Add(std::span<DeviceTensor* const> ready) override {
    for (DeviceTensor* t : ready) {
      SLUICE_RETURN_IF_ERROR(CheckFloat(*t, added_count_));
      ++added_count_;
      if (!pending_.empty() && !Fits(pending_[0]->dtype(), pending_bytes_, *t, launched_ == 0)) {
        Launch();
      }
      pending_.push_back(t);
      pending_bytes_ += t->byte_size();
    }
    return Status::OK();
  }

  Status Wait() override {
    if (!pending_.empty()) Launch();
    added_count_ = 0;
    launched_ = 0;
    if (!threaded_) {
      std::vector<std::vector<DeviceTensor*>> buckets;
      buckets.swap(deferred_);
      for (const auto& b : buckets) SLUICE_RETURN_IF_ERROR(Reduce(b));
      return Status::OK();
    }
    queue_.Drain();
    Status s = error_;
    error_ = Status::OK();
    return s;
  }

  void Cancel() override {
    pending_.clear();
    pending_bytes_ = 0;
    added_count_ = 0;
    launched_ = 0;
    deferred_.clear();
    queue_.DiscardPending();
    queue_.Drain();  // the bucket being reduced
    error_ = Status::OK();
  }

  Status Broadcast(std::span<DeviceTensor* const> tensors, int root) override {
    size_t i = 0;
    while (i < tensors.size()) {
      size_t j = i + 1, bytes = tensors[i]->byte_size();
      while (j < tensors.size() && Fits(tensors[i]->dtype(), bytes, *tensors[j])) {
        bytes += tensors[j]->byte_size();
        ++j;
      }
      std::span<DeviceTensor* const> bucket = tensors.subspan(i, j - i);
      if (on_host_ && Contiguous(bucket)) {
        SLUICE_RETURN_IF_ERROR(comm_.Broadcast(bucket[0]->raw_data(), bytes, root));
      } else {
        SLUICE_RETURN_IF_ERROR(Pack(bucket));
        SLUICE_RETURN_IF_ERROR(comm_.Broadcast(staging_.data(), bytes, root));
        SLUICE_RETURN_IF_ERROR(Unpack(bucket, /*divide=*/false));
      }
      i = j;
    }
    return Status::OK();
  }

  int64_t bytes_reduced() const override { return bytes_.load(std::memory_order_relaxed); }

 private:
  // Whether `next` joins a bucket of `dtype` that holds `bytes` so far (a
  // tensor larger than a bucket goes alone), the reduction's first or not.
  bool Fits(DType dtype, size_t bytes, const DeviceTensor& next, bool first = false) const {
    const size_t cap = first ? std::min(options_.first_bucket_bytes, options_.bucket_bytes)
                             : options_.bucket_bytes;
    return next.dtype() == dtype && bytes + next.byte_size() <= cap;
  }

  // Whether the bucket's tensors lie one after another in host memory.
  static bool Contiguous(std::span<DeviceTensor* const> bucket) {
    for (size_t k = 1; k < bucket.size(); ++k) {
      if (static_cast<const uint8_t*>(bucket[k - 1]->raw_data()) + bucket[k - 1]->byte_size() !=
          bucket[k]->raw_data()) {
        return false;
      }
    }
    return true;
  }

  // Hands the pending bucket on: to the queue, or to Wait().
  void Launch() {
    std::vector<DeviceTensor*> bucket;
    bucket.swap(pending_);
    pending_bytes_ = 0;
    ++launched_;
    if (!threaded_) {
      deferred_.push_back(std::move(bucket));
      return;
    }
    queue_.Schedule([this, bucket = std::move(bucket)] {
      if (!error_.ok()) return;  // after an error, the rest is dropped
      error_ = Reduce(bucket);
    });
  }

  // One bucket's mean, in place.
  Status Reduce(std::span<DeviceTensor* const> bucket) {
    const DType dtype = bucket[0]->dtype();
    const size_t esize = DTypeSize(dtype);
    size_t bytes = 0;
    for (const DeviceTensor* t : bucket) bytes += t->byte_size();
    bytes_.fetch_add(static_cast<int64_t>(bytes), std::memory_order_relaxed);
    if (bytes == 0) return Status::OK();
    size_t piece = options_.chunk_bytes / esize * esize;
    if (piece == 0 || piece > bytes) piece = bytes;
    if (!on_host_) {
      SLUICE_RETURN_IF_ERROR(Pack(bucket));
      SLUICE_RETURN_IF_ERROR(
          comm_.AllReduce(staging_.data(), bytes / esize, dtype, ReduceOp::kSum));
      return Unpack(bucket, /*divide=*/true);
    }
    if (Contiguous(bucket)) {  // where it lies, a piece at a time
      uint8_t* data = static_cast<uint8_t*>(bucket[0]->raw_data());
      for (size_t done = 0; done < bytes; done += piece) {  // (MPI, 2 ranks: in its pass)
        const size_t n = std::min(piece, bytes - done) / esize;
        SLUICE_RETURN_IF_ERROR(comm_.AllReduce(data + done, n, dtype, ReduceOp::kMean));
      }
      return Status::OK();
    }
    // Packed a piece at a time into the buffer, summed, copied back divided.
    if (chunk_.size() < piece) chunk_.resize(piece);
    size_t t = 0, offset = 0;  // where the next piece starts
    for (size_t done = 0; done < bytes; done += piece) {
      const size_t n = std::min(piece, bytes - done);
      size_t t_end = t, off_end = offset;
      for (size_t filled = 0; filled < n;) {
        const size_t take = std::min(n - filled, bucket[t_end]->byte_size() - off_end);
        std::memcpy(chunk_.data() + filled,
                    static_cast<const uint8_t*>(bucket[t_end]->raw_data()) + off_end, take);
        filled += take;
        off_end += take;
        if (off_end == bucket[t_end]->byte_size()) ++t_end, off_end = 0;
      }
      SLUICE_RETURN_IF_ERROR(comm_.AllReduce(chunk_.data(), n / esize, dtype, ReduceOp::kSum));
      for (size_t copied = 0; copied < n;) {
        const size_t take = std::min(n - copied, bucket[t]->byte_size() - offset);
        DivideInto(static_cast<uint8_t*>(bucket[t]->raw_data()) + offset, chunk_.data() + copied,
                   take / esize, dtype, comm_.size());
        copied += take;
        offset += take;
        if (offset == bucket[t]->byte_size()) ++t, offset = 0;
      }
    }
    return Status::OK();
  }

  // The bucket's bytes, one after another, into staging_ (host).
  Status Pack(std::span<DeviceTensor* const> bucket) {
    size_t total = 0;
    for (const DeviceTensor* t : bucket) total += t->byte_size();
    if (staging_.size() < total) staging_.resize(total);
    size_t offset = 0;
    for (const DeviceTensor* t : bucket) {
      if (on_host_) {
        std::memcpy(staging_.data() + offset, t->raw_data(), t->byte_size());
      } else {
        SLUICE_ASSIGN_OR_RETURN(Tensor host, backend_.ToHost(*t));
        std::memcpy(staging_.data() + offset, host.raw_data(), t->byte_size());
      }
      offset += t->byte_size();
    }
    return Status::OK();
  }

  // staging_ back into the bucket's tensors (divided by the replica count
  // with `divide`: the sum becomes the mean).
  Status Unpack(std::span<DeviceTensor* const> bucket, bool divide) {
    size_t offset = 0;
    for (DeviceTensor* t : bucket) {
      const uint8_t* from = staging_.data() + offset;
      const size_t n = static_cast<size_t>(t->num_elements());
      if (on_host_) {
        if (divide) {
          DivideInto(t->raw_data(), from, n, t->dtype(), comm_.size());
        } else {
          std::memcpy(t->raw_data(), from, t->byte_size());
        }
      } else {
        SLUICE_ASSIGN_OR_RETURN(Tensor host, Tensor::Allocate(t->dtype(), t->shape()));
        if (divide) {
          DivideInto(host.raw_data(), from, n, t->dtype(), comm_.size());
        } else {
          std::memcpy(host.raw_data(), from, t->byte_size());
        }
        SLUICE_RETURN_IF_ERROR(backend_.CopyFromHost(host, t));
      }
      offset += t->byte_size();
    }
    return Status::OK();
  }

  Backend& backend_;
  Communicator& comm_;
  const CrossDeviceOptions options_;
  const bool on_host_;   // the tensors' bytes are host memory
  const bool threaded_;  // full buckets go to queue_
  // Kept across steps: grown once, never freed until the ops go.
  std::vector<uint8_t> staging_;  // whole buckets (broadcast, device tensors)
  std::vector<uint8_t> chunk_;    // one piece of a packed bucket
  std::atomic<int64_t> bytes_{0};

  // Add()'s bucket being filled, and (not threaded) the full ones.
  std::vector<DeviceTensor*> pending_;
  size_t pending_bytes_ = 0;
  size_t added_count_ = 0;
  size_t launched_ = 0;  // buckets handed on since the last Wait()
  std::vector<std::vector<DeviceTensor*>> deferred_;

  // Overlap: the first error of the queue's reductions since the last
  // Wait(); written by its closures, read and reset after Drain().
  Status error_;
  // Reduces full buckets (overlap); its thread starts with the first.
  SerialQueue queue_{"sluice-allreduce"};  // last: stopped before the rest goes
};

}  // namespace

std::unique_ptr<CrossDeviceOps> MakeHostCrossDeviceOps(Backend& backend, Communicator& comm,
                                                       CrossDeviceOptions options) {
  return std::make_unique<HostCrossDeviceOps>(backend, comm, options);
}

}  // namespace sluice::nn
