// The grid-stride map every element-wise kernel is: out[i] = f(in[i]...). Where `packed` (the
// launcher checked packs_aligned on every pointer), the main loop moves kPack elements per
// access - 16 bytes of fp32, 8 of fp16/bf16, so a warp's request is 512 or 256 bytes instead
// of 128 or 64 - and the last n % kPack elements go one at a time.
#pragma once

#include "kernels/gpu.h"

namespace ht::gpu::inline HT_GPU_NS {

__device__ __forceinline__ std::int64_t first_index() { return std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x; }
__device__ __forceinline__ std::int64_t grid_stride() { return std::int64_t{gridDim.x} * blockDim.x; }

template <class T> __device__ __forceinline__ Pack<T> load_pack(const T* x, std::int64_t p) {
  return reinterpret_cast<const Pack<T>*>(x)[p];
}

// out: (n) Out = f(in: (n) In ...); out may alias an input of its type.
template <class Out, class F, class... In>
__device__ __forceinline__ void map_elements(std::int64_t n, bool packed, F f, Out* out, const In*... in) {
  std::int64_t done = 0;
  if (packed) {
    const std::int64_t packs = n / kPack;
    for (std::int64_t p = first_index(); p < packs; p += grid_stride()) {
      Pack<Out> result;
      [&](const Pack<In>&... a) {
        HT_UNROLL for (int k = 0; k < kPack; ++k) result.v[k] = f(a.v[k]...);
      }(load_pack(in, p)...);
      reinterpret_cast<Pack<Out>*>(out)[p] = result;
    }
    done = packs * kPack;
  }
  for (std::int64_t i = done + first_index(); i < n; i += grid_stride()) out[i] = f(in[i]...);
}

}  // namespace ht::gpu::inline HT_GPU_NS
