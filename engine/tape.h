// A tiny autograd tape. Each op computes its forward result and records a closure that, run
// later, turns the gradient of its output into gradients of its inputs. backward() replays the
// closures in reverse. Parameter gradients are accumulated (+=) straight into the FP32 gradient
// arena and announced through the grad-ready hook, which is where data parallelism starts its
// allreduce buckets while the rest of backward is still running.
#pragma once

#include "engine/tensor.h"
#include "kernels/bias_act.h"

#include <functional>
#include <memory>
#include <vector>

namespace ht {

// A value in the graph: its tensor and, once backward reaches it, the gradient of the loss
// with respect to it (same shape and dtype). Activations feed exactly one op (the graphs here
// are chains, like an MLP), so a gradient is written once, never summed.
//
// A value that is an activation's output remembers which activation made it and what its
// derivative needs (`act`, `act_saved`), so the op consuming it can fuse that activation's
// backward into its own input-gradient GEMM; it then stores the gradient with respect to the
// pre-activation and says so (`grad_is_preactivation`), and the producer skips that step.
struct VarNode {
  Tensor value;
  Tensor grad;
  bool requires_grad = false;
  Activation act = Activation::none;
  Tensor act_saved;  // relu: the output itself; gelu: the pre-activation
  bool grad_is_preactivation = false;
};
using Var = std::shared_ptr<VarNode>;

inline Var make_var(Tensor value, bool requires_grad = false) {
  auto v = std::make_shared<VarNode>();
  v->value = std::move(value);
  v->requires_grad = requires_grad;
  return v;
}

class Tape {
 public:
  using Backward = std::function<void()>;
  using GradReadyHook = std::function<void(int param_index)>;

  void record(Backward backward) { ops_.push_back(std::move(backward)); }
  void backward();  // runs every recorded closure, last first, then forgets them
  void clear() { ops_.clear(); }
  std::size_t size() const { return ops_.size(); }

  void set_grad_ready_hook(GradReadyHook hook) { grad_ready_ = std::move(hook); }
  void grad_ready(int param_index) const {
    if (grad_ready_) grad_ready_(param_index);
  }

 private:
  std::vector<Backward> ops_;
  GradReadyHook grad_ready_;
};

}  // namespace ht
