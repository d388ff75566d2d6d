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
// On the GPU, fp16 and bf16 run on tensor cores (mma.sync m16n8k16, ldmatrix, cp.async); fp32
// runs on CUDA cores. The backward is two kernels (dK and dV per key tile, dQ per query tile),
// so that no float is added by atomics: deterministic, as the rest of the step.
#pragma once

#include "ground/dtype.h"

#include <cstdint>

namespace ht {

constexpr std::int64_t kAttentionMaxHeadDim = 128;

struct AttentionArgs {
  const void* qkv = nullptr;   // (B, T, 3C) dtype
  void* out = nullptr;         // (B, T, C) dtype
  float* lse = nullptr;        // (B, H, T) fp32
  DType dtype = DType::f32;
  std::int64_t batch = 0, seq = 0, heads = 0, head_dim = 0;
  float scale = 1;             // 1/sqrt(head_dim)
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
};
void attention_backward_ref(const AttentionBackwardArgs& a);

}  // namespace ht
