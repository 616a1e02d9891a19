// A training job's checkpointing, to be killed: restores the latest
// checkpoint of DIR (if any), then saves through a CheckpointManager
// (max_to_keep 3) in a loop, each save holding a 2 MiB float32 variable
// filled with the step number and the int64 step itself, so a checkpoint
// whose data does not go with its index, or whose values are not one step's,
// shows. Used by checkpoint_kill_test.
//   checkpoint_kill_helper DIR SAVES [sync]     (SAVES 0: until killed)
#include <cstdio>
#include <cstdlib>
#include <string>

#include "sluice/nn/checkpoint.h"
#include "sluice/nn/variable.h"

namespace sn = sluice::nn;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: checkpoint_kill_helper DIR SAVES [sync]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const long saves = std::atol(argv[2]);
  sn::CheckpointOptions options;
  options.sync = argc > 3 && std::string(argv[3]) == "sync";

  sn::Variable weights("weights", sluice::DeviceTensor(sluice::Device::Cpu(),
                                                       *sluice::Tensor::Zeros(
                                                           sluice::DType::kFloat32, {512, 1024})));
  sn::Variable step(
      "step",
      sluice::DeviceTensor(sluice::Device::Cpu(), *sluice::Tensor::Scalar<int64_t>(0).Clone()),
      false);
  sn::Checkpoint ckpt;
  if (!ckpt.Track("weights", &weights).ok() || !ckpt.Track("step", &step).ok()) return 1;
  sn::CheckpointManager manager(&ckpt, dir, 3);
  if (manager.latest_checkpoint()) {
    sluice::Result<sn::RestoreResult> r = ckpt.Restore(*manager.latest_checkpoint());
    if (!r.ok()) {
      std::fprintf(stderr, "restore: %s\n", r.status().ToString().c_str());
      return 1;
    }
  }
  for (long i = 0; saves == 0 || i < saves; ++i) {
    sluice::Result<sluice::Tensor> s = step.Read();
    if (!s.ok()) return 1;
    const int64_t next = s->scalar<int64_t>() + 1;
    sluice::Tensor w = *sluice::Tensor::Zeros(sluice::DType::kFloat32, {512, 1024});
    for (float& x : w.flat<float>()) x = static_cast<float>(next);
    if (!weights.Assign(w).ok() || !step.Assign(sluice::Tensor::Scalar<int64_t>(next)).ok()) {
      return 1;
    }
    sluice::Result<std::string> saved = manager.Save({}, options);
    if (!saved.ok()) {
      std::fprintf(stderr, "save: %s\n", saved.status().ToString().c_str());
      return 1;
    }
    std::printf("saved %s\n", saved->c_str());
    std::fflush(stdout);
  }
  return 0;
}
