// The two 8-bit floating-point formats of FP8 training (the OCP 8-bit floating point
// specification; Hopper's and Ada's tensor cores):
//   E4M3 ("fn": finite, NaN) - 4 exponent bits (bias 7), 3 mantissa bits: no infinities, one NaN
//        pattern a sign (0x7f / 0xff), largest finite 448, smallest normal 2^-6, subnormals to 2^-9;
//   E5M2 - 5 exponent bits (bias 15), 2 mantissa bits: IEEE-like, with infinities (0x7c) and
//        NaNs, largest finite 57344, smallest normal 2^-14, subnormals to 2^-16.
// Narrowing from fp32 rounds to nearest even and saturates, as Transformer Engine's casts and
// the PTX conversions with .satfinite do: a magnitude beyond the largest finite value (infinity
// included) becomes that value, with its sign; NaN stays NaN (the canonical 0x7f, with the sign).
// Widening is exact. tests/test_dtype.cpp holds these against cuda_fp8.h on every code and every
// rounding boundary, and tests/fp8_oracle.py against ml_dtypes.
#pragma once

#include <bit>
#include <cstdint>

namespace ht {

// A format's shape, for the shared rounding below.
struct Fp8Format {
  int mantissa_bits;      // 3 (E4M3) or 2 (E5M2)
  int bias;               // 7 or 15
  std::uint8_t max_code;  // largest finite magnitude's code: 0x7e (448) or 0x7b (57344)
};
// (As functions too: device code may call a constexpr function, not read a host variable.)
constexpr Fp8Format e4m3_format() { return {3, 7, 0x7e}; }
constexpr Fp8Format e5m2_format() { return {2, 15, 0x7b}; }
inline constexpr Fp8Format kE4M3 = e4m3_format();
inline constexpr Fp8Format kE5M2 = e5m2_format();

// fp32 -> the format's code: round to nearest even, saturate to the largest finite value.
constexpr std::uint8_t f32_to_fp8_bits(float value, Fp8Format f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(value);
  const auto sign = static_cast<std::uint8_t>((x >> 24) & 0x80u);
  const std::uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return static_cast<std::uint8_t>(sign | 0x7f);  // NaN
  if (ax == 0x7f800000u) return static_cast<std::uint8_t>(sign | f.max_code);  // inf saturates
  const int exponent = static_cast<int>(ax >> 23) - 127;  // of a normal fp32 (subnormals: far below)
  const int min_exponent = 1 - f.bias;                   // the format's smallest normal exponent
  // The significand (with its implicit 1) in units of the format's last place at this exponent:
  // the format's subnormals share the smallest normal exponent's unit.
  const std::uint32_t significand = (ax & 0x7fffffu) | (ax >= 0x00800000u ? 0x800000u : 0u);
  const int unit_exponent = (exponent < min_exponent ? min_exponent : exponent) - f.mantissa_bits;
  const int shift = 23 - f.mantissa_bits + (exponent < min_exponent ? min_exponent - exponent : 0);
  if (shift > 31 || ax < 0x00800000u) return sign;  // far below half the smallest subnormal: zero
  const std::uint32_t kept = significand >> shift;
  const std::uint32_t rest = significand & ((1u << shift) - 1u);
  const std::uint32_t half = 1u << (shift - 1);
  const std::uint32_t units = kept + ((rest > half || (rest == half && (kept & 1u))) ? 1u : 0u);
  // units * 2^unit_exponent; its code: subnormals are `units` itself, normals carry into the
  // exponent field (a mantissa that rounds up to 2^mantissa_bits does so by itself).
  const int field = unit_exponent + f.mantissa_bits - min_exponent;  // exponent field - 1, for normals
  const std::uint32_t code = exponent < min_exponent ? units : units + (static_cast<std::uint32_t>(field) << f.mantissa_bits);
  return static_cast<std::uint8_t>(sign | (code > f.max_code ? f.max_code : code));
}

// The format's code -> fp32, exactly.
constexpr float fp8_bits_to_f32(std::uint8_t code, Fp8Format f) {
  const bool negative = code & 0x80u;
  const int exponent_field = (code & 0x7f) >> f.mantissa_bits;
  const int mantissa = code & ((1 << f.mantissa_bits) - 1);
  const int top_exponent = (1 << (7 - f.mantissa_bits)) - 1;
  float magnitude = 0;
  if (f.mantissa_bits == 3 && (code & 0x7f) == 0x7f) {
    magnitude = std::bit_cast<float>(0x7fc00000u);  // E4M3's NaN
  } else if (f.mantissa_bits == 2 && exponent_field == top_exponent) {
    magnitude = std::bit_cast<float>(mantissa ? 0x7fc00000u : 0x7f800000u);  // E5M2's NaN or inf
  } else {
    const int e = (exponent_field == 0 ? 1 : exponent_field) - f.bias - f.mantissa_bits;
    const int units = exponent_field == 0 ? mantissa : mantissa + (1 << f.mantissa_bits);
    // units * 2^e, exactly: e is between -9 - ... and 15 - 2 here, so a power-of-two float scales it.
    magnitude = static_cast<float>(units) * std::bit_cast<float>(static_cast<std::uint32_t>(e + 127) << 23);
  }
  return negative ? -magnitude : magnitude;
}

constexpr std::uint8_t f32_to_e4m3_bits(float v) { return f32_to_fp8_bits(v, kE4M3); }
constexpr std::uint8_t f32_to_e5m2_bits(float v) { return f32_to_fp8_bits(v, kE5M2); }
constexpr float e4m3_bits_to_f32(std::uint8_t c) { return fp8_bits_to_f32(c, kE4M3); }
constexpr float e5m2_bits_to_f32(std::uint8_t c) { return fp8_bits_to_f32(c, kE5M2); }

}  // namespace ht
