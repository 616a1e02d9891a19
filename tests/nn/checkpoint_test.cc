#include "sluice/nn/checkpoint.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "sluice/core/device.h"
#include "sluice/core/device_tensor.h"
#include "sluice/core/file.h"
#include "sluice/core/filesystem.h"
#include "sluice/nn/internal/checkpoint_graph.h"
#include "sluice/nn/internal/object_graph.h"
#include "sluice/nn/variable.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/pipeline/iterator.h"
#include "sluice/records/tensor_bundle.h"
#include "test_util.h"

namespace sluice::nn {
namespace {

namespace fs = std::filesystem;
using ::sluice::testing::ReadFileOrDie;
using ::sluice::testing::ScratchDir;
using ::sluice::testing::TestDataPath;
using ::sluice::testing::WriteFileOrDie;

std::unique_ptr<Variable> FloatVar(std::string name, const Shape& shape, float start) {
  Tensor t = *Tensor::Zeros(DType::kFloat32, shape);
  float v = start;
  for (float& x : t.flat<float>()) x = v++;
  return std::make_unique<Variable>(std::move(name), DeviceTensor(Device::Cpu(), std::move(t)));
}

std::unique_ptr<Variable> Int64Var(std::string name, int64_t value) {
  return std::make_unique<Variable>(
      std::move(name), DeviceTensor(Device::Cpu(), *Tensor::Scalar<int64_t>(value).Clone()), false);
}

std::vector<float> Values(const Variable& v) {
  Result<Tensor> t = v.Read();
  EXPECT_TRUE(t.ok()) << t.status();
  auto f = t->flat<float>();
  return {f.begin(), f.end()};
}

void Fill(Variable& v, float value) {
  Tensor t = *Tensor::Zeros(DType::kFloat32, v.shape());
  for (float& x : t.flat<float>()) x = value;
  ASSERT_TRUE(v.Assign(t).ok());
}

// A generic node: named children in order.
class Node : public Trackable {
 public:
  void Add(std::string name, Trackable* t) { children_.push_back({std::move(name), t}); }
  std::vector<Child> TrackableChildren() override { return children_; }

 private:
  std::vector<Child> children_;
};

// A dense layer that builds its weights on demand, as Layer does.
class LazyDense : public Trackable {
 public:
  LazyDense(int in, int out, bool build_now) : in_(in), out_(out) {
    if (build_now) {
      EXPECT_TRUE(Build().ok());
    }
  }
  Status Build() {
    kernel = FloatVar("dense/kernel", {in_, out_}, 1);
    bias = FloatVar("dense/bias", {out_}, 100);
    return RestoreDeferred();
  }
  std::vector<Child> TrackableChildren() override {
    if (!kernel) return {};
    return {{"kernel", kernel.get()}, {"bias", bias.get()}};
  }
  std::unique_ptr<Variable> kernel, bias;

 private:
  int in_, out_;
};

// An optimizer with an iteration counter and one slot "m" per variable.
class SlotOptimizer : public Trackable {
 public:
  void Watch(Variable* v) {
    vars_.push_back(v);
    slots_.push_back(FloatVar(v->name() + "/m", v->shape(), 1000));
  }
  Status BuildLater(Variable* v) {
    Watch(v);
    return RestoreDeferred();
  }
  std::vector<Child> TrackableChildren() override { return {{"iter", iterations.get()}}; }
  std::vector<Slot> TrackableSlots() override {
    std::vector<Slot> out;
    for (size_t i = 0; i < vars_.size(); ++i) out.push_back({vars_[i], "m", slots_[i].get()});
    return out;
  }
  std::unique_ptr<Variable> iterations = Int64Var("iter", 5);
  std::vector<Variable*> vars_;
  std::vector<std::unique_ptr<Variable>> slots_;
};

// model{dense, dense_1} + optimizer with slots.
struct Toy {
  Toy(bool build = true) : dense(4, 3, build), dense_1(3, 2, build) {
    model.Add("dense", &dense);
    model.Add("dense_1", &dense_1);
    if (build) {
      for (Variable* v :
           {dense.kernel.get(), dense.bias.get(), dense_1.kernel.get(), dense_1.bias.get()}) {
        opt.Watch(v);
      }
    }
  }
  Status TrackAll(Checkpoint* ckpt) {
    SLUICE_RETURN_IF_ERROR(ckpt->Track("optimizer", &opt));
    return ckpt->Track("model", &model);
  }
  LazyDense dense, dense_1;
  Node model;
  SlotOptimizer opt;
};

constexpr char kKernelKey[] = "model/dense/kernel/.ATTRIBUTES/VARIABLE_VALUE";
constexpr char kSlotKey[] =
    "model/dense/kernel/.OPTIMIZER_SLOT/optimizer/m/.ATTRIBUTES/VARIABLE_VALUE";

TEST(CheckpointTest, RoundTrip) {
  ScratchDir dir;
  Toy a;
  Checkpoint ca;
  ASSERT_TRUE(a.TrackAll(&ca).ok());
  Result<std::string> path = ca.Save(dir.file("ckpt"));
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(*path, dir.file("ckpt-1"));

  Toy b;
  Fill(*b.dense.kernel, -1);
  Fill(*b.opt.slots_[0], -1);
  ASSERT_TRUE(b.opt.iterations->Assign(Tensor::Scalar<int64_t>(0)).ok());
  Checkpoint cb;
  ASSERT_TRUE(b.TrackAll(&cb).ok());
  Result<RestoreResult> r = cb.Restore(*path);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->AssertConsumed().ok()) << r->AssertConsumed();
  EXPECT_TRUE(r->AssertNontrivialMatch().ok());
  EXPECT_EQ(Values(*b.dense.kernel), Values(*a.dense.kernel));
  EXPECT_EQ(Values(*b.dense_1.bias), Values(*a.dense_1.bias));
  EXPECT_EQ(Values(*b.opt.slots_[0]), Values(*a.opt.slots_[0]));
  EXPECT_EQ(b.opt.iterations->Read()->scalar<int64_t>(), 5);
  EXPECT_EQ(cb.save_counter(), 1);
  EXPECT_TRUE(r->unused_keys().empty());
  EXPECT_EQ(r->restored_keys().size(), 10u);  // 4 weights, 4 slots, iter, counter
}

TEST(CheckpointTest, KeysAndObjectGraph) {
  ScratchDir dir;
  Toy a;
  Checkpoint ca;
  ASSERT_TRUE(a.TrackAll(&ca).ok());
  ASSERT_TRUE(ca.Write(dir.file("w")).ok());
  Result<BundleReader> reader = BundleReader::Open(dir.file("w"));
  ASSERT_TRUE(reader.ok()) << reader.status();
  const std::vector<std::string> keys = reader->Keys();
  const std::vector<std::string> expected = {
      "_CHECKPOINTABLE_OBJECT_GRAPH",
      "model/dense/bias/.ATTRIBUTES/VARIABLE_VALUE",
      "model/dense/bias/.OPTIMIZER_SLOT/optimizer/m/.ATTRIBUTES/VARIABLE_VALUE",
      kKernelKey,
      kSlotKey,
      "model/dense_1/bias/.ATTRIBUTES/VARIABLE_VALUE",
      "model/dense_1/bias/.OPTIMIZER_SLOT/optimizer/m/.ATTRIBUTES/VARIABLE_VALUE",
      "model/dense_1/kernel/.ATTRIBUTES/VARIABLE_VALUE",
      "model/dense_1/kernel/.OPTIMIZER_SLOT/optimizer/m/.ATTRIBUTES/VARIABLE_VALUE",
      "optimizer/iter/.ATTRIBUTES/VARIABLE_VALUE",
      "save_counter/.ATTRIBUTES/VARIABLE_VALUE",
  };
  EXPECT_EQ(keys, expected);
  EXPECT_EQ(reader->Lookup("save_counter/.ATTRIBUTES/VARIABLE_VALUE")->scalar<int64_t>(), 0);
  Result<Tensor> bytes = reader->Lookup("_CHECKPOINTABLE_OBJECT_GRAPH");
  ASSERT_TRUE(bytes.ok());
  Result<nn_internal::ObjectGraph> g =
      nn_internal::DecodeObjectGraph(bytes->scalar<std::string_view>(), "test");
  ASSERT_TRUE(g.ok()) << g.status();
  const nn_internal::ObjectGraph::Node& root = g->nodes[0];
  ASSERT_EQ(root.children.size(), 3u);  // sorted by name, then save_counter
  EXPECT_EQ(root.children[0].local_name, "model");
  EXPECT_EQ(root.children[1].local_name, "optimizer");
  EXPECT_EQ(root.children[2].local_name, "save_counter");
  const nn_internal::ObjectGraph::Node& opt = g->nodes[root.children[1].node_id];
  ASSERT_EQ(opt.slot_variables.size(), 4u);
  EXPECT_EQ(opt.slot_variables[0].slot_name, "m");
  const auto& slot_node = g->nodes[opt.slot_variables[0].slot_variable_node_id];
  ASSERT_EQ(slot_node.attributes.size(), 1u);
  EXPECT_EQ(slot_node.attributes[0].checkpoint_key, kSlotKey);
  EXPECT_EQ(slot_node.attributes[0].full_name, "dense/kernel/m");
  EXPECT_EQ(root.has_checkpoint_values, std::optional<bool>(true));
  // Encoding is stable.
  EXPECT_EQ(nn_internal::EncodeObjectGraph(*g), std::string(bytes->scalar<std::string_view>()));
}

TEST(CheckpointTest, EscapesNames) {
  EXPECT_EQ(nn_internal::EscapeLocalName("a.b/c"), "a..b.Sc");
  EXPECT_EQ(nn_internal::UnescapeLocalName("a..b.Sc"), "a.b/c");
}

TEST(CheckpointTest, NumberingAndStateFile) {
  ScratchDir dir;
  Toy a;
  Checkpoint c;
  ASSERT_TRUE(a.TrackAll(&c).ok());
  EXPECT_EQ(*c.Save(dir.file("ckpt")), dir.file("ckpt-1"));
  EXPECT_EQ(*c.Save(dir.file("ckpt")), dir.file("ckpt-2"));
  EXPECT_EQ(c.save_counter(), 2);
  EXPECT_EQ(ReadFileOrDie(dir.file("checkpoint")),
            "model_checkpoint_path: \"ckpt-2\"\nall_model_checkpoint_paths: \"ckpt-2\"\n");
  EXPECT_EQ(LatestCheckpoint(dir.path()), dir.file("ckpt-2"));
  ASSERT_TRUE(c.Write(dir.file("other")).ok());  // no counter, no state file
  EXPECT_EQ(c.save_counter(), 2);
  EXPECT_EQ(LatestCheckpoint(dir.path()), dir.file("ckpt-2"));
  // A restored counter continues the numbering.
  Toy b;
  Checkpoint c2;
  ASSERT_TRUE(b.TrackAll(&c2).ok());
  ASSERT_TRUE(c2.Restore(dir.file("ckpt-1")).ok());
  EXPECT_EQ(*c2.Save(dir.file("ckpt")), dir.file("ckpt-2"));
  // No state file, or one naming a missing checkpoint: none.
  EXPECT_EQ(LatestCheckpoint(dir.file("nowhere")), std::nullopt);
  WriteFileOrDie(dir.file("checkpoint"), "model_checkpoint_path: \"gone-7\"\n");
  EXPECT_EQ(LatestCheckpoint(dir.path()), std::nullopt);
  WriteFileOrDie(dir.file("checkpoint"), "model_checkpoint_path: \"unterminated\n");
  EXPECT_EQ(ReadCheckpointState(dir.path()).status().code(), StatusCode::kDataLoss);
}

TEST(CheckpointTest, StateFileTextFormat) {
  ScratchDir dir;
  CheckpointState s;
  s.model_checkpoint_path = dir.file("a\"b\n\xc3\xa9-3");
  s.all_model_checkpoint_paths = {"/elsewhere/x-1", s.model_checkpoint_path};
  s.all_model_checkpoint_timestamps = {1795256618.4677548, 1795256619.0};
  s.last_preserved_timestamp = 1795256617.4523034;
  ASSERT_TRUE(WriteCheckpointState(dir.path(), s).ok());
  EXPECT_EQ(ReadFileOrDie(dir.file("checkpoint")),
            "model_checkpoint_path: \"a\\\"b\\n\\303\\251-3\"\n"
            "all_model_checkpoint_paths: \"../../elsewhere/x-1\"\n"
            "all_model_checkpoint_paths: \"a\\\"b\\n\\303\\251-3\"\n"
            "all_model_checkpoint_timestamps: 1795256618.4677548\n"
            "all_model_checkpoint_timestamps: 1795256619.0\n"
            "last_preserved_timestamp: 1795256617.4523034\n");
  Result<CheckpointState> back = ReadCheckpointState(dir.path());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->model_checkpoint_path, s.model_checkpoint_path);
  // As os.path.relpath / os.path.join do.
  EXPECT_EQ(
      back->all_model_checkpoint_paths,
      (std::vector<std::string>{dir.path() + "/../../elsewhere/x-1", s.model_checkpoint_path}));
  EXPECT_EQ(back->all_model_checkpoint_timestamps, s.all_model_checkpoint_timestamps);
  EXPECT_EQ(back->last_preserved_timestamp, s.last_preserved_timestamp);
}

TEST(CheckpointTest, ManagerKeepsNewestAndPicksUpDirectory) {
  ScratchDir dir;
  const std::string d = dir.file("run");
  Toy a;
  Checkpoint c;
  ASSERT_TRUE(a.TrackAll(&c).ok());
  {
    CheckpointManager m(&c, d, 2);
    EXPECT_EQ(m.latest_checkpoint(), std::nullopt);
    for (int i = 1; i <= 3; ++i) EXPECT_EQ(*m.Save(), d + "/ckpt-" + std::to_string(i));
    EXPECT_EQ(m.checkpoints(), (std::vector<std::string>{d + "/ckpt-2", d + "/ckpt-3"}));
    EXPECT_FALSE(fs::exists(d + "/ckpt-1.index"));
    EXPECT_FALSE(fs::exists(d + "/ckpt-1.data-00000-of-00001"));
    EXPECT_TRUE(fs::exists(d + "/ckpt-2.index"));
    EXPECT_EQ(m.latest_checkpoint(), d + "/ckpt-3");
    EXPECT_EQ(LatestCheckpoint(d), d + "/ckpt-3");
    const std::string text = ReadFileOrDie(d + "/checkpoint");
    EXPECT_TRUE(
        text.starts_with("model_checkpoint_path: \"ckpt-3\"\n"
                         "all_model_checkpoint_paths: \"ckpt-2\"\n"
                         "all_model_checkpoint_paths: \"ckpt-3\"\n"
                         "all_model_checkpoint_timestamps: "))
        << text;
    EXPECT_NE(text.find("last_preserved_timestamp: "), std::string::npos) << text;
  }
  // A new manager picks up ckpt-2 and ckpt-3; its next save deletes ckpt-2.
  CheckpointManager m2(&c, d, 2);
  EXPECT_EQ(m2.checkpoints(), (std::vector<std::string>{d + "/ckpt-2", d + "/ckpt-3"}));
  EXPECT_EQ(m2.latest_checkpoint(), d + "/ckpt-3");
  EXPECT_EQ(*m2.Save(), d + "/ckpt-4");
  EXPECT_FALSE(fs::exists(d + "/ckpt-2.index"));
  EXPECT_EQ(*m2.Save(10), d + "/ckpt-10");
  EXPECT_EQ(m2.checkpoints(), (std::vector<std::string>{d + "/ckpt-4", d + "/ckpt-10"}));
  EXPECT_EQ(c.save_counter(), 5);
}

// CheckpointManager on an object store: run with AWS_ENDPOINT_URL_S3 set by
// tests/with_s3_server.sh (ctest nn.checkpoint_on_store, bucket "ckpt");
// skipped elsewhere.
TEST(CheckpointOnStoreTest, ManagerSavesRestoresAndDeletesOnS3) {
  if (std::getenv("AWS_ENDPOINT_URL_S3") == nullptr || !RemoteFileSystemsAvailable()) {
    GTEST_SKIP() << "needs an S3 server (ctest -R nn.checkpoint_on_store)";
  }
  const std::string d = "s3://ckpt/run";
  Toy a;
  Fill(*a.dense.kernel, 3);
  Checkpoint c;
  ASSERT_TRUE(a.TrackAll(&c).ok());
  {
    CheckpointManager m(&c, d, 2);
    for (int i = 1; i <= 3; ++i) {
      Result<std::string> saved = m.Save();
      ASSERT_TRUE(saved.ok()) << saved.status();
      EXPECT_EQ(*saved, d + "/ckpt-" + std::to_string(i));
    }
    EXPECT_FALSE(*PathExists(d + "/ckpt-1.index"));
    EXPECT_FALSE(*PathExists(d + "/ckpt-1.data-00000-of-00001"));
    EXPECT_TRUE(*PathExists(d + "/ckpt-3.index"));
    EXPECT_EQ(LatestCheckpoint(d), d + "/ckpt-3");
    Result<std::string> text = ReadFileToString(d + "/checkpoint");
    ASSERT_TRUE(text.ok()) << text.status();
    EXPECT_TRUE(text->starts_with("model_checkpoint_path: \"ckpt-3\"\n")) << *text;
  }
  CheckpointManager m2(&c, d, 2);
  EXPECT_EQ(m2.checkpoints(), (std::vector<std::string>{d + "/ckpt-2", d + "/ckpt-3"}));
  Toy b;
  Fill(*b.dense.kernel, -1);
  Checkpoint cb;
  ASSERT_TRUE(b.TrackAll(&cb).ok());
  Result<RestoreResult> r = cb.Restore(*LatestCheckpoint(d));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Values(*b.dense.kernel), Values(*a.dense.kernel));
}

TEST(CheckpointTest, DeferredRestore) {
  ScratchDir dir;
  Toy a;
  Fill(*a.dense.kernel, 7);
  Checkpoint ca;
  ASSERT_TRUE(a.TrackAll(&ca).ok());
  const std::string path = *ca.Save(dir.file("ckpt"));

  Toy b(/*build=*/false);  // layers without weights yet
  Checkpoint cb;
  ASSERT_TRUE(b.TrackAll(&cb).ok());
  Result<RestoreResult> r = cb.Restore(path);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->AssertConsumed().ok());
  EXPECT_TRUE(r->AssertExistingObjectsMatched().ok());
  ASSERT_TRUE(b.dense.Build().ok());  // calls RestoreDeferred()
  EXPECT_EQ(Values(*b.dense.kernel), Values(*a.dense.kernel));
  EXPECT_EQ(Values(*b.dense.bias), Values(*a.dense.bias));
  // Slots created later are restored when the optimizer asks.
  ASSERT_TRUE(b.opt.BuildLater(b.dense.kernel.get()).ok());
  EXPECT_EQ(Values(*b.opt.slots_[0]), Values(*a.opt.slots_[0]));
  // Values applied once are not applied again by a later RestoreDeferred().
  Fill(*b.dense.kernel, -3);
  ASSERT_TRUE(b.dense_1.Build().ok());
  EXPECT_EQ(Values(*b.dense.kernel), std::vector<float>(12, -3));
  EXPECT_EQ(Values(*b.dense_1.kernel), Values(*a.dense_1.kernel));
  ASSERT_TRUE(b.opt.BuildLater(b.dense.bias.get()).ok());
  ASSERT_TRUE(b.opt.BuildLater(b.dense_1.kernel.get()).ok());
  ASSERT_TRUE(b.opt.BuildLater(b.dense_1.bias.get()).ok());
  EXPECT_TRUE(r->AssertConsumed().ok()) << r->AssertConsumed();
}

TEST(CheckpointTest, TrackAfterRestoreIsDeferred) {
  ScratchDir dir;
  Toy a;
  Checkpoint ca;
  ASSERT_TRUE(a.TrackAll(&ca).ok());
  const std::string path = *ca.Save(dir.file("ckpt"));
  Toy b;
  Fill(*b.dense.kernel, 0);
  Checkpoint cb;
  Result<RestoreResult> r = cb.Restore(path);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(cb.save_counter(), 1);
  ASSERT_TRUE(cb.Track("model", &b.model).ok());
  EXPECT_EQ(Values(*b.dense.kernel), Values(*a.dense.kernel));
}

TEST(CheckpointTest, IteratorStateRoundTrip) {
  ScratchDir dir;
  Result<Iterator> it = Dataset::range(20).iterator();
  ASSERT_TRUE(it.ok()) << it.status();
  for (int i = 0; i < 7; ++i) ASSERT_TRUE(it->next().ok());
  Checkpoint c;
  ASSERT_TRUE(c.Track("iterator", &*it).ok());
  const std::string path = *c.Save(dir.file("ckpt"));
  Result<BundleReader> reader = BundleReader::Open(path);
  ASSERT_TRUE(reader.ok());
  Result<Tensor> state = reader->Lookup("iterator/.ATTRIBUTES/ITERATOR_STATE");
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->dtype(), DType::kString);
  EXPECT_EQ(state->shape().rank(), 0);

  Result<Iterator> fresh = Dataset::range(20).iterator();
  ASSERT_TRUE(fresh.ok());
  Checkpoint c2;
  ASSERT_TRUE(c2.Track("iterator", &*fresh).ok());
  Result<RestoreResult> r = c2.Restore(path);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->AssertConsumed().ok());
  Result<std::optional<Element>> next = fresh->next();
  ASSERT_TRUE(next.ok() && next->has_value());
  EXPECT_EQ((**next)[0].scalar<int64_t>(), 7);
}

TEST(CheckpointTest, ShapeMismatchNamesKeyAndShapesAndAppliesNothing) {
  ScratchDir dir;
  Toy a;
  Checkpoint ca;
  ASSERT_TRUE(a.TrackAll(&ca).ok());
  const std::string path = *ca.Save(dir.file("ckpt"));
  Toy b;
  b.dense.kernel = FloatVar("dense/kernel", {3, 4}, 0);  // transposed
  Fill(*b.dense.bias, 42);
  Checkpoint cb;
  ASSERT_TRUE(b.TrackAll(&cb).ok());
  Result<RestoreResult> r = cb.Restore(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  const std::string msg(r.status().message());
  EXPECT_NE(msg.find(kKernelKey), std::string::npos) << msg;
  EXPECT_NE(msg.find("[4,3]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[3,4]"), std::string::npos) << msg;
  EXPECT_EQ(Values(*b.dense.bias), std::vector<float>(3, 42));  // nothing applied
}

TEST(CheckpointTest, CorruptFilesAreDataLossNamingTheFile) {
  ScratchDir dir;
  Toy a;
  Checkpoint ca;
  ASSERT_TRUE(a.TrackAll(&ca).ok());
  const std::string path = *ca.Save(dir.file("ckpt"));
  const std::string data_file = path + ".data-00000-of-00001";
  const std::string data = ReadFileOrDie(data_file);
  {
    std::string flipped = data;
    flipped[5] ^= 0x40;
    WriteFileOrDie(data_file, flipped);
    Toy b;
    Checkpoint cb;
    ASSERT_TRUE(b.TrackAll(&cb).ok());
    Result<RestoreResult> r = cb.Restore(path);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << r.status();
    EXPECT_NE(r.status().message().find("ckpt-1"), std::string::npos) << r.status();
  }
  {
    WriteFileOrDie(data_file, data.substr(0, data.size() / 2));
    Toy b;
    Checkpoint cb;
    ASSERT_TRUE(b.TrackAll(&cb).ok());
    Result<RestoreResult> r = cb.Restore(path);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << r.status();
  }
  {
    const std::string index = ReadFileOrDie(path + ".index");
    WriteFileOrDie(path + ".index", index.substr(0, index.size() - 9));
    Checkpoint cb;
    Result<RestoreResult> r = cb.Restore(path);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << r.status();
    EXPECT_NE(r.status().message().find("ckpt-1.index"), std::string::npos) << r.status();
  }
  Checkpoint cb;
  EXPECT_EQ(cb.Restore(dir.file("missing")).status().code(), StatusCode::kNotFound);
}

TEST(CheckpointTest, HostileObjectGraphBytes) {
  Toy a;
  nn_internal::RootTrackable root({{"model", &a.model}, {"optimizer", &a.opt}});
  Result<nn_internal::GraphWalk> walk = nn_internal::WalkGraph(&root);
  ASSERT_TRUE(walk.ok());
  const std::string good = nn_internal::EncodeObjectGraph(walk->graph);
  for (size_t n = 0; n < good.size(); ++n) {
    (void)nn_internal::DecodeObjectGraph(std::string_view(good).substr(0, n), "t");
    std::string bad = good;
    bad[n] = static_cast<char>(bad[n] ^ 0xff);
    (void)nn_internal::DecodeObjectGraph(bad, "t");
  }
  nn_internal::ObjectGraph g;
  g.nodes.resize(2);
  g.nodes[0].children.push_back({7, "x"});
  Result<nn_internal::ObjectGraph> r =
      nn_internal::DecodeObjectGraph(nn_internal::EncodeObjectGraph(g), "t");
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(nn_internal::DecodeObjectGraph("\x0a\xff\xff\xff\xff\x0f", "t").status().code(),
            StatusCode::kDataLoss);
}

// An attribute whose save() fails, to simulate a crash mid-save.
class Failing : public Trackable {
 public:
  bool fail = false;
  std::vector<Attribute> TrackableAttributes() override {
    return {Attribute{"VARIABLE_VALUE",
                      [this]() -> Result<Tensor> {
                        if (fail) return Status::Unavailable("device lost");
                        return Tensor::Scalar<float>(1);
                      },
                      [](const Tensor&) { return Status::OK(); }}};
  }
};

TEST(CheckpointTest, FailedSaveKeepsPreviousCheckpoint) {
  ScratchDir dir;
  Toy a;
  Failing f;
  Checkpoint c;
  ASSERT_TRUE(a.TrackAll(&c).ok());
  ASSERT_TRUE(c.Track("zzz", &f).ok());
  const std::string first = *c.Save(dir.file("ckpt"));
  const std::string state = ReadFileOrDie(dir.file("checkpoint"));
  const std::string index = ReadFileOrDie(first + ".index");
  f.fail = true;
  Result<std::string> second = c.Save(dir.file("ckpt"));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(second.status().message().find("zzz/.ATTRIBUTES/VARIABLE_VALUE"), std::string::npos);
  EXPECT_EQ(c.save_counter(), 1);
  EXPECT_EQ(ReadFileOrDie(dir.file("checkpoint")), state);
  EXPECT_FALSE(fs::exists(dir.file("ckpt-2.index")));
  // Only the first checkpoint's files and the state file are there.
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir.path())) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names,
            (std::vector<std::string>{"checkpoint", "ckpt-1.data-00000-of-00001", "ckpt-1.index"}));
  // Overwriting the same prefix with Write() fails too and keeps it intact.
  EXPECT_FALSE(c.Write(first).ok());
  EXPECT_EQ(ReadFileOrDie(first + ".index"), index);
  // An unwritable folder (its parent is a file).
  f.fail = false;
  WriteFileOrDie(dir.file("file"), "x");
  EXPECT_FALSE(c.Save(dir.file("file/sub/ckpt")).ok());
  EXPECT_EQ(c.save_counter(), 1);
  Toy b;
  Checkpoint cb;
  ASSERT_TRUE(b.TrackAll(&cb).ok());
  ASSERT_TRUE(cb.Restore(*LatestCheckpoint(dir.path())).ok());
  EXPECT_EQ(Values(*b.dense.kernel), Values(*a.dense.kernel));
}

TEST(CheckpointTest, WithoutObjectGraphMatchesByKeys) {
  ScratchDir dir;
  Toy a;
  Fill(*a.dense.kernel, 9);
  Checkpoint ca;
  ASSERT_TRUE(a.TrackAll(&ca).ok());
  const std::string path = *ca.Save(dir.file("ckpt"));
  // Copy every value but the graph into a new bundle.
  Result<BundleReader> reader = BundleReader::Open(path);
  ASSERT_TRUE(reader.ok());
  Result<BundleWriter> writer = BundleWriter::Create(dir.file("names"));
  ASSERT_TRUE(writer.ok());
  for (const std::string& key : reader->Keys()) {
    if (key != "_CHECKPOINTABLE_OBJECT_GRAPH") {
      ASSERT_TRUE(writer->Add(key, *reader->Lookup(key)).ok());
    }
  }
  ASSERT_TRUE(writer->Finish().ok());
  Toy b;
  Checkpoint cb;
  ASSERT_TRUE(b.TrackAll(&cb).ok());
  Result<RestoreResult> r = cb.Restore(dir.file("names"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->AssertConsumed().ok()) << r->AssertConsumed();
  EXPECT_EQ(Values(*b.dense.kernel), std::vector<float>(12, 9));
  EXPECT_EQ(Values(*b.opt.slots_[3]), Values(*a.opt.slots_[3]));
}

// --- The golden Keras checkpoint (tests/interop/make_keras_checkpoint.py) ----

struct Expected {
  std::string dtype;
  std::vector<int64_t> dims;
  std::vector<double> values;
};

std::map<std::string, Expected> ReadExpected(const std::string& path) {
  std::map<std::string, Expected> out;
  std::istringstream in(ReadFileOrDie(path));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream l(line);
    std::string key, dims;
    Expected e;
    l >> key >> e.dtype >> dims;
    if (dims != "scalar") {
      std::istringstream d(dims);
      std::string part;
      while (std::getline(d, part, ',')) e.dims.push_back(std::stoll(part));
    }
    double v;
    while (l >> v) e.values.push_back(v);
    out[key] = e;
  }
  return out;
}

// Keras 3's structure for Sequential([Input(4), Dense(3), Dense(2)]) with
// Adam, hand-built (see docs/checkpoint.md).
struct KerasMirror {
  KerasMirror() {
    k0 = FloatVar("dense/kernel", {4, 3}, 0);
    b0 = FloatVar("dense/bias", {3}, 0);
    k1 = FloatVar("dense_1/kernel", {3, 2}, 0);
    b1 = FloatVar("dense_1/bias", {2}, 0);
    dense0.Add("_kernel", k0.get());
    dense0.Add("bias", b0.get());
    dense1.Add("_kernel", k1.get());
    dense1.Add("bias", b1.get());
    operations.Add("0", &input_layer);
    operations.Add("1", &dense0);
    operations.Add("2", &dense1);
    functional.Add("_operations", &operations);
    sequential.Add("_functional", &functional);
    iterations = Int64Var("iterations", 0);
    learning_rate = std::make_unique<Variable>(
        "learning_rate", DeviceTensor(Device::Cpu(), *Tensor::Scalar<float>(0).Clone()));
    variables.Add("0", iterations.get());
    variables.Add("1", learning_rate.get());
    Variable* weights[] = {k0.get(), b0.get(), k1.get(), b1.get()};
    for (int i = 0; i < 4; ++i) {
      m.push_back(FloatVar("m", weights[i]->shape(), 0));
      v.push_back(FloatVar("v", weights[i]->shape(), 0));
      variables.Add(std::to_string(2 + 2 * i), m.back().get());
      variables.Add(std::to_string(3 + 2 * i), v.back().get());
      trainable.Add(std::to_string(i), weights[i]);
      momentums.Add(std::to_string(i), m.back().get());
      velocities.Add(std::to_string(i), v.back().get());
    }
    optimizer.Add("_variables", &variables);
    optimizer.Add("_trainable_variables", &trainable);
    optimizer.Add("_iterations", iterations.get());
    optimizer.Add("_learning_rate", learning_rate.get());
    optimizer.Add("_momentums", &momentums);
    optimizer.Add("_velocities", &velocities);
  }
  std::unique_ptr<Variable> k0, b0, k1, b1, iterations, learning_rate;
  std::vector<std::unique_ptr<Variable>> m, v;
  Node input_layer, dense0, dense1, operations, functional, sequential;
  Node variables, trainable, momentums, velocities, optimizer;
};

void ExpectValue(const Expected& e, const Variable& var, const std::string& key) {
  Result<Tensor> t = var.Read();
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(std::vector<int64_t>(t->shape().dims().begin(), t->shape().dims().end()), e.dims)
      << key;
  ASSERT_EQ(static_cast<size_t>(t->num_elements()), e.values.size()) << key;
  for (size_t i = 0; i < e.values.size(); ++i) {
    if (e.dtype == "int64") {
      EXPECT_EQ(t->flat<int64_t>()[i], static_cast<int64_t>(e.values[i])) << key;
    } else {
      EXPECT_EQ(t->flat<float>()[i], static_cast<float>(e.values[i])) << key << " [" << i << "]";
    }
  }
}

TEST(CheckpointTest, KerasGoldenRestoresIntoMirror) {
  const std::string dir = TestDataPath("nn/keras_dense_adam");
  const std::map<std::string, Expected> expected = ReadExpected(dir + "/expected.txt");
  ASSERT_EQ(expected.size(), 15u);
  EXPECT_EQ(LatestCheckpoint(dir), dir + "/ckpt-1");
  KerasMirror k;
  Checkpoint c;
  ASSERT_TRUE(c.Track("model", &k.sequential).ok());
  ASSERT_TRUE(c.Track("optimizer", &k.optimizer).ok());
  Result<RestoreResult> r = c.Restore(dir + "/ckpt-1");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->AssertConsumed().ok()) << r->AssertConsumed();
  EXPECT_EQ(c.save_counter(), 1);
  const std::string p = "optimizer/_trainable_variables/";
  const std::string s = "/.ATTRIBUTES/VARIABLE_VALUE";
  ExpectValue(expected.at(p + "0" + s), *k.k0, "k0");
  ExpectValue(expected.at(p + "1" + s), *k.b0, "b0");
  ExpectValue(expected.at(p + "2" + s), *k.k1, "k1");
  ExpectValue(expected.at(p + "3" + s), *k.b1, "b1");
  for (int i = 0; i < 4; ++i) {
    ExpectValue(expected.at("optimizer/_variables/" + std::to_string(2 + 2 * i) + s), *k.m[i], "m");
    ExpectValue(expected.at("optimizer/_variables/" + std::to_string(3 + 2 * i) + s), *k.v[i], "v");
  }
  ExpectValue(expected.at("optimizer/_iterations" + s), *k.iterations, "iterations");
  ExpectValue(expected.at("optimizer/_learning_rate" + s), *k.learning_rate, "lr");
}

TEST(CheckpointTest, KerasGoldenRestoresModelAloneByGraph) {
  // The kernel's key names it through the optimizer; a model-only tree still
  // finds it through model/_functional/_operations/1/_kernel in the graph.
  const std::string dir = TestDataPath("nn/keras_dense_adam");
  const std::map<std::string, Expected> expected = ReadExpected(dir + "/expected.txt");
  KerasMirror k;
  Checkpoint c;
  ASSERT_TRUE(c.Track("model", &k.sequential).ok());
  Result<RestoreResult> r = c.Restore(dir + "/ckpt-1");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->AssertExistingObjectsMatched().ok()) << r->AssertExistingObjectsMatched();
  EXPECT_FALSE(r->AssertConsumed().ok());
  ExpectValue(expected.at("optimizer/_trainable_variables/0/.ATTRIBUTES/VARIABLE_VALUE"), *k.k0,
              "k0");
}

// Writes a checkpoint for tests/interop/checkpoint_interop.py when
// SLUICE_CKPT_INTEROP_DIR is set: the Keras-shaped tree with known values,
// a pipeline iterator, and an int64 "step".
TEST(CheckpointTest, InteropWrite) {
  const char* out = std::getenv("SLUICE_CKPT_INTEROP_DIR");
  if (out == nullptr) GTEST_SKIP() << "SLUICE_CKPT_INTEROP_DIR not set";
  KerasMirror k;  // FloatVar values: 0, 1, 2, ... per variable
  ASSERT_TRUE(k.iterations->Assign(Tensor::Scalar<int64_t>(3)).ok());
  std::unique_ptr<Variable> step = Int64Var("step", 42);
  Result<Iterator> it = Dataset::range(10).iterator();
  ASSERT_TRUE(it.ok());
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(it->next().ok());
  Checkpoint c;
  ASSERT_TRUE(c.Track("model", &k.sequential).ok());
  ASSERT_TRUE(c.Track("optimizer", &k.optimizer).ok());
  ASSERT_TRUE(c.Track("step", step.get()).ok());
  ASSERT_TRUE(c.Track("iterator", &*it).ok());
  CheckpointManager m(&c, out, 2);
  ASSERT_TRUE(m.Save().ok());
  Result<std::string> path = m.Save();
  ASSERT_TRUE(path.ok()) << path.status();
  std::cout << "wrote " << *path << "\n";
}

}  // namespace
}  // namespace sluice::nn
