// Communicator: the pieces every transport shares (checks, element-wise
// reduction, tensor and string forms) and Connect().
#include "sluice/distribute/communicator.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>

#include "sluice/distribute/cluster_resolver.h"
#include "sluice/distribute/in_process.h"
#include "sluice/distribute/mpi_communicator.h"

namespace sluice {
namespace {

template <typename T>
void AccumulateAs(void* out, const void* in, size_t count, ReduceOp op) {
  T* o = static_cast<T*>(out);
  const T* x = static_cast<const T*>(in);
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kMean:
      for (size_t i = 0; i < count; ++i) o[i] = static_cast<T>(o[i] + x[i]);
      break;
    case ReduceOp::kMin:
      for (size_t i = 0; i < count; ++i) o[i] = std::min(o[i], x[i]);
      break;
    case ReduceOp::kMax:
      for (size_t i = 0; i < count; ++i) o[i] = std::max(o[i], x[i]);
      break;
  }
}

}  // namespace

std::string_view ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kMean: return "mean";
    case ReduceOp::kMin: return "min";
    case ReduceOp::kMax: return "max";
  }
  return "?";
}

std::chrono::milliseconds DefaultCollectiveTimeout() {
  if (const char* v = std::getenv("SLUICE_COLLECTIVE_TIMEOUT_S")) {
    double s = 0;
    const char* end = v + std::strlen(v);
    auto [p, ec] = std::from_chars(v, end, s);
    if (ec == std::errc() && p == end && s > 0) {
      return std::chrono::milliseconds(static_cast<int64_t>(s * 1000));
    }
  }
  return std::chrono::seconds(600);
}

Status Communicator::CheckReduce(DType dtype, ReduceOp op) {
  switch (dtype) {
    case DType::kFloat32:
    case DType::kFloat64: return Status::OK();
    case DType::kInt32:
    case DType::kInt64:
    case DType::kUInt8:
      if (op == ReduceOp::kMean) {
        return Status::InvalidArgument("all-reduce: mean of " + std::string(DTypeName(dtype)) +
                                       " values; use sum and divide, or a float dtype");
      }
      return Status::OK();
    default:
      return Status::InvalidArgument("all-reduce: dtype " + std::string(DTypeName(dtype)) +
                                     " is not supported (float32, float64, int32, int64, uint8)");
  }
}

void Communicator::Accumulate(void* out, const void* in, size_t count, DType dtype, ReduceOp op) {
  switch (dtype) {
    case DType::kFloat32: AccumulateAs<float>(out, in, count, op); break;
    case DType::kFloat64: AccumulateAs<double>(out, in, count, op); break;
    case DType::kInt32: AccumulateAs<int32_t>(out, in, count, op); break;
    case DType::kInt64: AccumulateAs<int64_t>(out, in, count, op); break;
    case DType::kUInt8: AccumulateAs<uint8_t>(out, in, count, op); break;
    default: break;  // refused by CheckReduce
  }
}

namespace {
// d[i] /= k in blocks through a local array, which the compiler turns into
// vector divisions (the same IEEE quotients).
template <typename T>
void DivideBlocks(T* d, size_t count, T k) {
  constexpr size_t kBlock = 32 / sizeof(T);
  size_t i = 0;
  for (; i + kBlock <= count; i += kBlock) {
    T block[kBlock];
    for (size_t j = 0; j < kBlock; ++j) block[j] = d[i + j] / k;
    for (size_t j = 0; j < kBlock; ++j) d[i + j] = block[j];
  }
  for (; i < count; ++i) d[i] /= k;
}
}  // namespace

void Communicator::Divide(void* data, size_t count, DType dtype, int divisor) {
  if (dtype == DType::kFloat32) {
    DivideBlocks(static_cast<float*>(data), count, static_cast<float>(divisor));
  } else if (dtype == DType::kFloat64) {
    DivideBlocks(static_cast<double*>(data), count, static_cast<double>(divisor));
  }
}

Status Communicator::AllReduce(Tensor& t, ReduceOp op) {
  if (t.dtype() == DType::kString) {
    return Status::InvalidArgument("all-reduce: string tensors cannot be reduced");
  }
  return AllReduce(t.raw_data(), static_cast<size_t>(t.num_elements()), t.dtype(), op);
}

Status Communicator::Broadcast(Tensor& t, int root) {
  if (t.dtype() == DType::kString) {
    return Status::InvalidArgument("broadcast: string tensors hold views; broadcast bytes instead");
  }
  return Broadcast(t.raw_data(), t.byte_size(), root);
}

Result<std::vector<std::string>> Communicator::AllGatherBytes(std::string_view mine) {
  const int64_t n = static_cast<int64_t>(mine.size());
  std::vector<int64_t> sizes(static_cast<size_t>(size()));
  SLUICE_RETURN_IF_ERROR(AllGather(&n, sizes.data(), sizeof(n)));
  const int64_t longest = *std::max_element(sizes.begin(), sizes.end());
  for (int64_t s : sizes) {
    if (s < 0 || s > (int64_t{1} << 40))
      return Status::Internal("all-gather: a rank sent a bad size");
  }
  std::string padded(static_cast<size_t>(longest), '\0');
  std::memcpy(padded.data(), mine.data(), mine.size());
  std::string all(static_cast<size_t>(longest) * sizes.size(), '\0');
  SLUICE_RETURN_IF_ERROR(AllGather(padded.data(), all.data(), static_cast<size_t>(longest)));
  std::vector<std::string> out;
  for (size_t r = 0; r < sizes.size(); ++r) {
    out.push_back(all.substr(r * static_cast<size_t>(longest), static_cast<size_t>(sizes[r])));
  }
  return out;
}

Result<int64_t> Communicator::AllReduceInt(int64_t value, ReduceOp op) {
  SLUICE_RETURN_IF_ERROR(AllReduce(&value, 1, DType::kInt64, op));
  return value;
}

Result<std::shared_ptr<Communicator>> Connect(CommunicatorOptions options) {
  SLUICE_ASSIGN_OR_RETURN(ClusterSpec cluster, ClusterResolver::FromEnvironment());
  if (cluster.world_size == 1) {
    std::vector<std::unique_ptr<Communicator>> one = InProcessGroup::Create(1, options);
    return std::shared_ptr<Communicator>(std::move(one[0]));
  }
  const bool mpi_launch =
      cluster.source == "Open MPI" || cluster.source == "PMI" || cluster.source == "Slurm";
  if (!mpi_launch) {
    return Status::FailedPrecondition(
        "connect: " + cluster.ToString() +
        ", but sluice's collectives between processes run on MPI: start the job with mpirun or "
        "srun (the input can still be split without a communicator: InputContext::FromCluster)");
  }
  if (!MpiCommunicator::Available()) {
    return Status::FailedPrecondition("connect: " + cluster.ToString() +
                                      ", but this sluice was built without MPI (install "
                                      "libopenmpi-dev and rebuild)");
  }
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> mpi, MpiCommunicator::Create(options));
  if (mpi->rank() != cluster.rank || mpi->size() != cluster.world_size) {
    return Status::FailedPrecondition("connect: MPI says rank " + std::to_string(mpi->rank()) +
                                      " of " + std::to_string(mpi->size()) + " but the launcher " +
                                      cluster.ToString());
  }
  return std::shared_ptr<Communicator>(std::move(mpi));
}

}  // namespace sluice
