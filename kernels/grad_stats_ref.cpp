#include "kernels/grad_stats.h"

#include <cmath>

namespace ht {

void check_norm_ref(const CheckNormArgs& a) {
  // As the GPU kernel splits the work: partial b sums chunks b, b + num_blocks, ... (in double,
  // rounded to fp32 once); the backends give a partial a chunk (grad_stats_blocks).
  const float inv_scale = unscale_factor(*a.state);
  for (std::int32_t b = 0; b < a.num_blocks; ++b) {
    double norm2 = 0;
    for (std::int32_t k = b; k < a.num_chunks; k += a.num_blocks) {
      const GradChunk& chunk = a.chunks[k];
      bool nonfinite = false;
      for (std::int64_t i = chunk.begin; i < chunk.end; ++i) {
        const float unscaled = a.grads[i] * inv_scale;  // inf/NaN here whether g or 1/scale overflowed
        nonfinite |= !std::isfinite(unscaled);
        norm2 += static_cast<double>(unscaled) * unscaled;
      }
      if (nonfinite) a.tensor_nonfinite[chunk.tensor] = 1;
    }
    a.block_norm2[b] = static_cast<float>(norm2);
  }
}

void finalize_grad_stats_ref(const FinalizeArgs& a) {
  double norm2 = 0;
  for (std::int32_t b = 0; b < a.num_blocks; ++b) norm2 += a.block_norm2[b];
  std::int32_t found_inf = 0;
  std::int32_t* log = a.nonfinite_ring ? a.nonfinite_ring + steps_done(*a.state) % a.ring_slots * a.num_tensors : nullptr;
  for (std::int32_t t = 0; t < a.num_tensors; ++t) {
    found_inf |= a.tensor_nonfinite[t];
    if (log) log[t] = a.tensor_nonfinite[t];
    a.tensor_nonfinite[t] = 0;
  }
  finish_step_control(*a.state, norm2, found_inf, a.max_grad_norm, a.schedule);
}

void update_scaler_ref(const ScalerUpdateArgs& a) { finish_scaler_update(*a.state, a.config, a.records, a.ring_slots); }

}  // namespace ht
