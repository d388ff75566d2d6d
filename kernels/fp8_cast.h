// FP8's cast: a bf16 tensor scaled and rounded to E4M3 or E5M2 (saturating, ground/fp8.h), its
// transpose cast in the same pass when asked (Hopper's FP8 wgmma reads both operands K-major, so
// the backward needs x^T in FP8: made here, not in a pass of its own), and the tensor's amax -
// max |x| before scaling, the delayed recipe's measurement of this step (kernels/fp8_scaling.h) -
// folded into *amax in the same pass. The max is taken on the magnitudes' bit patterns, so it is
// the same in any order and a NaN wins (an amax of NaN keeps the previous scale).
#pragma once

#include "ground/dtype.h"
#include "ground/fp8.h"
#include "ground/host_device.h"
#include "kernels/fp8_scaling.h"

#include <bit>
#include <cstdint>

namespace ht {

// out[r, c] = fp8(x[r, c] * scale); out_t[c, r] = out[r, c]; *amax = max(*amax, max |x|);
// *saturated += the elements whose scaled magnitude was beyond the format's largest (infinities
// included; NaNs not). Without out, only the amax (the current recipe's pass before its cast).
struct Fp8CastArgs {
  const void* x = nullptr;         // (rows, cols) bf16, row-major
  std::int64_t rows = 0, cols = 0;
  const float* scale = nullptr;    // (1) fp32 on the device (unread without out)
  Fp8Kind kind = Fp8Kind::e4m3;
  std::uint8_t* out = nullptr;     // (rows, cols) codes, or null: the amax alone
  std::uint8_t* out_t = nullptr;   // (cols, rows) codes, or null
  float* amax = nullptr;           // (1) fp32 on the device, or null
  std::uint32_t* saturated = nullptr;  // (1) on the device, or null
};
void fp8_cast_ref(const Fp8CastArgs& a);

// Whether a scaled value saturates: it is at or beyond the midpoint between the format's largest
// finite magnitude and the next step up (464 in E4M3, 61440 in E5M2), so that only the
// saturation brings it back to the largest. (A value between the largest and that midpoint
// rounds there by itself: a current scale's amax·scale may land a rounding above 448.)
HT_HD bool fp8_saturates(float scaled, Fp8Kind k) {
  const float midpoint = k == Fp8Kind::e4m3 ? 464.0f : 61440.0f;
  return scaled >= midpoint || scaled <= -midpoint;
}

// |v| as the bit pattern the amax is kept in: non-negative floats order as their bits do.
HT_HD std::uint32_t magnitude_bits(float v) { return std::bit_cast<std::uint32_t>(v) & 0x7fffffffu; }

}  // namespace ht
