// CaptureNnStep: a custom training step (bench/gpu/mlp_step.h: a two-layer
// MLP, cross-entropy, SGD with momentum, written with Backend calls)
// captured once and replayed
// gives exactly the weights and losses of the same step run eagerly on the
// same batches; a wait inside the step fails the capture and leaves the
// backend usable.
#include <gtest/gtest.h>

#include <vector>

#include "../../bench/gpu/mlp_step.h"
#include "nn_backend_test_util.h"

namespace sluice::gpu::testing {
namespace {

using CaptureTest = NnBackendTest;
SLUICE_NN_BACKEND_TEST_SUITE(CaptureTest);

constexpr int64_t kBatch = 32, kIn = 8, kHidden = 16, kClasses = 3;

using mlp_step::Mlp;

Mlp MakeMlp(nn::Backend* b) {
  return mlp_step::MakeMlp(*b, kBatch, kIn, kHidden, kClasses, 1).value();
}
Status Step(nn::Backend* b, Mlp& m) { return mlp_step::Step(*b, m); }

Status LoadBatch(nn::Backend* b, Mlp& m, int i) {
  SLUICE_RETURN_IF_ERROR(b->CopyFromHost(RandomHost(Shape{kBatch, kIn}, 100 + i), &m.x));
  std::vector<int64_t> labels(kBatch);
  for (int64_t r = 0; r < kBatch; ++r) labels[r] = (r * 7 + i) % kClasses;
  return b->CopyFromHost(Tensor::FromVector<int64_t>(labels).value(), &m.y);
}

TEST_P(CaptureTest, ReplaysEqualEagerSteps) {
  nn::Backend* b = gpu();
  {
    // One eager step first, as a real loop would: library handles and
    // plans are made outside the capture.
    Mlp warm = MakeMlp(b);
    SLUICE_ASSERT_OK(LoadBatch(b, warm, 0));
    SLUICE_ASSERT_OK(Step(b, warm));
  }
  Mlp captured = MakeMlp(b);
  const std::vector<float> before = GpuValues(captured.w1);
  SLUICE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<CapturedNnStep> step,
                              CaptureNnStep(*b, [&] { return Step(b, captured); }));
  EXPECT_GE(step->num_nodes(), 16);  // one per call at least
  EXPECT_EQ(GpuValues(captured.w1), before) << "capturing ran the step";
  // Made after the capture: its tensors must not land in the blocks the
  // graph writes (the step's intermediates, which the graph keeps).
  Mlp eager = MakeMlp(b);

  for (int i = 1; i <= 5; ++i) {
    SLUICE_ASSERT_OK(LoadBatch(b, eager, i));
    SLUICE_ASSERT_OK(Step(b, eager));
    SLUICE_ASSERT_OK(LoadBatch(b, captured, i));
    SLUICE_ASSERT_OK(step->Replay());
    SLUICE_ASSERT_OK_AND_ASSIGN(double le, b->Sum(eager.loss));
    SLUICE_ASSERT_OK_AND_ASSIGN(double lc, b->Sum(captured.loss));
    EXPECT_EQ(lc, le) << "step " << i;
  }
  for (auto [c, e] : {std::pair{&captured.w1, &eager.w1},
                      {&captured.b1, &eager.b1},
                      {&captured.w2, &eager.w2},
                      {&captured.b2, &eager.b2}}) {
    EXPECT_EQ(GpuValues(*c), GpuValues(*e));
  }
  EXPECT_NE(GpuValues(captured.w1), before);
}

TEST_P(CaptureTest, AWaitInsideTheStepFailsTheCaptureOnly) {
  nn::Backend* b = gpu();
  SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor t, b->Zeros(DType::kFloat32, Shape{4}));
  Result<std::unique_ptr<CapturedNnStep>> step = CaptureNnStep(*b, [&]() -> Status {
    SLUICE_RETURN_IF_ERROR(b->Fill(1.0f, &t));
    return b->Sum(t).status();
  });
  EXPECT_EQ(step.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(step.status().message().find("read results after Replay"), std::string::npos)
      << step.status();
  // The backend is not left capturing, and the captured Fill never ran.
  SLUICE_ASSERT_OK_AND_ASSIGN(double sum, b->Sum(t));
  EXPECT_EQ(sum, 0.0);
  SLUICE_ASSERT_OK(b->Fill(2.0f, &t));
  SLUICE_ASSERT_OK_AND_ASSIGN(sum, b->Sum(t));
  EXPECT_EQ(sum, 8.0);
}

// The counters a recorded step reads: Adam's step (AdamStep::step_counter)
// and Dropout's mask stream (DropoutMaskFromCounter). AddToCounter moves
// them in stream order, replays follow them, and both backends reject a
// counter that is not one int64.
TEST_P(CaptureTest, RecordedStepsFollowTheirCounters) {
  nn::Backend* b = gpu();
  const Tensor grad_host = RandomHost(Shape{64}, 7);
  Pair var = BothRandom(Shape{64}, 8), m = Both(*Tensor::Zeros(DType::kFloat32, Shape{64}));
  Pair v = Both(*Tensor::Zeros(DType::kFloat32, Shape{64}));
  Pair grad = Both(grad_host);
  SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor counter, b->Zeros(DType::kInt64, Shape{}));
  nn::AdamStep with_counter{.learning_rate = 0.01f, .step_counter = &counter};
  SLUICE_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<CapturedNnStep> step, CaptureNnStep(*b, [&]() -> Status {
        SLUICE_RETURN_IF_ERROR(b->AddToCounter(1, &counter));
        return b->AdamUpdate(grad.gpu, with_counter, &var.gpu, &m.gpu, &v.gpu);
      }));
  for (int64_t t = 1; t <= 4; ++t) {
    SLUICE_ASSERT_OK(step->Replay());
    SLUICE_ASSERT_OK(
        cpu()->AdamUpdate(grad.cpu, {.learning_rate = 0.01f, .step = t}, &var.cpu, &m.cpu, &v.cpu));
  }
  ExpectAgree(var, kElem, "var after 4 replayed Adam steps");
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor t, b->ToHost(counter));
  EXPECT_EQ(t.flat<int64_t>()[0], 4);

  // Dropout's mask with the stream from the counter: each replay draws the
  // mask DropoutMask gives for the counter's value then.
  SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor calls, b->Zeros(DType::kInt64, Shape{}));
  SLUICE_ASSERT_OK(b->AddToCounter(5, &calls));
  Pair mask = BothAlloc(Shape{101});
  SLUICE_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<CapturedNnStep> draw, CaptureNnStep(*b, [&]() -> Status {
        SLUICE_RETURN_IF_ERROR(b->DropoutMaskFromCounter(0.4f, 77, calls, &mask.gpu));
        return b->AddToCounter(1, &calls);
      }));
  for (uint64_t stream = 5; stream < 8; ++stream) {
    SLUICE_ASSERT_OK(draw->Replay());
    SLUICE_ASSERT_OK(cpu()->DropoutMask(0.4f, 77, stream, &mask.cpu));
    EXPECT_EQ(GpuValues(mask.gpu), CpuValues(mask.cpu)) << "stream " << stream;
  }
  for (nn::Backend* any : {gpu(), cpu()}) {
    SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor f, any->Zeros(DType::kFloat32, Shape{}));
    EXPECT_EQ(any->AddToCounter(1, &f).code(), StatusCode::kInvalidArgument);
    SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor two, any->Zeros(DType::kInt64, Shape{2}));
    EXPECT_EQ(any->AddToCounter(1, &two).code(), StatusCode::kInvalidArgument);
  }
}

TEST(CaptureNnStepTest, OnlyTheGpuBackendCaptures) {
  nn::Backend* cpu = nn::GetBackend(Device::Cpu()).value();
  EXPECT_EQ(CaptureNnStep(*cpu, [] { return Status::OK(); }).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice::gpu::testing
