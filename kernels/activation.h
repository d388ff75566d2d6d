// Activation functions shared by the CPU reference and the GPU kernels (FP32 math).
//
// GELU's tanh is computed here from exp, and exp from a range reduction and a polynomial - pure
// arithmetic, no libm: the CPU reference's loops vectorise (GELU was the larger part of a GPT
// step on the CPU with libm's scalar tanhf), and the emulator and the CPU compute the same bits.
// Accuracy: |tanh error| < 2^-23 + 2 ulp, i.e. GELU within a couple of FP32 ulps.
#pragma once

#include "ground/host_device.h"
#include "kernels/bias_act.h"

#include <bit>
#include <cmath>
#include <cstdint>

namespace ht {

constexpr float kGeluSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;

HT_HD float bits_to_float(std::uint32_t b) {  // (a bit cast on host and device)
#if defined(__CUDA_ARCH__)
  return __uint_as_float(b);
#else
  return std::bit_cast<float>(b);
#endif
}

HT_HD std::uint32_t float_to_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  return std::bit_cast<std::uint32_t>(f);
#endif
}

// `replacement` where `condition`, else x, by masking bits: no branch, so the host compiler
// vectorises the loops around it (it does not if-convert a float ternary or std::min here).
HT_HD float select_if(bool condition, float replacement, float x) {
  const std::uint32_t mask = 0u - static_cast<std::uint32_t>(condition);
  return bits_to_float((float_to_bits(x) & ~mask) | (float_to_bits(replacement) & mask));
}

// e^x for x in [-87, 88] (clamped outside; NaN stays NaN): x = n·ln2 + r, |r| <= ln2/2, e^r by
// its Taylor series to r^7 (error below 2^-27), 2^n assembled in the exponent bits.
HT_HD float exp_poly(float x) {
  x = select_if(x > 88.0f, 88.0f, select_if(x < -87.0f, -87.0f, x));
  constexpr float kLog2e = 1.44269504088896341f, kLn2Hi = 0.693145751953125f, kLn2Lo = 1.428606765330187e-06f;
  constexpr float kRound = 12582912.0f;  // 1.5·2^23: adding and subtracting it rounds to an integer
  const float n = (x * kLog2e + kRound) - kRound;
  const float r = (x - n * kLn2Hi) - n * kLn2Lo;
  const float whole = select_if(n != n, 0.0f, n);  // a NaN's exponent: any (the result is NaN through r)
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  return p * bits_to_float(static_cast<std::uint32_t>(static_cast<std::int32_t>(whole) + 127) << 23);
}

// tanh u = 1 − 2/(e^{2u} + 1): an absolute error of a few ulps of 1, all GELU needs.
HT_HD float tanh_poly(float u) { return 1.0f - 2.0f / (exp_poly(2.0f * u) + 1.0f); }

HT_HD float gelu(float x) {
  const float u = kGeluSqrt2OverPi * (x + kGeluCubic * x * x * x);
  return 0.5f * x * (1.0f + tanh_poly(u));
}

HT_HD float gelu_derivative(float x) {
  const float u = kGeluSqrt2OverPi * (x + kGeluCubic * x * x * x);
  const float t = tanh_poly(u);
  const float du = kGeluSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x * x);
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
}

HT_HD float activate(Activation act, float x) {
  switch (act) {
    case Activation::relu: return x > 0.0f ? x : 0.0f;
    case Activation::gelu: return gelu(x);
    default: return x;
  }
}

// d activation / d pre-activation. For relu, `saved` is the output (> 0 exactly where pre > 0);
// for gelu it is the pre-activation.
HT_HD float activation_derivative(Activation act, float saved) {
  switch (act) {
    case Activation::relu: return saved > 0.0f ? 1.0f : 0.0f;
    case Activation::gelu: return gelu_derivative(saved);
    default: return 1.0f;
  }
}

}  // namespace ht
