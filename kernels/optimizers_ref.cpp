#include "kernels/cpu_dtype.h"
#include "kernels/optimizers.h"

#include <algorithm>

namespace ht {

namespace {

// Shared shape of both optimizers, one fused loop: unscale and clip, update the master weight and moments,
// refresh the working copy, zero the gradient. Skipped (gradients still zeroed) on found_inf.
// update(i, g, decay) returns the new master weight.
template <class Update> void optimizer_pass(const OptimizerArgs& a, Update update) {
  const StepControl& control = a.state->control;
  float* __restrict grads = a.grads;
  for (std::int32_t k = 0; k < a.num_chunks; ++k) {
    const GradChunk& chunk = a.chunks[k];
    if (!control.found_inf) {
      const float inv_scale = unscale_factor(*a.state);  // the arena holds scaled gradients (kernels/grad_stats.h)
      auto g = [&](std::int64_t i) { return applied_gradient(grads[i], inv_scale, control); };
      auto loop = [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* __restrict working = static_cast<T*>(a.working);
        if constexpr (std::is_same_v<T, float>) {
          for (std::int64_t i = chunk.begin; i < chunk.end; ++i) update(i, g(i), chunk.decay != 0);
        } else {  // the new weights a row at a time, rounded into the working copy in bulk
          float fresh[cpu::kChunk];
          for (std::int64_t i0 = chunk.begin; i0 < chunk.end; i0 += cpu::kChunk) {
            const std::int64_t n = std::min(cpu::kChunk, chunk.end - i0);
            for (std::int64_t i = 0; i < n; ++i) fresh[i] = update(i0 + i, g(i0 + i), chunk.decay != 0);
            cpu::store_n(fresh, working + i0, n);
          }
        }
      };
      if (a.working) cpu::dispatch(a.working_dtype, loop);
      else loop(std::type_identity<float>{});
    }
    std::fill(grads + chunk.begin, grads + chunk.end, 0.0f);
  }
}

}  // namespace

void sgd_step_ref(const SgdArgs& a) {
  const StepControl& control = a.state->control;
  float* __restrict master = a.master;
  float* __restrict momentum = a.moment1;
  const std::int64_t offset = a.state_offset;
  optimizer_pass(a, [&](std::int64_t i, float g, bool decay) {
    float unused = 0;
    return sgd_update(master[i], momentum ? momentum[i - offset] : unused, g, a.config, decay ? a.config.weight_decay : 0.0f,
                      control.lr, control.t);
  });
}

void adamw_step_ref(const AdamWArgs& a) {
  const AdamWStepConstants k = adamw_constants(a.config, a.state->control.lr, a.state->control.t);
  const AdamWConfig c = a.config;
  float* __restrict master = a.master;
  float* __restrict m = a.moment1;
  float* __restrict v = a.moment2;
  const std::int64_t offset = a.state_offset;
  optimizer_pass(a, [=](std::int64_t i, float g, bool decay) {
    return adamw_update(master[i], m[i - offset], v[i - offset], g, c, decay ? c.weight_decay : 0.0f, k);
  });
}

}  // namespace ht
