#include "engine/tape.h"

namespace ht {

void accumulate_grad(Backend& backend, VarNode& x, Tensor contribution) {
  HT_ASSERT(contribution.shape() == x.value.shape());
  ++x.contributions;
  if (!x.grad.defined()) {  // the first: taken as it is (a chain writes its gradients in place)
    x.grad = std::move(contribution);
    return;
  }
  // Later ones are summed in FP32: into the FP32 gradient in place, or into a new FP32 sum of a
  // low-precision first contribution and this one.
  Tensor sum = x.grad.dtype() == DType::f32 ? x.grad : backend.empty(x.value.shape(), DType::f32);
  backend.add({x.grad.data(), x.grad.dtype(), contribution.data(), contribution.dtype(), sum.data_as<float>(), sum.numel()});
  x.grad = std::move(sum);
}

Tensor grad_as(Backend& backend, const VarNode& x, DType dtype) {
  HT_ASSERT(x.grad.defined());
  if (x.grad.dtype() == dtype) return x.grad;
  Tensor out = backend.empty(x.grad.shape(), dtype);
  backend.cast({x.grad.data(), x.grad.dtype(), out.data(), dtype, out.numel()});
  return out;
}

GradTarget fp32_grad_target(Backend& backend, VarNode& x) {
  ++x.contributions;
  if (x.grad.defined() && x.grad.dtype() == DType::f32) return {x.grad, 1.0f};
  Tensor sum = backend.empty(x.value.shape(), DType::f32);
  if (!x.grad.defined()) {
    x.grad = sum;
    return {sum, 0.0f};
  }
  backend.cast({x.grad.data(), x.grad.dtype(), sum.data(), DType::f32, sum.numel()});  // a low-precision first part
  x.grad = sum;
  return {sum, 1.0f};
}

void Tape::use_param(int index) {
  if (parent_) return;  // counted on the parent when this part first ran
  if (static_cast<std::size_t>(index) >= param_uses_.size()) param_uses_.resize(static_cast<std::size_t>(index) + 1, 0);
  ++param_uses_[static_cast<std::size_t>(index)];
}

void Tape::add_param_uses(const Tape& other) {
  if (other.param_uses_.size() > param_uses_.size()) param_uses_.resize(other.param_uses_.size(), 0);
  for (std::size_t i = 0; i < other.param_uses_.size(); ++i) param_uses_[i] += other.param_uses_[i];
}

void Tape::param_grad_done(int index) {
  if (parent_) {
    parent_->param_grad_done(index);
    return;
  }
  int& left = param_uses_.at(static_cast<std::size_t>(index));
  HT_ASSERT(left > 0);
  if (--left == 0 && grad_ready_) grad_ready_(index);
}

void Tape::backward() {
  // Move the closures out first: they hold the activations, which are released one op at a
  // time as backward walks down, exactly when they stop being needed.
  std::vector<Backward> ops = std::move(ops_);
  ops_.clear();
  while (!ops.empty()) {
    ops.back()();
    ops.pop_back();
  }
}

}  // namespace ht
