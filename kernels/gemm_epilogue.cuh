// The epilogue of the tensor-core GEMMs (kernels/gemm_mma.cuh, kernels/gemm_wgmma.cu): what
// happens to each FP32 accumulator before it is stored. One function for both kernels, and
// the same roundings as the unfused kernels (kernels/linear_gemm.h).
#pragma once

#include "kernels/activation.h"
#include "kernels/fp8_gemm.h"
#include "kernels/gpu.h"
#include "kernels/linear_gemm.h"

namespace ht::gpu::inline HT_GPU_NS {

namespace gemm_epilogue {

struct Params {
  const void* a = nullptr;
  const void* b = nullptr;
  std::int64_t M = 0, N = 0, K = 0;
  Epilogue epilogue = Epilogue::store_f32;
  float beta = 0;
  float* c = nullptr;            // store_f32
  void* out = nullptr;           // the other epilogues
  void* pre = nullptr;
  const void* bias = nullptr;
  const void* saved = nullptr;
  Activation act = Activation::none;
  int vector_loads = 1;          // mma kernel: cp.async 16-byte copies (vector_loads_ok)
  // Split-K (the mma kernel): block z multiplies K elements [z·k_split, (z+1)·k_split) and
  // stores its FP32 partial at c + z·c_split_stride; unsplit, k_split = K and the stride is 0.
  std::int64_t k_split = 0, c_split_stride = 0;
  // FP8 (the Hopper GEMM's FP8 form): the sums are multiplied by *scale_inv_a · *scale_inv_b
  // before the epilogue; null for 16-bit operands.
  const float* scale_inv_a = nullptr;
  const float* scale_inv_b = nullptr;
};

inline Params gemm_params(const LinearGemmArgs& args) {
  const GemmArgs& g = args.gemm;
  Params p;
  p.a = g.a;
  p.b = g.b;
  p.M = g.M;
  p.N = g.N;
  p.K = g.K;
  p.k_split = g.K;
  p.epilogue = args.epilogue;
  p.beta = g.beta;
  p.c = g.c;
  p.out = args.out;
  p.pre = args.pre;
  p.bias = args.bias;
  p.saved = args.saved;
  p.act = args.act;
  return p;
}

// The FP8 GEMM's (kernels/fp8_gemm.h): its sums scaled by the operands' inverse scales, bf16 out.
inline Params fp8_gemm_params(const Fp8GemmArgs& a) {
  Params p;
  p.a = a.a;
  p.b = a.b;
  p.M = a.M;
  p.N = a.N;
  p.K = a.K;
  p.k_split = a.K;
  p.epilogue = a.epilogue;
  p.beta = a.beta;
  p.c = a.c;
  p.out = a.out;
  p.pre = a.pre;
  p.bias = a.bias;
  p.saved = a.saved;
  p.act = a.act;
  p.scale_inv_a = a.a_scale_inv;
  p.scale_inv_b = a.b_scale_inv;
  return p;
}

// Applies the epilogue to the accumulators of C[m, n] and C[m, n + 1] and stores them
// (elements outside the matrix are skipped).
template <class T>
__device__ __forceinline__ void store_pair(const Params& p, std::int64_t m, std::int64_t n, float v0, float v1) {
  if (m >= p.M) return;
  const float vals[2] = {v0, v1};
  for (int e = 0; e < 2; ++e) {
    const std::int64_t col = n + e;
    if (col >= p.N) return;
    const std::int64_t i = m * p.N + col;
    const float acc = vals[e];
    switch (p.epilogue) {
      case Epilogue::store_f32: {
        float* c = p.c + blockIdx.z * p.c_split_stride;  // (a split-K partial's own slice)
        c[i] = p.beta == 0.0f ? acc : acc + p.beta * c[i];
        break;
      }
      case Epilogue::bias_act: {
        const T z = from_float<T>(acc + (p.bias ? to_float(static_cast<const T*>(p.bias)[col]) : 0.0f));
        if (p.pre) static_cast<T*>(p.pre)[i] = z;
        static_cast<T*>(p.out)[i] = from_float<T>(activate(p.act, to_float(z)));
        break;
      }
      case Epilogue::cast:
        static_cast<T*>(p.out)[i] = from_float<T>(acc);
        break;
      case Epilogue::cast_act_grad: {
        const float dx = to_float(from_float<T>(acc));
        const float d = activation_derivative(p.act, to_float(static_cast<const T*>(p.saved)[i]));
        static_cast<T*>(p.out)[i] = from_float<T>(dx * d);
        break;
      }
    }
  }
}

}  // namespace gemm_epilogue

}  // namespace ht::gpu::inline HT_GPU_NS
