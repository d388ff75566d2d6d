// The dynamic loss scale's rule and its knobs: torch.amp.GradScaler's, with DeepSpeed's
// hysteresis and bounds. One HT_HD function, called by the CPU backend and by the scaler-update
// kernel alike (kernels/grad_stats.h); its state is one part of the step's (kernels/step_state.h).
#pragma once

#include "ground/host_device.h"

#include <cmath>
#include <cstdint>

namespace ht {

// The smallest loss scale halftape accepts: unscaling multiplies by 1/scale, which must be a
// finite fp32 number (1/1e-38 is; the inverse of the smallest subnormals is not).
constexpr float kMinLossScale = 1e-38f;
inline bool valid_loss_scale(float s) { return s >= kMinLossScale && std::isfinite(s); }

// GradScaler's knobs. Defaults are torch.amp.GradScaler's; hysteresis, min and max are
// DeepSpeed/Megatron's additions (hysteresis 1 is exactly PyTorch's rule).
struct LossScalerConfig {
  std::int32_t dynamic = 1;           // 0: a static scale that never changes
  float init_scale = 65536.0f;        // 2^16
  float growth_factor = 2.0f;
  float backoff_factor = 0.5f;
  std::int32_t growth_interval = 2000;
  std::int32_t hysteresis = 1;        // back off only after this many overflows since the last growth
  float min_scale = 1.0f;
  float max_scale = 16777216.0f * 1024.0f;  // 2^34; growth stops there
};

struct ScalerState {
  float scale = 1.0f;
  std::int32_t growth_tracker = 0;    // consecutive finite steps since the last growth or backoff
  std::int32_t hysteresis_left = 1;   // overflows still tolerated before the next backoff
  std::int32_t consecutive_skips = 0;
};

inline ScalerState initial_scaler_state(const LossScalerConfig& c, bool scaling_enabled) {
  ScalerState s;
  s.scale = scaling_enabled ? c.init_scale : 1.0f;
  s.hysteresis_left = c.hysteresis;
  return s;
}

// torch.amp.GradScaler.update() (_amp_update_scale_), plus hysteresis and bounds:
//  - overflow: the growth tracker resets; after `hysteresis` overflows the scale backs off
//    (never below min_scale) and the hysteresis budget refills;
//  - finite: the tracker counts up; at growth_interval the scale grows if the result is finite
//    (capped at max_scale), the tracker resets and the hysteresis budget refills.
HT_HD void update_loss_scale(ScalerState& s, bool found_inf, const LossScalerConfig& c) {
  if (found_inf) {
    s.consecutive_skips += 1;
    if (!c.dynamic) return;
    s.growth_tracker = 0;
    s.hysteresis_left -= 1;
    if (s.hysteresis_left <= 0) {
      const float backed_off = s.scale * c.backoff_factor;
      s.scale = backed_off > c.min_scale ? backed_off : c.min_scale;
      s.hysteresis_left = c.hysteresis;
    }
    return;
  }
  s.consecutive_skips = 0;
  if (!c.dynamic) return;
  s.growth_tracker += 1;
  if (s.growth_tracker == c.growth_interval) {
    const float grown = s.scale * c.growth_factor;
    if (std::isfinite(grown)) s.scale = grown < c.max_scale ? grown : c.max_scale;
    s.growth_tracker = 0;
    s.hysteresis_left = c.hysteresis;
  }
}

}  // namespace ht
