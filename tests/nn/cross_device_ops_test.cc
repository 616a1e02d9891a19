// The host CrossDeviceOps over an in-process group of 3 replicas: every
// way of moving a bucket (in place, contiguous slices, packed in pieces
// that cross tensor boundaries, overlapped on the ops' thread or not) gives
// the mean the communicator's kMean gives, bit for bit, on every replica.
#include "sluice/nn/cross_device_ops.h"

#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "sluice/core/rng.h"
#include "sluice/distribute/in_process.h"
#include "test_util.h"

namespace sluice::nn {
namespace {

constexpr int kReplicas = 3;  // a divisor that is not a power of two

// Replica r's tensors: sizes that make buckets of several tensors, one too
// large for a bucket, a float64 one, and two slices of one buffer (they lie
// one after another).
std::vector<DeviceTensor> Grads(Backend& cpu, int r) {
  std::vector<DeviceTensor> out;
  Rng rng(static_cast<uint64_t>(100 + r));
  auto make = [&](DType dtype, int64_t n) {
    DeviceTensor t = *cpu.Zeros(dtype, Shape{n});
    for (int64_t i = 0; i < n; ++i) {
      const float v = rng.Uniform(-1, 1) / static_cast<float>(1 + i % 7);
      if (dtype == DType::kFloat32) {
        t.data<float>()[i] = v;
      } else {
        t.data<double>()[i] = static_cast<double>(v) / 3.0;
      }
    }
    return t;
  };
  out.push_back(make(DType::kFloat32, 37));
  out.push_back(make(DType::kFloat32, 5));
  out.push_back(make(DType::kFloat32, 300));  // larger than a bucket
  out.push_back(make(DType::kFloat32, 11));
  out.push_back(make(DType::kFloat64, 23));
  DeviceTensor whole = make(DType::kFloat32, 40);
  out.push_back(*whole.Slice(0, 15));
  out.push_back(*whole.Slice(15, 40));
  out.push_back(make(DType::kFloat32, 1));
  return out;
}

// The reference: every tensor alone through the communicator's kMean.
std::vector<std::vector<DeviceTensor>> Reference(Backend& cpu) {
  auto comms = InProcessGroup::Create(kReplicas);
  std::vector<std::vector<DeviceTensor>> grads(kReplicas);
  std::vector<std::thread> threads;
  for (int r = 0; r < kReplicas; ++r) {
    grads[r] = Grads(cpu, r);
    threads.emplace_back([&, r] {
      for (DeviceTensor& t : grads[r]) {
        ASSERT_TRUE(comms[r]
                        ->AllReduce(t.raw_data(), static_cast<size_t>(t.num_elements()), t.dtype(),
                                    ReduceOp::kMean)
                        .ok());
      }
    });
  }
  for (auto& t : threads) t.join();
  return grads;
}

void ExpectSame(const std::vector<DeviceTensor>& a, const std::vector<DeviceTensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].byte_size(), b[i].byte_size());
    EXPECT_EQ(std::memcmp(a[i].raw_data(), b[i].raw_data(), a[i].byte_size()), 0) << "tensor " << i;
  }
}

struct Way {
  size_t chunk_bytes;
  bool overlap;
  bool add_wait;  // Add() a tensor or two at a time, then Wait()
};

TEST(CrossDeviceOpsTest, EveryWayOfMovingBucketsGivesTheMeanBitForBit) {
  Backend& cpu = *GetBackend(Device::Cpu()).value();
  const auto want = Reference(cpu);
  for (const Way& way : {Way{0, false, false}, Way{12, false, false}, Way{1 << 20, false, false},
                         Way{12, true, true}, Way{0, true, true}, Way{64, false, true}}) {
    SCOPED_TRACE("chunk " + std::to_string(way.chunk_bytes) + (way.overlap ? " overlap" : "") +
                 (way.add_wait ? " add/wait" : ""));
    auto comms = InProcessGroup::Create(kReplicas);
    std::vector<std::vector<DeviceTensor>> grads(kReplicas);
    std::vector<std::thread> threads;
    for (int r = 0; r < kReplicas; ++r) {
      grads[r] = Grads(cpu, r);
      threads.emplace_back([&, r] {
        // Buckets of 256 bytes (the first 100): several tensors in some, one alone.
        auto ops = MakeHostCrossDeviceOps(cpu, *comms[r],
                                          {.bucket_bytes = 256,
                                           .first_bucket_bytes = 100,
                                           .chunk_bytes = way.chunk_bytes,
                                           .overlap = way.overlap});
        std::vector<DeviceTensor*> ptrs;
        for (auto& t : grads[r]) ptrs.push_back(&t);
        for (int step = 0; step < 2; ++step) {  // buffers reused across steps
          if (step == 1) {
            grads[r] = Grads(cpu, r);
            ptrs.clear();
            for (auto& t : grads[r]) ptrs.push_back(&t);
          }
          if (!way.add_wait) {
            ASSERT_TRUE(ops->AllReduceMean(std::span<DeviceTensor* const>(ptrs)).ok());
            continue;
          }
          for (size_t i = 0; i < ptrs.size(); i += 2) {
            const size_t n = std::min<size_t>(2, ptrs.size() - i);
            ASSERT_TRUE(ops->Add(std::span<DeviceTensor* const>(ptrs).subspan(i, n)).ok());
          }
          Status s = ops->Wait();
          ASSERT_TRUE(s.ok()) << s;
        }
      });
    }
    for (auto& t : threads) t.join();
    for (int r = 0; r < kReplicas; ++r) ExpectSame(grads[r], want[r]);
  }
}

TEST(CrossDeviceOpsTest, AReplicaThatAbortsFailsTheOthersOverlappedBuckets) {
  Backend& cpu = *GetBackend(Device::Cpu()).value();
  auto comms = InProcessGroup::Create(2, {.timeout = std::chrono::seconds(60)});
  std::vector<std::vector<DeviceTensor>> grads = {Grads(cpu, 0), Grads(cpu, 1)};
  Status status[2];
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      auto ops = MakeHostCrossDeviceOps(cpu, *comms[r], {.bucket_bytes = 64, .overlap = true});
      std::vector<DeviceTensor*> ptrs;
      for (auto& t : grads[r]) ptrs.push_back(&t);
      if (r == 1) {  // hands one bucket on, then fails
        ASSERT_TRUE(ops->Add(std::span<DeviceTensor* const>(ptrs).first(2)).ok());
        comms[r]->Abort(Status::DataLoss("replica 1's backward pass failed"));
        ops->Cancel();
        status[r] = Status::DataLoss("replica 1's backward pass failed");
        return;
      }
      status[r] = ops->Add(std::span<DeviceTensor* const>(ptrs));
      if (status[r].ok()) status[r] = ops->Wait();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  SLUICE_EXPECT_ERROR(status[0], StatusCode::kUnavailable, "rank 1 of 2 failed");
  SLUICE_EXPECT_ERROR(status[0], StatusCode::kUnavailable, "backward pass failed");
}

TEST(CrossDeviceOpsTest, OnlyFloatsAreAveraged) {
  Backend& cpu = *GetBackend(Device::Cpu()).value();
  auto comms = InProcessGroup::Create(1);
  auto ops = MakeHostCrossDeviceOps(cpu, *comms[0]);
  DeviceTensor f = *cpu.Zeros(DType::kFloat32, Shape{4});
  DeviceTensor i = *cpu.Zeros(DType::kInt32, Shape{4});
  std::vector<DeviceTensor*> ptrs = {&f, &i};
  SLUICE_EXPECT_ERROR(ops->Add(std::span<DeviceTensor* const>(ptrs)), StatusCode::kInvalidArgument,
                      "tensor 1 is int32");
  ops->Cancel();
  EXPECT_TRUE(ops->Wait().ok());
  EXPECT_EQ(ops->bytes_reduced(), 0);
}

}  // namespace
}  // namespace sluice::nn
