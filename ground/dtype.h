// Element types and their exact IEEE conversions.
//
// fp16 (binary16) and bf16 are stored as raw 16-bit patterns. Conversions from fp32 round to
// nearest even, overflow to inf, keep subnormals, and turn every NaN into the canonical
// pattern 0x7fff; widening to fp32 is exact (an fp16 NaN widens to the canonical 0x7fffffff, a
// bf16 NaN keeps its payload). That is exactly what cuda_fp16.h / cuda_bf16.h do, so the CPU
// backend and the GPU kernels agree bit for bit on every input.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace ht {

// Floating-point types for values, and the integer types data is stored in (token ids and
// labels as i32, pixels as u8). The kernels' float dispatch takes f32, f16 and bf16 only.
enum class DType : std::uint8_t { f32, f16, bf16, i32, u8 };

constexpr std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f16:
    case DType::bf16: return 2;
    case DType::u8: return 1;
    default: return 4;
  }
}
constexpr bool is_float(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }
std::string_view dtype_name(DType t);                      // "fp32", "fp16", "bf16", "i32", "u8"
std::optional<DType> parse_dtype(std::string_view name);   // the float types, inverse of dtype_name

constexpr std::uint16_t canonical_nan16 = 0x7fff;

// `a` where `condition`, else `b`, by masking: what a compiler vectorises (a ternary on a
// comparison it turns into a branch here).
constexpr std::uint32_t select_bits(bool condition, std::uint32_t a, std::uint32_t b) {
  const std::uint32_t mask = 0u - static_cast<std::uint32_t>(condition);
  return (a & mask) | (b & ~mask);
}


// Branch-free (selects only) so that loops over it vectorise on the CPU backend.
constexpr std::uint16_t f32_to_f16_bits(float value) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(value);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t ax = x & 0x7fffffffu;
  // fp16 normal range: round the 13 dropped mantissa bits to nearest even; a carry moves into
  // the exponent (and past 65504 into inf).
  const std::uint32_t normal = (ax + 0x0fffu + ((ax >> 13) & 1u) - (112u << 23)) >> 13;
  // fp16 subnormal (units of 2^-24) or zero: shift the significand right by 126 - exponent
  // (at least 14; capped at 31, where everything rounds to zero) and round to nearest even.
  const std::uint32_t exponent = ax >> 23;
  const std::uint32_t shift = exponent >= 112u ? 14u : (exponent <= 95u ? 31u : 126u - exponent);
  const std::uint32_t mantissa = (ax & 0x7fffffu) | 0x800000u;
  const std::uint32_t truncated = mantissa >> shift;
  const std::uint32_t rest = mantissa & ((1u << shift) - 1u);
  const std::uint32_t halfway = 1u << (shift - 1u);
  const std::uint32_t subnormal = truncated + ((rest > halfway) | ((rest == halfway) & truncated & 1u));
  const std::uint32_t magnitude = ax >= 0x477ff000u ? 0x7c00u : (ax >= 0x38800000u ? normal : subnormal);
  return static_cast<std::uint16_t>(ax > 0x7f800000u ? canonical_nan16 : (sign | magnitude));
}

constexpr float f16_bits_to_f32(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1fu;
  std::uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) {
    return std::bit_cast<float>(mantissa ? 0x7fffffffu : (sign | 0x7f800000u));
  }
  if (exponent == 0) {
    if (mantissa == 0) return std::bit_cast<float>(sign);
    int e = -1;  // normalise the subnormal
    do {
      ++e;
      mantissa <<= 1;
    } while ((mantissa & 0x400u) == 0);
    return std::bit_cast<float>(sign | ((112u - e) << 23) | ((mantissa & 0x3ffu) << 13));
  }
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

// The same widening without branches or a loop (integer selects only), so that loops over fp16
// data vectorise on the CPU: the exponent and mantissa move into place as a float and one exact
// multiplication by 2^112 re-biases the exponent - subnormals included, since a float subnormal
// times a power of two is exact; inf and NaN are patched in after. Bit-identical to
// f16_bits_to_f32 on every one of the 65,536 patterns (tested).
constexpr float f16_bits_to_f32_wide(std::uint16_t h) {
  const std::uint32_t em = h & 0x7fffu;
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t finite = std::bit_cast<std::uint32_t>(std::bit_cast<float>(em << 13) * 0x1p112f) | sign;
  const std::uint32_t special = select_bits(em > 0x7c00u, 0x7fffffffu, sign | 0x7f800000u);  // NaN (canonical) or inf
  return std::bit_cast<float>(select_bits(em >= 0x7c00u, special, finite));
}

// f32_to_f16_bits without per-element shifts, so that it vectorises: a subnormal result comes
// from adding 0.5 (the float whose ulp is the fp16 subnormal step), which rounds to nearest even
// in the float adder; a normal one from re-biasing the exponent and rounding the 13 dropped bits
// to nearest even. Bit-identical to f32_to_f16_bits on all 2^32 inputs (checked exhaustively
// when written; a test checks a sweep).
constexpr std::uint16_t f32_to_f16_bits_wide(float value) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(value);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t ax = x & 0x7fffffffu;
  const std::uint32_t subnormal = std::bit_cast<std::uint32_t>(std::bit_cast<float>(ax) + 0.5f) - 0x3f000000u;
  const std::uint32_t normal = (ax + 0x0fffu + ((ax >> 13) & 1u) - (112u << 23)) >> 13;
  std::uint32_t magnitude = select_bits(ax < 0x38800000u, subnormal, normal);
  magnitude = select_bits(ax >= 0x477ff000u, 0x7c00u, magnitude);
  return static_cast<std::uint16_t>(select_bits(ax > 0x7f800000u, canonical_nan16, sign | magnitude));
}

constexpr std::uint16_t f32_to_bf16_bits(float value) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(value);
  const std::uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  return static_cast<std::uint16_t>(select_bits((x & 0x7fffffffu) > 0x7f800000u, canonical_nan16, rounded));
}

// A shift, as on the GPU: a NaN keeps its payload (cuda_bf16.h does the same on the host).
constexpr float bf16_bits_to_f32(std::uint16_t b) { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); }

// Storage types for the CPU backend; layout-compatible with __half and __nv_bfloat16.
struct f16 {
  std::uint16_t bits = 0;
  static constexpr f16 from(float v) { return f16{f32_to_f16_bits(v)}; }
  constexpr operator float() const { return f16_bits_to_f32(bits); }
};
struct bf16 {
  std::uint16_t bits = 0;
  static constexpr bf16 from(float v) { return bf16{f32_to_bf16_bits(v)}; }
  constexpr operator float() const { return bf16_bits_to_f32(bits); }
};

// Rounds an fp32 value to the nearest value representable in `t` (identity for fp32).
constexpr float round_to(DType t, float v) {
  switch (t) {
    case DType::f16: return f16_bits_to_f32(f32_to_f16_bits(v));
    case DType::bf16: return bf16_bits_to_f32(f32_to_bf16_bits(v));
    default: return v;
  }
}

}  // namespace ht
