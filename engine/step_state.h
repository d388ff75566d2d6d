// StepState: the training step's state on the device, in one room the trainer owns.
//
// The step count, the learning rate's schedule, the loss scale and its trackers, the skip flag
// and the step's loss live in one DeviceStepState (kernels/step_state.h). Each part has its
// owner, which reads and writes only that part through the pointers handed out here:
//   the loss scaler (engine/loss_scaler.h)  the scale and its trackers, the step's control;
//   the schedule (held here)                the learning rate, from the updates taken;
//   the data's window plan, dropout         the steps done (which windows, which mask);
//   the loss kernels                        the step's loss.
// Checkpoints read and write the whole of it at once (read, write); nothing else crosses to
// the host. FP8's per-tensor scales and amax histories (--precision fp8), whose size depends on
// the model, are an Fp8State of their own here, beside the struct (engine/fp8_state.h).
#pragma once

#include "engine/backend.h"
#include "engine/fp8_state.h"
#include "kernels/step_state.h"

#include <memory>

namespace ht {

class StepState {
 public:
  StepState(Backend& backend, const LrSchedule& schedule);

  const DeviceStepState* device() const { return state_.data_as<DeviceStepState>(); }  // on the device
  DeviceStepState* device() { return state_.data_as<DeviceStepState>(); }
  const float* loss_scale() const { return &device()->scaler.scale; }
  float* step_loss() { return &device()->step_loss; }
  std::int32_t* found_inf() { return &device()->control.found_inf; }
  const LrSchedule& schedule() const { return schedule_; }
  // FP8's scaling state: absent unless a run multiplies in FP8.
  const Fp8State* fp8() const { return fp8_.get(); }
  Fp8State* fp8() { return fp8_.get(); }
  void enable_fp8(std::unique_ptr<Fp8State> fp8) { fp8_ = std::move(fp8); }

  // Host copies of the whole state (synchronise; for setup, checkpoints and tests).
  DeviceStepState read() const;
  void write(const DeviceStepState& s);

 private:
  Backend& backend_;
  LrSchedule schedule_;
  Tensor state_;  // one DeviceStepState
  std::unique_ptr<Fp8State> fp8_;
};

}  // namespace ht
