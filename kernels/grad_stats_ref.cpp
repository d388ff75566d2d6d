#include "kernels/grad_stats.h"

#include <cmath>

namespace ht {

void unscale_check_norm_ref(const UnscaleArgs& a) {
  const float inv_scale = 1.0f / a.state->scaler.scale;
  double norm2 = 0;
  for (std::int32_t k = 0; k < a.num_chunks; ++k) {
    const GradChunk& chunk = a.chunks[k];
    bool nonfinite = false;
    for (std::int64_t i = chunk.begin; i < chunk.end; ++i) {
      const float g = a.grads[i];
      nonfinite |= !std::isfinite(g);
      const float unscaled = g * inv_scale;
      a.grads[i] = unscaled;
      norm2 += static_cast<double>(unscaled) * unscaled;
    }
    if (nonfinite) a.tensor_nonfinite[chunk.tensor] = 1;
  }
  for (std::int32_t b = 0; b < a.num_blocks; ++b) a.block_norm2[b] = b == 0 ? static_cast<float>(norm2) : 0.0f;
}

void finalize_grad_stats_ref(const FinalizeArgs& a) {
  double norm2 = 0;
  for (std::int32_t b = 0; b < a.num_blocks; ++b) norm2 += a.block_norm2[b];
  std::int32_t found_inf = 0;
  for (std::int32_t t = 0; t < a.num_tensors; ++t) {
    found_inf |= a.tensor_nonfinite[t];
    a.nonfinite_log[t] = a.tensor_nonfinite[t];
    a.tensor_nonfinite[t] = 0;
  }
  StepControl& c = a.state->control;
  c.grad_norm = static_cast<float>(std::sqrt(norm2));
  c.found_inf = found_inf;
  c.clip_coef = clip_coefficient(c.grad_norm, a.max_grad_norm);
  c.lr = scheduled_lr(a.schedule, a.state->steps_taken);
  c.t = a.state->steps_taken + 1;
}

void update_scaler_ref(const ScalerUpdateArgs& a) {
  DeviceStepState& s = *a.state;
  const bool found_inf = s.control.found_inf != 0;
  StepRecord& r = *a.record;
  r.loss_scale = s.scaler.scale;
  r.grad_norm = s.control.grad_norm;
  r.lr = s.control.lr;
  r.skipped = found_inf ? 1 : 0;
  update_loss_scale(s.scaler, found_inf, a.config);
  if (found_inf) ++s.steps_skipped; else ++s.steps_taken;
  r.consecutive_skips = s.scaler.consecutive_skips;
}

}  // namespace ht
