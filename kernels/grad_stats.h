// The scaler's side of a step, after backward (and after the allreduce):
//   1. check_norm: one read-only pass over the whole FP32 gradient arena forms every gradient's
//      unscaled value g·(1/scale) in registers, flags each parameter tensor holding a non-finite
//      one, and leaves per-block partial sums of squares (one launch, all tensors: a
//      multi-tensor kernel). The arena keeps the scaled gradients: the optimizer applies the
//      same 1/scale as it reads them (applied_gradient below), so the step writes the arena
//      once fewer than unscaling in place would, and the values match bit for bit.
//   2. finalize_grad_stats: one block turns the partials into the global norm, the clipping
//      coefficient, found_inf, the learning rate and Adam's t, into DeviceStepState::control.
//   3. (optimizer kernels read control)
//   4. update_scaler: one thread applies GradScaler's rule and writes the step's StepRecord.
#pragma once

#include "kernels/step_state.h"

#include <cstdint>

namespace ht {

// A contiguous slice of the parameter arenas inside one parameter tensor: the unit of work of
// the multi-tensor passes (unscale/check/norm, the optimizers).
struct GradChunk {
  std::int64_t begin = 0, end = 0;  // element offsets into the arena
  std::int32_t tensor = 0;          // parameter index
  std::int32_t decay = 1;           // the optimizer applies weight decay to this tensor
};

struct CheckNormArgs {
  const float* grads = nullptr;           // (arena) fp32, scaled (read only)
  const GradChunk* chunks = nullptr;      // (num_chunks)
  std::int32_t num_chunks = 0;
  const DeviceStepState* state = nullptr; // reads scaler.scale
  float* block_norm2 = nullptr;           // (num_blocks) partial sums of squares
  std::int32_t num_blocks = 0;            // partial slots; the GPU launches this many blocks
  std::int32_t* tensor_nonfinite = nullptr;  // (num_tensors) set to 1 where a gradient is inf/NaN
};
void check_norm_ref(const CheckNormArgs& a);

struct FinalizeArgs {
  const float* block_norm2 = nullptr;     // (num_blocks)
  std::int32_t num_blocks = 0;
  std::int32_t* tensor_nonfinite = nullptr;  // (num_tensors) read, copied to the ring, cleared
  std::int32_t num_tensors = 0;
  std::int32_t* nonfinite_ring = nullptr; // (ring_slots, num_tensors) per-step flags; the step's
  std::int32_t ring_slots = 1;            //   row is steps_done % ring_slots; may be null
  float max_grad_norm = 0;                // <= 0: no clipping
  LrSchedule schedule;
  DeviceStepState* state = nullptr;       // writes control
};
void finalize_grad_stats_ref(const FinalizeArgs& a);

struct ScalerUpdateArgs {
  DeviceStepState* state = nullptr;
  LossScalerConfig config;
  StepRecord* records = nullptr;          // (ring_slots) the step's slot is steps_done % ring_slots
  std::int32_t ring_slots = 1;
};
void update_scaler_ref(const ScalerUpdateArgs& a);

// clip_grad_norm_'s coefficient: gradients are multiplied by it when max_norm > 0.
HT_HD float clip_coefficient(float grad_norm, float max_norm) {
  if (max_norm <= 0) return 1.0f;
  const float coef = max_norm / (grad_norm + 1e-6f);
  return coef < 1.0f ? coef : 1.0f;
}

// What unscaling multiplies by: the check pass and the optimizers both take it from here.
HT_HD float unscale_factor(const DeviceStepState& s) { return 1.0f / s.scaler.scale; }

// The gradient an optimizer applies, from the arena's scaled value: unscaled exactly as the
// check pass saw it (the norm and the inf/NaN test are of this value), then clipped.
HT_HD float applied_gradient(float scaled, float inv_scale, const StepControl& c) { return scaled * inv_scale * c.clip_coef; }

// The single-threaded ends of steps 2 and 4, shared verbatim by the CPU reference and the
// GPU kernels.
HT_HD void finish_step_control(DeviceStepState& s, double norm2, std::int32_t found_inf, float max_grad_norm,
                               const LrSchedule& schedule) {
  StepControl& c = s.control;
  c.grad_norm = static_cast<float>(sqrt(norm2));
  c.found_inf = found_inf;
  c.clip_coef = clip_coefficient(c.grad_norm, max_grad_norm);
  c.lr = scheduled_lr(schedule, s.steps_taken);
  c.t = s.steps_taken + 1;
}

HT_HD void finish_scaler_update(DeviceStepState& s, const LossScalerConfig& config, StepRecord* records, std::int32_t slots) {
  const bool found_inf = s.control.found_inf != 0;
  StepRecord& r = records[steps_done(s) % slots];
  r.loss = s.step_loss;
  s.step_loss = 0;
  r.loss_scale = s.scaler.scale;
  r.grad_norm = s.control.grad_norm;
  r.lr = s.control.lr;
  r.skipped = found_inf ? 1 : 0;
  update_loss_scale(s.scaler, found_inf, config);
  if (found_inf) s.steps_skipped += 1; else s.steps_taken += 1;
  r.consecutive_skips = s.scaler.consecutive_skips;
}

}  // namespace ht
