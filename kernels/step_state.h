// Device-resident state of one optimizer step, and the rules that update it.
//
// The step never waits on the host: the loss scale, the skip decision, the step count and the
// learning rate all live in DeviceStepState on the device and are updated there, by the same
// HT_HD functions the CPU backend calls. The host only reads StepRecords, in batches, later.
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

struct LrSchedule {
  enum Kind : std::int32_t { constant = 0, cosine = 1 };
  std::int32_t kind = cosine;
  float base_lr = 1e-3f;
  float min_lr = 0.0f;                // cosine floor
  std::int64_t warmup_steps = 0;      // linear warmup, for either kind
  std::int64_t total_steps = 1;       // steps over which cosine decays (warmup included)
};

struct ScalerState {
  float scale = 1.0f;
  std::int32_t growth_tracker = 0;    // consecutive finite steps since the last growth or backoff
  std::int32_t hysteresis_left = 1;   // overflows still tolerated before the next backoff
  std::int32_t consecutive_skips = 0;
};

// Written by the unscale/check pass, read by the optimizer and the scaler update.
struct StepControl {
  float grad_norm = 0;                // global L2 norm of the unscaled gradients, before clipping
  float clip_coef = 1;                // multiplier the optimizer applies to every gradient
  float lr = 0;                       // learning rate of this step
  std::int32_t found_inf = 0;         // any non-finite gradient (on any rank, once reduced)
  std::int64_t t = 1;                 // 1-based index of the update if it is taken (Adam's t)
};

// Everything that changes from one step to the next lives here, on the device, so a step's
// kernels take the same arguments every time (and a CUDA graph can replay them): which
// micro-batch rows to read, which ring slot to log into, the learning rate, all derive from
// steps_taken + steps_skipped (= the optimizer steps done before this one).
struct DeviceStepState {
  ScalerState scaler;
  StepControl control;
  std::int64_t steps_taken = 0;       // optimizer updates applied; drives the LR schedule
  std::int64_t steps_skipped = 0;
  float step_loss = 0;                // this step's mean loss, accumulated by the loss kernels
};

// Optimizer steps done before the current one (the current step is this + 1).
HT_HD std::int64_t steps_done(const DeviceStepState& s) { return s.steps_taken + s.steps_skipped; }

// What the host logs for each optimizer step; one slot of a ring on the device.
struct StepRecord {
  float loss = 0;                     // mean unscaled loss over the step's samples (this rank)
  float loss_scale = 0;               // the scale this step's backward used
  float grad_norm = 0;
  float lr = 0;
  std::int32_t skipped = 0;
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

// Learning rate for the update after `steps_taken` successful updates. Skipped steps do not
// advance it. Computed in double on host and device alike.
HT_HD float scheduled_lr(const LrSchedule& s, std::int64_t steps_taken) {
  if (steps_taken < s.warmup_steps)
    return static_cast<float>(static_cast<double>(s.base_lr) * static_cast<double>(steps_taken + 1) /
                              static_cast<double>(s.warmup_steps));
  if (s.kind == LrSchedule::constant) return s.base_lr;
  const std::int64_t span = s.total_steps - s.warmup_steps;
  double progress = span > 0 ? static_cast<double>(steps_taken - s.warmup_steps) / static_cast<double>(span) : 1.0;
  progress = progress < 0 ? 0 : (progress > 1 ? 1 : progress);
  const double pi = 3.14159265358979323846;
  return static_cast<float>(s.min_lr + 0.5 * (static_cast<double>(s.base_lr) - s.min_lr) * (1.0 + cos(pi * progress)));
}

// clip_grad_norm_'s coefficient: gradients are multiplied by it when max_norm > 0.
HT_HD float clip_coefficient(float grad_norm, float max_norm) {
  if (max_norm <= 0) return 1.0f;
  const float coef = max_norm / (grad_norm + 1e-6f);
  return coef < 1.0f ? coef : 1.0f;
}

}  // namespace ht
