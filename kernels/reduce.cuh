// Deterministic reductions (fixed order: the same bits on every run): warp and block sums, the
// block argmax, and the second pass of a split sum.
#pragma once

#include "kernels/gpu.h"

namespace ht::gpu::inline HT_GPU_NS {

template <class T> __device__ __forceinline__ T warp_sum(T v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// Sum over a block of kBlock threads (a multiple of 32, at most 1024); every thread gets it.
// Contains barriers: call it from all threads of the block.
template <int kBlock, class T> __device__ __forceinline__ T block_sum(T v) {
  static_assert(kBlock % 32 == 0 && kBlock <= 1024, "block must be whole warps");
  __shared__ T partial[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_sum(v);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < kBlock / 32 ? partial[lane] : T(0);
  v = warp_sum(v);
  __syncthreads();  // partial[] may be reused by the caller's next reduction
  return v;
}

// Max over a block, with the smallest index among equal maxima (first occurrence, as the CPU
// reference's argmax). NaNs never win.
template <int kBlock> __device__ __forceinline__ void block_argmax(float& value, int& index) {
  __shared__ float best_value[32];
  __shared__ int best_index[32];
  auto better = [](float v, int i, float bv, int bi) { return v > bv || (v == bv && i < bi); };
  for (int offset = 16; offset > 0; offset >>= 1) {
    const float v = __shfl_xor_sync(0xffffffffu, value, offset);
    const int i = __shfl_xor_sync(0xffffffffu, index, offset);
    if (better(v, i, value, index)) { value = v; index = i; }
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) { best_value[warp] = value; best_index[warp] = index; }
  __syncthreads();
  value = lane < kBlock / 32 ? best_value[lane] : -INFINITY;
  index = lane < kBlock / 32 ? best_index[lane] : 0x7fffffff;
  for (int offset = 16; offset > 0; offset >>= 1) {
    const float v = __shfl_xor_sync(0xffffffffu, value, offset);
    const int i = __shfl_xor_sync(0xffffffffu, index, offset);
    if (better(v, i, value, index)) { value = v; index = i; }
  }
  __syncthreads();
}

// The second pass of a sum split into slices so that it fills the GPU (split-K's GEMM partials,
// kernels/gemm_mma.cuh; column sums' row slices, kernels/column_sums.cuh):
//   partials (slices, N, n) fp32 -> dst[k][i] = Σ_z partials[z][k][i] + beta·dst[k][i],
// the slices added in order z = 0, 1, ... (beta 0: dst is only written).
template <int N> struct SliceSumOutputs {
  float* dst[N];
};
constexpr int kSliceSumBlock = 256;
template <int N>
__global__ void __launch_bounds__(kSliceSumBlock) sum_slices_kernel(const float* __restrict__ partials, int slices, std::int64_t n,
                                                                    SliceSumOutputs<N> out, float beta) {
  for (std::int64_t i = std::int64_t{blockIdx.x} * kSliceSumBlock + threadIdx.x; i < n; i += std::int64_t{gridDim.x} * kSliceSumBlock)
    HT_UNROLL for (int k = 0; k < N; ++k) {  // (unrolled: out.dst stays in registers)
      float sum = 0;
      for (int z = 0; z < slices; ++z) sum += partials[(std::int64_t{z} * N + k) * n + i];
      out.dst[k][i] = beta == 0.0f ? sum : sum + beta * out.dst[k][i];
    }
}
template <int N>
void launch_sum_slices(const float* partials, int slices, std::int64_t n, SliceSumOutputs<N> out, float beta, const Stream& s) {
  HT_LAUNCH(sum_slices_kernel<N>, (LaunchConfig{grid_for(n, kSliceSumBlock, s), kSliceSumBlock}), s, partials, slices, n, out, beta);
}

}  // namespace ht::gpu::inline HT_GPU_NS
