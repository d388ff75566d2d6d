// The linear layer's GEMMs with their epilogues fused (see kernels/gemm.h for the layouts):
//   store_f32      c = acc + beta·c                          (dW += dzᵀ·x into the FP32 arena)
//   bias_act       pre = round(acc + bias), out = round(act(pre))   (forward)
//   cast           out = round(acc)                          (dx)
//   cast_act_grad  out = round(round(acc) · act'(saved))     (dx, fused with the previous
//                                                             layer's activation backward)
// round() is to the operands' dtype. Every epilogue rounds exactly where the unfused kernels
// (GEMM to FP32, then bias_act / cast / act_backward) round, so fused and unfused agree.
#pragma once

#include "kernels/bias_act.h"
#include "kernels/gemm.h"

#include <string_view>

namespace ht {

enum class Epilogue : std::int32_t { store_f32, bias_act, cast, cast_act_grad };

struct LinearGemmArgs {
  GemmArgs gemm;                 // op, shapes, operands; c and beta for store_f32
  Epilogue epilogue = Epilogue::store_f32;
  void* out = nullptr;           // (M, N) gemm.dtype, for every epilogue but store_f32
  void* pre = nullptr;           // (M, N) gemm.dtype: bias_act's pre-activation, or null
  const void* bias = nullptr;    // (N) gemm.dtype, or null
  const void* saved = nullptr;   // (M, N) gemm.dtype: cast_act_grad's act input (relu: output, gelu: pre)
  Activation act = Activation::none;
};

// The definition: gemm_ref into FP32, then the epilogue's reference kernel.
void linear_gemm_ref(const LinearGemmArgs& a);

// Which GEMM the GPU backend runs (--gemm): native tensor-core kernels with fused epilogues,
// the plain tiled CUDA-core kernel with separate epilogue kernels, cuBLASLt with its epilogues,
// or (a benchmark baseline) cuBLASLt's GEMM with our separate epilogue kernels.
// wgmma_first_design: the Hopper GEMM's first design (128-wide tiles, a block a tile, wait_group 0
// each K-tile), on the emulator only, for the performance model's tests; --gemm never names it.
enum class GemmImpl : std::int32_t { native, tiled, cublas, cublas_unfused, wgmma_first_design };
GemmImpl parse_gemm_impl(std::string_view name);  // native | tiled | cublas | cublas-unfused
const char* gemm_impl_name(GemmImpl impl);

}  // namespace ht
