// LayerNorm over the channels of each row, FP32 statistics (as autocast runs it), reading the
// FP32 residual stream and FP32 weight and bias, writing the normalised row in the compute dtype
// (the rounding the next Linear's cast would do):
//   mean = Σx / C, var = Σ(x − mean)² / C (biased, as PyTorch), rstd = 1 / sqrt(var + eps)
//   out  = round((x − mean)·rstd·weight + bias)
// Backward, with x̂ = (x − mean)·rstd and g = dout·weight:
//   dx      = rstd·(g − mean(g) − x̂·mean(g·x̂))     FP32, written (beta 0) or added (beta 1)
//   dweight += Σ_rows dout·x̂,   dbias += Σ_rows dout   FP32, a deterministic column reduction
#pragma once

#include "ground/dtype.h"

#include <cstdint>

namespace ht {

constexpr float kLayerNormEps = 1e-5f;

struct LayerNormArgs {
  const float* x = nullptr;       // (rows, C) fp32
  const float* weight = nullptr;  // (C) fp32
  const float* bias = nullptr;    // (C) fp32
  void* out = nullptr;            // (rows, C) out_dtype
  DType out_dtype = DType::f32;
  float* mean = nullptr;          // (rows) fp32, for backward
  float* rstd = nullptr;          // (rows) fp32, for backward
  std::int64_t rows = 0, channels = 0;
  float eps = kLayerNormEps;
};
void layernorm_ref(const LayerNormArgs& a);

struct LayerNormBackwardArgs {
  const float* x = nullptr;       // (rows, C) fp32
  const float* weight = nullptr;  // (C) fp32
  const float* mean = nullptr;    // (rows)
  const float* rstd = nullptr;    // (rows)
  const void* dout = nullptr;     // (rows, C) dout_dtype
  DType dout_dtype = DType::f32;
  float* dx = nullptr;            // (rows, C) fp32
  float beta = 0;                 // 0: dx = ...; 1: dx += ... (another consumer's gradient is there)
  float* dweight = nullptr;       // (C) fp32, added to
  float* dbias = nullptr;         // (C) fp32, added to
  std::int64_t rows = 0, channels = 0;
};
void layernorm_backward_ref(const LayerNormBackwardArgs& a);

}  // namespace ht
