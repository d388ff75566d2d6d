// Per-tensor FP8 scaling, as Transformer Engine's recipes compute it: a tensor x goes to FP8 as
// cast(x * scale), and the GEMM multiplies its FP32 sums by the inverse scales of both operands.
//   current scaling: scale = (fp8_max / amax(x)) / 2^margin, from this tensor's own amax (one
//                    reduction before the cast);
//   delayed scaling: the same formula over the amax history of the steps before this one (TE's
//                    DelayedScaling: amax_history_len 1024, amax_compute_algo "max", margin 0);
//                    this step's amax is measured in the kernel that casts and joins the history
//                    for the next step.
// An amax of zero or a non-finite one leaves the previous scale as it was (TE's rule), so a
// tensor that was all zeros, or a step that overflowed, does not poison the scale.
// These are HT_HD functions the CPU reference and the kernels share; the state they update is
// the step's (engine/step_state.h: FP8's amax histories live beside the DeviceStepState).
#pragma once

#include "ground/fp8.h"
#include "ground/host_device.h"

#include <cmath>
#include <cstdint>

namespace ht {

enum class Fp8Recipe : std::int32_t { delayed = 0, current = 1 };

struct Fp8ScalingConfig {
  Fp8Recipe recipe = Fp8Recipe::delayed;
  std::int32_t amax_history = 1024;  // --fp8-amax-history: steps of amax a delayed scale looks back over
  std::int32_t margin = 0;           // --fp8-margin: the scale is divided by 2^margin
};

// The largest finite magnitude of each format.
inline constexpr float kE4M3Max = 448.0f;
inline constexpr float kE5M2Max = 57344.0f;

// scale = (fp8_max / amax) / 2^margin; the previous scale where amax is 0 or not finite, or where
// the quotient is not a finite positive number (an amax so small that fp8_max / amax overflows).
HT_HD float fp8_scale(float amax, float fp8_max, std::int32_t margin, float previous) {
  if (!(amax > 0.0f) || !std::isfinite(amax)) return previous;
  const float s = (fp8_max / amax) / std::ldexp(1.0f, margin);
  return std::isfinite(s) && s > 0.0f ? s : previous;
}

// The amax a delayed scale is computed from: the largest of the history (algorithm "max").
// history: (len) fp32, the last `len` steps' amaxes (a ring; zeros where no step has been yet).
HT_HD float history_amax(const float* history, std::int32_t len) {
  float m = 0.0f;
  for (std::int32_t i = 0; i < len; ++i) m = history[i] > m ? history[i] : m;
  return m;
}

// The step's amax joins the ring at slot step % len (step counts from 0).
HT_HD void record_amax(float* history, std::int32_t len, std::int64_t step, float amax) {
  history[step % len] = amax;
}

// x (fp32) scaled and cast to the format, saturating; returns the code.
HT_HD std::uint8_t fp8_quantize(float x, float scale, Fp8Format f) { return f32_to_fp8_bits(x * scale, f); }

}  // namespace ht
