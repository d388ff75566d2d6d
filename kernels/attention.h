// Causal multi-head self-attention, forward and backward, fused as FlashAttention does it: the
// T×T score matrix never reaches global memory; the forward keeps a running max and sum per
// query (online softmax) and saves only the logsumexp of each query's scores.
//
// Layout (nanoGPT's c_attn output): qkv (B, T, 3C), q | k | v, head h at columns h·D of each
// third (C = H·D); out (B, T, C), head h at columns h·D; lse (B, H, T).
//
// The rounding points, shared by the reference and the kernels (T: the compute dtype; in fp32
// every round() is exact):
//   forward   s_ij = scale·(q_i·k_j), j <= i          FP32 accumulation of exact products
//             m_i = max_j s_ij,  l_i = Σ_j exp(s_ij − m_i),  lse_i = m_i + log l_i
//             o_i = round( Σ_j round(exp(s_ij − m_i))·v_j / l_i )
//   backward  P_ij = exp(s_ij − lse_i),  Δ_i = Σ_d dO_id·O_id
//             dV_j = round( Σ_i round(P_ij)·dO_i )
//             dS_ij = P_ij·(dO_i·v_j − Δ_i)
//             dQ_i = round( scale·Σ_j round(dS_ij)·k_j ),  dK_j = round( scale·Σ_i round(dS_ij)·q_i )
// (The kernels' online softmax rounds exp(s − m) with the running max m: within an ulp of T of
// the above, which the tests allow for.)
//
// Dropout of the probabilities (nanoGPT's attn_dropout, as FlashAttention applies it): with
// z_ij ∈ {0, 1} the mask of attention_keeps and r = 1/(1 − p), the softmax is normalised before
// the mask (l_i and lse_i as above), and
//   forward   o_i = round( r·Σ_j round(exp(s_ij − m_i))·z_ij·v_j / l_i )
//   backward  dV_j = round( r·Σ_i round(P_ij)·z_ij·dO_i ),  dS_ij = P_ij·(z_ij·r·(dO_i·v_j) − Δ_i)
// (Δ_i = dO_i·O_i still: O is the dropped output). The mask is never stored: the backward
// regenerates it from the same Philox counter (kernels/dropout.h), as FlashAttention does.
//
// On the GPU, fp16 and bf16 run on tensor cores (mma.sync m16n8k16, ldmatrix, cp.async); fp32
// runs on CUDA cores. The backward is two kernels (dK and dV per key tile, dQ per query tile),
// so that no float is added by atomics: deterministic, as the rest of the step.
#pragma once

#include "ground/dtype.h"
#include "ground/host_device.h"
#include "kernels/dropout.h"

#include <cstdint>

namespace ht {

constexpr std::int64_t kAttentionMaxHeadDim = 128;

// Dropout of the attention probabilities; p = 0: none.
struct AttentionDropout {
  float p = 0;
  DropoutKey key;
  const DeviceStepState* state = nullptr;  // the step (steps_done + 1), read on the device
};

// Does probability (b·H + h, query i, key j) of a (T × T) head keep, at `step`? One Philox
// counter an element of the B·H·T·T scores, shared by the reference and every kernel.
HT_HD bool attention_keeps(const AttentionDropout& d, std::int64_t step, std::int64_t bh, std::int64_t T, std::int64_t i,
                           std::int64_t j) {
  return dropout_keeps(d.key, step, (bh * T + i) * T + j, d.p);
}

struct AttentionArgs {
  const void* qkv = nullptr;   // (B, T, 3C) dtype
  void* out = nullptr;         // (B, T, C) dtype
  float* lse = nullptr;        // (B, H, T) fp32
  DType dtype = DType::f32;
  std::int64_t batch = 0, seq = 0, heads = 0, head_dim = 0;
  float scale = 1;             // 1/sqrt(head_dim)
  AttentionDropout dropout;
};
void attention_ref(const AttentionArgs& a);

struct AttentionBackwardArgs {
  const void* qkv = nullptr;   // (B, T, 3C) dtype
  const void* out = nullptr;   // (B, T, C) dtype: the forward's output
  const void* dout = nullptr;  // (B, T, C) dtype
  const float* lse = nullptr;  // (B, H, T) fp32: the forward's
  float* delta = nullptr;      // (B, H, T) fp32 scratch
  void* dqkv = nullptr;        // (B, T, 3C) dtype, written
  DType dtype = DType::f32;
  std::int64_t batch = 0, seq = 0, heads = 0, head_dim = 0;
  float scale = 1;
  AttentionDropout dropout;    // the forward's
};
void attention_backward_ref(const AttentionBackwardArgs& a);

}  // namespace ht
