// The host entry points of the GPU kernels, one per kernel family (kernels/*.cu). Each takes
// the same argument struct as its CPU reference (*_ref) and queues the work on `stream`.
#pragma once

#include "kernels/gemm.h"
#include "kernels/gpu.h"
#include "kernels/kernel_list.h"
#include "kernels/linear_gemm.h"

namespace ht::gpu::inline HT_GPU_NS {

// One per entry of kernels/kernel_list.h.
#define HT_DECLARE_LAUNCH(name, Args) void launch_##name(const Args& a, const Stream& s);
HT_KERNELS(HT_DECLARE_LAUNCH)
#undef HT_DECLARE_LAUNCH
// The GEMMs, which the backend chooses among.
void launch_gemm_tiled(const GemmArgs& a, const Stream& s);
// Tensor cores, sm_80+ (the split-K weight-gradient product's partials come from the stream's
// scratch memory: kernels/gemm_mma.cuh).
void launch_gemm_mma_f16(const LinearGemmArgs& a, const Stream& s);
void launch_gemm_mma_bf16(const LinearGemmArgs& a, const Stream& s);
// Hopper (sm_90a; the emulator's sm_90): wgmma + TMA, the forward (nt) product only; see
// kernels/gemm_wgmma.cu.
bool gemm_wgmma_supports(const GemmArgs& g);
void launch_gemm_wgmma(const LinearGemmArgs& a, const Stream& s);
#if defined(HT_SIMT)
void launch_gemm_wgmma_first_design(const LinearGemmArgs& a, const Stream& s);  // the model's tests only
#endif
// ... and its FP8 form (kernels/fp8_gemm.h: E4M3 or E5M2 A, E4M3 B, K a multiple of 16, 16-byte
// aligned operands), which launch_fp8_gemm takes where the stream allows it (Stream::fp8_wgmma).
bool fp8_gemm_wgmma_supports(const Fp8GemmArgs& a);
void launch_fp8_gemm_wgmma(const Fp8GemmArgs& a, const Stream& s);

// Partial-sum slots launch_check_norm fills for `num_chunks` chunks (independent of the
// device, so every GPU sums the norm in the same order).
int grad_stats_blocks(int num_chunks);

}  // namespace ht::gpu::inline HT_GPU_NS
