// FP8's scales, updated on the device (the recipes of kernels/fp8_scaling.h), so a step never
// waits on the host and a CUDA graph replays the same launches every step:
//   begin_step    (delayed) every tensor's scale from its amax history - the steps before this
//                 one; scale_inv = 1 / scale;
//   from_current  (current) one tensor's scale from its current_amax, measured just before its
//                 cast; that amax joins the step's amax and current_amax is cleared;
//   end_step      every tensor's step amax (already MAX-reduced over the ranks) joins its
//                 history at slot steps_done % history_len, and the step amax is cleared.
#pragma once

#include "kernels/fp8_scaling.h"
#include "kernels/step_state.h"

#include <cstdint>

namespace ht {

enum class Fp8Update : std::int32_t { begin_step, from_current, end_step };

struct Fp8UpdateArgs {
  Fp8Tensors tensors;                       // on the device
  Fp8Update what = Fp8Update::begin_step;
  std::int32_t margin = 0;                  // --fp8-margin
  std::int32_t slot = 0;                    // from_current: the tensor
  const DeviceStepState* state = nullptr;   // end_step: the step (its steps_done)
};
void fp8_update_ref(const Fp8UpdateArgs& a);

// One tensor's part of an update (the reference's loop body and the kernel's thread).
HT_HD void fp8_update_slot(const Fp8UpdateArgs& a, std::int32_t i) {
  const Fp8Tensors& t = a.tensors;
  const float fmax = fp8_max(fp8_slot_kind(i));
  switch (a.what) {
    case Fp8Update::begin_step:
      t.scale[i] = fp8_scale(history_amax(t.history + std::int64_t{i} * t.history_len, t.history_len), fmax, a.margin,
                             t.scale[i]);
      t.scale_inv[i] = 1.0f / t.scale[i];
      break;
    case Fp8Update::from_current:
      t.scale[i] = fp8_scale(t.current_amax[i], fmax, a.margin, t.scale[i]);
      t.scale_inv[i] = 1.0f / t.scale[i];
      t.amax[i] = t.current_amax[i] > t.amax[i] || t.current_amax[i] != t.current_amax[i] ? t.current_amax[i] : t.amax[i];
      t.current_amax[i] = 0.0f;
      break;
    case Fp8Update::end_step:
      record_amax(t.history + std::int64_t{i} * t.history_len, t.history_len, steps_done(*a.state), t.amax[i]);
      t.amax[i] = 0.0f;
      break;
  }
}

}  // namespace ht
