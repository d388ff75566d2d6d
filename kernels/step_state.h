// The device-resident state of the training step: one struct, one device allocation, owned by
// the trainer's StepState (engine/step_state.h), read by every kernel that needs to know which
// step it is in.
//
// The step never waits on the host: the loss scale, the skip decision, the step count and the
// learning rate all live here on the device and are updated there, by the same HT_HD functions
// the CPU backend calls. Every part has one owner that writes it - the loss scaler's rule
// (kernels/loss_scale.h) the scale and its trackers, the gradient check (grad_stats.h) the
// step's control, the scaler update the counts - and the readers read only what they need:
// the data's windows and dropout's masks the count of steps done, the optimizers the control.
// The host only reads StepRecords, in batches, later.
#pragma once

#include "ground/host_device.h"
#include "kernels/loss_scale.h"
#include "kernels/lr_schedule.h"

#include <cstdint>

namespace ht {

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
// steps_taken + steps_skipped (= the optimizer steps done before this one). State of a size
// that depends on the model (FP8's per-tensor amax histories and scales) is a device buffer
// beside this one, owned by the same StepState.
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

}  // namespace ht
