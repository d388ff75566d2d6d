#include "kernels/cpu_dtype.h"
#include "kernels/optimizers.h"

#include <algorithm>

namespace ht {

namespace {

// Shared shape of both optimizers, one fused loop: clip, update the master weight and moments,
// refresh the working copy, zero the gradient. Skipped (gradients still zeroed) on found_inf.
template <class Update> void optimizer_pass(const OptimizerArgs& a, Update update) {
  const StepControl& control = a.state->control;
  float* __restrict grads = a.grads;
  if (!control.found_inf) {
    const float clip = control.clip_coef;
    auto loop = [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* __restrict working = static_cast<T*>(a.working);
      for (std::int64_t i = 0; i < a.n; ++i) {
        const float p = update(i, grads[i] * clip);
        if constexpr (!std::is_same_v<T, float>) working[i] = cpu::store<T>(p);
      }
    };
    if (a.working) cpu::dispatch(a.working_dtype, loop);
    else loop(std::type_identity<float>{});
  }
  std::fill(grads, grads + a.n, 0.0f);
}

}  // namespace

void sgd_step_ref(const SgdArgs& a) {
  const StepControl& control = a.state->control;
  float* __restrict master = a.master;
  float* __restrict momentum = a.moment1;
  optimizer_pass(a, [&](std::int64_t i, float g) {
    float unused = 0;
    return sgd_update(master[i], momentum ? momentum[i] : unused, g, a.config, control.lr, control.t);
  });
}

void adamw_step_ref(const AdamWArgs& a) {
  const AdamWStepConstants k = adamw_constants(a.config, a.state->control.lr, a.state->control.t);
  const AdamWConfig c = a.config;
  float* __restrict master = a.master;
  float* __restrict m = a.moment1;
  float* __restrict v = a.moment2;
  optimizer_pass(a, [=](std::int64_t i, float g) { return adamw_update(master[i], m[i], v[i], g, c, k); });
}

}  // namespace ht
