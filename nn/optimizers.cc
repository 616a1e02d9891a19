#include "sluice/nn/optimizers.h"

#include <string>

namespace sluice::nn {

// A Keras-style list attribute: children "0", "1", ... in order.
struct Optimizer::ListNode : Trackable {
  std::vector<Trackable*> items;
  std::vector<Child> TrackableChildren() override {
    std::vector<Child> out;
    for (size_t i = 0; i < items.size(); ++i) out.push_back({std::to_string(i), items[i]});
    return out;
  }
  // Values a restore kept for items that did not exist yet.
  Status RestorePending() { return RestoreDeferred(); }
};

struct Optimizer::Tracked {
  Variable* var = nullptr;
  std::vector<std::unique_ptr<Variable>> slots;
};

Optimizer::Optimizer(float learning_rate)
    : iterations_(std::make_unique<Variable>(
          "iteration", DeviceTensor(Device::Cpu(), Tensor::Scalar<int64_t>(0)), false)),
      learning_rate_(std::make_unique<Variable>(
          "learning_rate", DeviceTensor(Device::Cpu(), Tensor::Scalar<float>(learning_rate)),
          false)),
      variables_node_(std::make_unique<ListNode>()),
      trainable_node_(std::make_unique<ListNode>()),
      indices_node_(std::make_unique<ListNode>()) {
  variables_node_->items = {iterations_.get(), learning_rate_.get()};
}

Optimizer::~Optimizer() = default;

int64_t Optimizer::iterations() const { return iterations_->value().data<int64_t>()[0]; }
float Optimizer::learning_rate() const { return learning_rate_->value().data<float>()[0]; }
void Optimizer::set_learning_rate(float lr) { learning_rate_->value().data<float>()[0] = lr; }

std::vector<Trackable::Child> Optimizer::TrackableChildren() {
  if (slot_lists_.empty()) {
    for (size_t i = 0; i < SlotListNames().size(); ++i) {
      slot_lists_.push_back(std::make_unique<ListNode>());
    }
  }
  std::vector<Child> out = {{"_variables", variables_node_.get()},
                            {"_trainable_variables", trainable_node_.get()},
                            {"_trainable_variables_indices", indices_node_.get()},
                            {"_iterations", iterations_.get()},
                            {"_learning_rate", learning_rate_.get()}};
  std::vector<std::string> lists = SlotListNames();
  for (size_t i = 0; i < lists.size(); ++i) out.push_back({lists[i], slot_lists_[i].get()});
  return out;
}

Status Optimizer::Track(Variable* var) {
  std::vector<std::string> names = SlotNames();
  if (slot_lists_.size() != SlotListNames().size()) TrackableChildren();  // makes the lists
  SLUICE_ASSIGN_OR_RETURN(Backend * backend, GetBackend(var->value().device()));
  auto t = std::make_unique<Tracked>();
  t->var = var;
  for (size_t s = 0; s < names.size(); ++s) {
    SLUICE_ASSIGN_OR_RETURN(DeviceTensor zeros, backend->Zeros(var->dtype(), var->shape()));
    t->slots.push_back(std::make_unique<Variable>(var->name() + "/" + names[s], zeros, false));
    variables_node_->items.push_back(t->slots.back().get());
    slot_lists_[s]->items.push_back(t->slots.back().get());
  }
  trainable_node_->items.push_back(var);
  tracked_.push_back(std::move(t));
  return Status::OK();
}

Status Optimizer::ApplyGradients(std::span<DeviceTensor* const> grads,
                                 std::span<Variable* const> variables) {
  if (grads.size() != variables.size()) {
    return Status::InvalidArgument(name() + ": " + std::to_string(grads.size()) +
                                   " gradients for " + std::to_string(variables.size()) +
                                   " variables");
  }
  for (size_t i = 0; i < variables.size(); ++i) {
    const DeviceTensor* g = grads[i];
    Variable* v = variables[i];
    if (g == nullptr || v == nullptr || g->shape() != v->shape() || g->dtype() != DType::kFloat32 ||
        v->dtype() != DType::kFloat32 || !(g->device() == v->value().device())) {
      return Status::InvalidArgument(
          name() + ": the gradient of " + (v ? v->name() : std::string("(null)")) + " is " +
          (g ? g->DebugString() : std::string("null")) + ", the variable " +
          (v ? v->value().DebugString() : std::string("null")));
    }
  }
  SLUICE_RETURN_IF_ERROR(Build(variables));
  int64_t step = iterations() + 1;
  if (!variables.empty()) {
    SLUICE_ASSIGN_OR_RETURN(Backend * backend, GetBackend(variables[0]->value().device()));
    if (step_counter_.empty() || !(step_counter_.device() == backend->device())) {
      SLUICE_ASSIGN_OR_RETURN(step_counter_, backend->Allocate(DType::kInt64, Shape{}));
      counter_holds_ = -1;
    }
    SLUICE_RETURN_IF_ERROR(SyncStepCounter());
    SLUICE_RETURN_IF_ERROR(backend->AddToCounter(1, &step_counter_));
    counter_holds_ = step;
  }
  for (size_t i = 0; i < variables.size(); ++i) {
    Tracked* t = nullptr;
    for (const auto& tr : tracked_) {
      if (tr->var == variables[i]) t = tr.get();
    }
    std::vector<Variable*> slots;
    for (const auto& s : t->slots) slots.push_back(s.get());
    SLUICE_ASSIGN_OR_RETURN(Backend * backend, GetBackend(variables[i]->value().device()));
    SLUICE_RETURN_IF_ERROR(Update(*backend, *grads[i], variables[i], slots, step, step_counter_));
  }
  iterations_->value().data<int64_t>()[0] = step;
  return Status::OK();
}

Status Optimizer::Build(std::span<Variable* const> variables) {
  // Slots for variables seen for the first time, then any restored values.
  bool created = false;
  for (Variable* v : variables) {
    if (v == nullptr) return Status::InvalidArgument(name() + ": Build with a null variable");
    bool known = false;
    for (const auto& t : tracked_) known = known || t->var == v;
    if (!known) {
      SLUICE_RETURN_IF_ERROR(Track(v));
      created = true;
    }
  }
  if (created) {
    // A restore before the slots existed left their values with the list
    // nodes (`_variables`, `_momentums`, ...), which now have the items.
    SLUICE_RETURN_IF_ERROR(RestoreDeferred());
    SLUICE_RETURN_IF_ERROR(variables_node_->RestorePending());
    SLUICE_RETURN_IF_ERROR(trainable_node_->RestorePending());
    for (auto& list : slot_lists_) SLUICE_RETURN_IF_ERROR(list->RestorePending());
  }
  return Status::OK();
}

std::vector<Variable*> Optimizer::variables() const {
  std::vector<Variable*> out = {iterations_.get(), learning_rate_.get()};
  for (const auto& t : tracked_) {
    for (const auto& s : t->slots) out.push_back(s.get());
  }
  return out;
}

Status Optimizer::SyncStepCounter() {
  if (step_counter_.empty() || counter_holds_ == iterations()) return Status::OK();
  SLUICE_ASSIGN_OR_RETURN(Backend * backend, GetBackend(step_counter_.device()));
  SLUICE_RETURN_IF_ERROR(
      backend->CopyFromHost(Tensor::Scalar<int64_t>(iterations()), &step_counter_));
  counter_holds_ = iterations();
  return Status::OK();
}

void Optimizer::AdvanceIterations(int64_t n) {
  iterations_->value().data<int64_t>()[0] += n;
  if (counter_holds_ >= 0) counter_holds_ += n;
}

Status Optimizer::ApplyGradients(std::span<const DeviceTensor> grads,
                                 std::span<Variable* const> variables) {
  std::vector<DeviceTensor*> ptrs;
  for (const DeviceTensor& g : grads) ptrs.push_back(const_cast<DeviceTensor*>(&g));
  return ApplyGradients(std::span<DeviceTensor* const>(ptrs), variables);
}

SGD::SGD(float learning_rate, float momentum, bool nesterov)
    : Optimizer(learning_rate), momentum_(momentum), nesterov_(nesterov) {}

std::vector<std::string> SGD::SlotNames() const {
  if (momentum_ == 0.0f) return {};
  return {"momentum"};
}
std::vector<std::string> SGD::SlotListNames() const { return {"momentums"}; }

Status SGD::Update(Backend& backend, const DeviceTensor& grad, Variable* var,
                   std::span<Variable* const> slots, int64_t, const DeviceTensor&) {
  DeviceTensor* velocity = slots.empty() ? nullptr : &slots[0]->value();
  return backend.SgdUpdate(grad, learning_rate(), momentum_, nesterov_, &var->value(), velocity);
}

Adam::Adam(float learning_rate, float beta_1, float beta_2, float epsilon)
    : Optimizer(learning_rate), beta_1_(beta_1), beta_2_(beta_2), epsilon_(epsilon) {}

Status Adam::Update(Backend& backend, const DeviceTensor& grad, Variable* var,
                    std::span<Variable* const> slots, int64_t step,
                    const DeviceTensor& step_counter) {
  AdamStep s{learning_rate(), beta_1_, beta_2_, epsilon_, step, &step_counter};
  return backend.AdamUpdate(grad, s, &var->value(), &slots[0]->value(), &slots[1]->value());
}

}  // namespace sluice::nn
