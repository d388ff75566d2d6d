// Deterministic warp and block reductions (fixed tree order: the same bits on every run).
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

}  // namespace ht::gpu::inline HT_GPU_NS
