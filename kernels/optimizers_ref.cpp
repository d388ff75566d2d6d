#include "kernels/cpu_dtype.h"
#include "kernels/optimizers.h"

#include <algorithm>

namespace ht {

namespace {

// Shared shape of both optimizers: skip on found_inf, clip, update, refresh the working copy,
// zero the gradient.
template <class Update> void optimizer_pass(const OptimizerArgs& a, Update&& update) {
  const StepControl& control = a.state->control;
  if (!control.found_inf) {
    for (std::int64_t i = 0; i < a.n; ++i) update(i, a.grads[i] * control.clip_coef);
    if (a.working) {
      cpu::dispatch(a.working_dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* working = static_cast<T*>(a.working);
        for (std::int64_t i = 0; i < a.n; ++i) working[i] = cpu::store<T>(a.master[i]);
      });
    }
  }
  std::fill(a.grads, a.grads + a.n, 0.0f);
}

}  // namespace

void sgd_step_ref(const SgdArgs& a) {
  const StepControl& control = a.state->control;
  optimizer_pass(a, [&](std::int64_t i, float g) {
    float unused = 0;
    sgd_update(a.master[i], a.moment1 ? a.moment1[i] : unused, g, a.config, control.lr, control.t);
  });
}

void adamw_step_ref(const AdamWArgs& a) {
  const StepControl& control = a.state->control;
  const AdamWStepConstants k = adamw_constants(a.config, control.lr, control.t);
  optimizer_pass(a, [&](std::int64_t i, float g) { adamw_update(a.master[i], a.moment1[i], a.moment2[i], g, a.config, k); });
}

}  // namespace ht
