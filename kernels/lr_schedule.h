// The learning-rate schedule: linear warmup, then constant or cosine decay to a floor, as
// nanoGPT's get_lr. Evaluated on the device from the step state's count of updates taken
// (kernels/step_state.h), by the kernel that finishes the gradient statistics (grad_stats.h).
#pragma once

#include "ground/host_device.h"

#include <cmath>
#include <cstdint>

namespace ht {

struct LrSchedule {
  enum Kind : std::int32_t { constant = 0, cosine = 1 };
  std::int32_t kind = cosine;
  float base_lr = 1e-3f;
  float min_lr = 0.0f;                // cosine floor
  std::int64_t warmup_steps = 0;      // linear warmup, for either kind
  std::int64_t total_steps = 1;       // steps over which cosine decays (warmup included)
};

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

}  // namespace ht
