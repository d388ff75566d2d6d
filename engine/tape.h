// A small autograd tape: micrograd's contract, for tensors on a device.
//
//   - forward: each op computes its result and records a closure that, run later, turns the
//     gradient of its output into gradient contributions for its inputs;
//   - backward() replays the closures in reverse recording order;
//   - gradients accumulate: a value read by several ops (a residual stream, q|k|v of one
//     projection) receives the sum of their contributions, in FP32. The first contribution is
//     taken as it is, in place, so a chain (an MLP) costs nothing extra; later ones are added.
//   - parameter gradients go (+=) straight into the FP32 gradient arena; a parameter's
//     grad-ready hook fires exactly once, after its last use has added its part (a tied weight:
//     after both uses). Data parallelism starts its allreduce buckets there.
#pragma once

#include "engine/backend.h"
#include "kernels/bias_act.h"

#include <functional>
#include <memory>
#include <vector>

namespace ht {

// A value in the graph: its tensor and, once backward reaches it, the gradient of the loss with
// respect to it. With one consumer the gradient has the value's dtype (whatever that consumer
// wrote); with several it is summed in FP32, and grad_as() rounds it once for the producer.
//
// A value that is an activation's output remembers which activation made it and what its
// derivative needs (`act`, `act_saved`), so that its single consumer can fuse that
// activation's backward into its own input-gradient GEMM; it then stores the gradient with
// respect to the pre-activation and says so (`grad_is_preactivation`), and the producer skips
// that step. With several consumers there is no fusion: each contributes dL/d(output).
struct VarNode {
  Tensor value;
  bool requires_grad = false;
  int consumers = 0;  // ops that read this value (counted as they are recorded)
  Tensor grad;        // the sum of the contributions so far
  int contributions = 0;
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

// Adds `contribution` (the gradient one consumer computed, same shape as x, any dtype) to x's
// gradient: the first is taken as it is - no copy - and the receiver owns it from then on; later
// ones are added in FP32 (an FP32 gradient in place, else into a new FP32 sum).
void accumulate_grad(Backend& backend, VarNode& x, Tensor contribution);

// x's gradient in `dtype`: itself when it has that dtype, else rounded into a new tensor.
Tensor grad_as(Backend& backend, const VarNode& x, DType dtype);

// For an op whose kernel can add its contribution to an FP32 buffer (beta = 1) instead of
// writing it (beta = 0): x's FP32 gradient when there is one, else a new FP32 buffer that
// becomes x's gradient. Counts the contribution; the op then writes or adds into `grad`.
struct GradTarget {
  Tensor grad;
  float beta = 0;
};
GradTarget fp32_grad_target(Backend& backend, VarNode& x);

class Tape {
 public:
  using Backward = std::function<void()>;
  using GradReadyHook = std::function<void(int param_index)>;

  Tape() = default;
  // A tape that runs part of the graph again during `parent`'s backward (recompute(), in
  // engine/ops.h): the parameters' uses were counted on the parent when that part first ran, so
  // this one counts none and tells the parent as each use adds its gradient.
  explicit Tape(Tape* replaying_for) : parent_(replaying_for) {}
  // Expects the parameter uses `other` counted too (the first run of a recomputed part).
  void add_param_uses(const Tape& other);

  void record(Backward backward) { ops_.push_back(std::move(backward)); }
  // An op reads `x`: counted, so that backward knows whether x's gradient sums several parts.
  void consume(const Var& x) { ++x->consumers; }
  // An op reads parameter `index` (its backward will call param_grad_done once for it).
  void use_param(int index);
  void backward();  // runs every recorded closure, last first, then forgets them
  void clear() { ops_.clear(); }
  std::size_t size() const { return ops_.size(); }

  void set_grad_ready_hook(GradReadyHook hook) { grad_ready_ = std::move(hook); }
  // One use of parameter `index` has added its gradient; after the last, the hook fires.
  void param_grad_done(int index);

 private:
  std::vector<Backward> ops_;
  std::vector<int> param_uses_;  // uses left in backward, by parameter index
  GradReadyHook grad_ready_;
  Tape* parent_ = nullptr;
};

}  // namespace ht
