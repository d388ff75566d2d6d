// The host entry points of the GPU kernels, one per kernel family (kernels/*.cu). Each takes
// the same argument struct as its CPU reference (*_ref) and queues the work on `stream`.
#pragma once

#include "kernels/bias_act.h"
#include "kernels/cross_entropy.h"
#include "kernels/elementwise.h"
#include "kernels/gemm.h"
#include "kernels/gpu.h"
#include "kernels/grad_stats.h"
#include "kernels/linear_gemm.h"
#include "kernels/optimizers.h"

namespace ht::gpu::inline HT_GPU_NS {

void launch_cast(const CastArgs& a, const Stream& s);
void launch_fill(const FillArgs& a, const Stream& s);
void launch_scale(const ScaleArgs& a, const Stream& s);
void launch_gather_batch(const GatherArgs& a, const Stream& s);
void launch_sum(const SumArgs& a, const Stream& s);
void launch_gemm_tiled(const GemmArgs& a, const Stream& s);
void launch_gemm_mma_f16(const LinearGemmArgs& a, const Stream& s);   // tensor cores, sm_80+
void launch_gemm_mma_bf16(const LinearGemmArgs& a, const Stream& s);
#if !defined(HT_SIMT)
// Hopper (sm_90a): wgmma + TMA, the forward (nt) product only; see kernels/gemm_wgmma.cu.
bool gemm_wgmma_supports(const GemmArgs& g);
void launch_gemm_wgmma(const LinearGemmArgs& a, const Stream& s);
#endif
void launch_bias_act(const BiasActArgs& a, const Stream& s);
void launch_act_backward(const ActBackwardArgs& a, const Stream& s);
void launch_bias_grad(const BiasGradArgs& a, const Stream& s);
void launch_cross_entropy(const CrossEntropyArgs& a, const Stream& s);
void launch_unscale_check_norm(const UnscaleArgs& a, const Stream& s);
void launch_finalize_grad_stats(const FinalizeArgs& a, const Stream& s);
void launch_update_scaler(const ScalerUpdateArgs& a, const Stream& s);
void launch_sgd_step(const SgdArgs& a, const Stream& s);
void launch_adamw_step(const AdamWArgs& a, const Stream& s);

// Partial-sum slots launch_unscale_check_norm fills for `num_chunks` chunks (independent of the
// device, so every GPU sums the norm in the same order).
int grad_stats_blocks(int num_chunks);

}  // namespace ht::gpu::inline HT_GPU_NS
