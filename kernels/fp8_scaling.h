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
enum class Fp8Kind : std::int32_t { e4m3 = 0, e5m2 = 1 };
HT_HD Fp8Format fp8_format(Fp8Kind k) { return k == Fp8Kind::e4m3 ? e4m3_format() : e5m2_format(); }

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

HT_HD float fp8_max(Fp8Kind k) { return k == Fp8Kind::e4m3 ? 448.0f : 57344.0f; }  // kE4M3Max, kE5M2Max

// The FP8 tensors of a model's linear layers under the HYBRID format, three a layer: its input
// and its weight in E4M3 (the forward's operands), its output's gradient in E5M2 (the
// backward's), at slots 3·layer + role.
enum class Fp8Role : std::int32_t { input = 0, weight = 1, grad = 2 };
inline constexpr std::int32_t kFp8Roles = 3;
HT_HD Fp8Kind fp8_role_kind(Fp8Role r) { return r == Fp8Role::grad ? Fp8Kind::e5m2 : Fp8Kind::e4m3; }
HT_HD Fp8Kind fp8_slot_kind(std::int32_t slot) { return fp8_role_kind(static_cast<Fp8Role>(slot % kFp8Roles)); }

// The scaling state of `count` FP8 tensors on the device, as arrays (so the step's amaxes are one
// span: one MAX-allreduce makes every rank's scales the same). Owned by the StepState.
struct Fp8Tensors {
  float* scale = nullptr;            // (count) the scale the casts multiply by; starts at 1
  float* scale_inv = nullptr;        // (count) 1 / scale: what the GEMM's sums are multiplied by
  float* amax = nullptr;             // (count) this step's amax so far (all micro-batches)
  float* current_amax = nullptr;     // (count) the current recipe's amax of the tensor being cast
  std::uint32_t* saturated = nullptr;  // (count) elements cast to ±max from beyond it, since the last log
  float* history = nullptr;          // (count, history_len) the delayed recipe's amax rings
  std::int32_t count = 0;
  std::int32_t history_len = 0;
};

// x (fp32) scaled and cast to the format, saturating; returns the code.
HT_HD std::uint8_t fp8_quantize(float x, float scale, Fp8Format f) { return f32_to_fp8_bits(x * scale, f); }

}  // namespace ht
