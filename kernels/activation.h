// Activation functions shared by the CPU reference and the GPU kernels (FP32 math).
#pragma once

#include "kernels/bias_act.h"
#include "ground/host_device.h"

#include <cmath>

namespace ht {

constexpr float kGeluSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;

HT_HD float activate(Activation act, float x) {
  switch (act) {
    case Activation::relu: return x > 0.0f ? x : 0.0f;
    case Activation::gelu: {
      const float u = kGeluSqrt2OverPi * (x + kGeluCubic * x * x * x);
      return 0.5f * x * (1.0f + tanhf(u));
    }
    default: return x;
  }
}

// d activation / d pre-activation. For relu, `saved` is the output (> 0 exactly where pre > 0);
// for gelu it is the pre-activation.
HT_HD float activation_derivative(Activation act, float saved) {
  switch (act) {
    case Activation::relu: return saved > 0.0f ? 1.0f : 0.0f;
    case Activation::gelu: {
      const float x = saved;
      const float u = kGeluSqrt2OverPi * (x + kGeluCubic * x * x * x);
      const float t = tanhf(u);
      const float du = kGeluSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x * x);
      return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
    }
    default: return 1.0f;
  }
}

}  // namespace ht
