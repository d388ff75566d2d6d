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

#include <bit>
#include <cstdint>

namespace ht {

enum class Fp8Kind : std::int32_t { e4m3 = 0, e5m2 = 1 };
HT_HD Fp8Format fp8_format(Fp8Kind k) { return k == Fp8Kind::e4m3 ? e4m3_format() : e5m2_format(); }

// out[r, c] = fp8(x[r, c] * scale); out_t[c, r] = out[r, c]; *amax = max(*amax, max |x|).
struct Fp8CastArgs {
  const void* x = nullptr;         // (rows, cols) bf16, row-major
  std::int64_t rows = 0, cols = 0;
  const float* scale = nullptr;    // (1) fp32 on the device
  Fp8Kind kind = Fp8Kind::e4m3;
  std::uint8_t* out = nullptr;     // (rows, cols) codes
  std::uint8_t* out_t = nullptr;   // (cols, rows) codes, or null
  float* amax = nullptr;           // (1) fp32 on the device, or null
};
void fp8_cast_ref(const Fp8CastArgs& a);

// |v| as the bit pattern the amax is kept in: non-negative floats order as their bits do.
HT_HD std::uint32_t magnitude_bits(float v) { return std::bit_cast<std::uint32_t>(v) & 0x7fffffffu; }

}  // namespace ht
