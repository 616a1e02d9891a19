// libFuzzer target for checkpoint restore on hostile files: the object
// graph (TrackableObjectGraph bytes, which may reference missing nodes or
// form cycles), the values it points at, and the `checkpoint` state file.
//
// The first two bytes (little-endian) give the object graph's length; the
// rest is the state file's text. A bundle holding that graph and two variables is written
// to a scratch folder and restored into a small model-like tree (a layer
// whose weights are created after the restore, so deferred restore runs
// too). Every outcome must be an error Status or restored values: never a
// crash, a hang, or an allocation beyond what the input justifies.
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "sluice/nn/checkpoint.h"
#include "sluice/nn/internal/object_graph.h"
#include "sluice/nn/variable.h"
#include "sluice/records/tensor_bundle.h"

namespace {

using sluice::Tensor;
using sluice::nn::Trackable;

// A parent with a lazily created weight, as a Layer.
struct Lazy : Trackable {
  std::unique_ptr<sluice::nn::Variable> w;
  std::vector<Child> TrackableChildren() override {
    if (!w) return {};
    return {{"_kernel", w.get()}};
  }
  void Build() {
    w = std::make_unique<sluice::nn::Variable>(
        "w", sluice::DeviceTensor(sluice::Device::Cpu(),
                                  *Tensor::Zeros(sluice::DType::kFloat32, sluice::Shape{2, 2})));
    (void)RestoreDeferred();
  }
};
struct Root : Trackable {
  Lazy layer;
  sluice::nn::Variable bias{
      "b", sluice::DeviceTensor(sluice::Device::Cpu(),
                                *Tensor::Zeros(sluice::DType::kFloat32, sluice::Shape{2}))};
  std::vector<Child> TrackableChildren() override { return {{"layer", &layer}, {"bias", &bias}}; }
};

std::string Scratch() {
  static const std::string dir = [] {
    std::string d =
        std::filesystem::temp_directory_path() / ("checkpoint_fuzz." + std::to_string(getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const size_t graph_size = std::min<size_t>(data[0] | size_t{data[1]} << 8, size - 2);
  std::string_view graph(reinterpret_cast<const char*>(data + 2), graph_size);
  std::string_view state(reinterpret_cast<const char*>(data + 2 + graph_size),
                         size - 2 - graph_size);

  (void)sluice::nn_internal::DecodeObjectGraph(graph, "fuzz");
  (void)sluice::nn::ParseCheckpointState(state, Scratch(), "fuzz");

  const std::string prefix = Scratch() + "/ckpt";
  {
    auto writer = sluice::BundleWriter::Create(prefix);
    if (!writer.ok()) return 0;
    (void)writer->Add("_CHECKPOINTABLE_OBJECT_GRAPH", Tensor::StringScalar(graph));
    (void)writer->Add(
        "model/layer/_kernel/.ATTRIBUTES/VARIABLE_VALUE",
        *Tensor::FromVector<float>(std::vector<float>{1, 2, 3, 4}, sluice::Shape{2, 2}));
    (void)writer->Add("model/bias/.ATTRIBUTES/VARIABLE_VALUE",
                      *Tensor::FromVector<float>(std::vector<float>{5, 6}));
    if (!writer->Finish().ok()) return 0;
  }
  Root root;
  sluice::nn::Checkpoint ckpt;
  (void)ckpt.Track("model", &root);
  auto restored = ckpt.Restore(prefix);
  root.layer.Build();
  if (restored.ok()) {
    (void)restored->AssertConsumed();
    (void)restored->AssertExistingObjectsMatched();
  }
  return 0;
}
