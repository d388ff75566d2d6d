// The FP8 GEMM of a linear layer (--precision fp8): both operands FP8 codes, K-major, as
// Hopper's FP8 tensor cores read them ("nt": C(M, N) = A(M, K) · B(N, K)ᵀ), each with its own
// per-tensor scale (kernels/fp8_scaling.h). The three products of a layer all take this form,
// from the transposed copies the casts make (kernels/fp8_cast.h):
//   forward       y  = x8 · W8ᵀ        A = x8 (rows, in) E4M3,   B = W8  (out, in) E4M3
//   weight grad   dW += g8ᵀ · x8       A = g8ᵀ (out, rows) E5M2, B = x8ᵀ (in, rows) E4M3
//   input grad    dx = g8 · W8         A = g8 (rows, out) E5M2,  B = W8ᵀ (in, out) E4M3
// The arithmetic, which the reference, the kernels and the emulator's FP8 tensor-core
// instructions share: each product of two codes is exact in FP32; the sum runs in ascending k
// with one FP32 rounding an addition (acc = fl(acc + a_k·b_k), acc starting at 0); then
// v = fl(acc · fl(a_scale_inv · b_scale_inv)), and v goes through the linear layer's epilogue
// (kernels/linear_gemm.h) in bf16. (A GPU's tensor cores sum in their own order and width: a GPU
// agrees with this to within FP32 summation error, the emulator bit for bit.)
#pragma once

#include "kernels/activation.h"
#include "kernels/fp8_scaling.h"
#include "kernels/linear_gemm.h"

#include <cstdint>

namespace ht {

struct Fp8GemmArgs {
  std::int64_t M = 0, N = 0, K = 0;
  const std::uint8_t* a = nullptr;      // (M, K) codes
  const std::uint8_t* b = nullptr;      // (N, K) codes
  Fp8Kind a_kind = Fp8Kind::e4m3, b_kind = Fp8Kind::e4m3;
  const float* a_scale_inv = nullptr;   // (1) on the device
  const float* b_scale_inv = nullptr;   // (1) on the device
  Epilogue epilogue = Epilogue::store_f32;
  float* c = nullptr;                   // store_f32: (M, N) fp32, c = v + beta·c
  float beta = 0;                       // 0 or 1
  void* out = nullptr;                  // other epilogues: (M, N) bf16
  void* pre = nullptr;                  // bias_act: (M, N) bf16 pre-activation, or null
  const void* bias = nullptr;           // bias_act: (N) bf16, or null
  const void* saved = nullptr;          // cast_act_grad: (M, N) bf16
  Activation act = Activation::none;
};
void fp8_gemm_ref(const Fp8GemmArgs& a);

}  // namespace ht
