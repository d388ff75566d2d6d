// What both attention paths share - kernels/attention_tc.cu (fp16/bf16 on tensor cores) and
// kernels/attention_fp32.cu (fp32 on CUDA cores): where a (batch, head) lives, the dropout mask as
// a kernel sees it, the head-size variants, and each path's launchers, which kernels/attention.cu's
// public ones call by dtype.
#pragma once

#include "kernels/launch.h"

namespace ht::gpu::inline HT_GPU_NS::attention {

struct Geometry {  // where one (batch, head) lives in qkv / out
  std::int64_t seq, heads, head_dim, channels;  // T, H, D, C = H·D
};

// A kernel's view of the probabilities' dropout (kernels/attention.h): off, or the step's mask.
struct DropoutMask {
  AttentionDropout d;
  std::int64_t step = 0;
  float keep_scale = 1;  // r = 1/(1 - p)
  __device__ __forceinline__ explicit DropoutMask(const AttentionDropout& dropout)
      : d(dropout), step(dropout.p > 0 ? steps_done(*dropout.state) + 1 : 0), keep_scale(1.0f / (1.0f - dropout.p)) {}
  // Is (query, key) of block (b·H + h) kept? Always, without dropout.
  __device__ __forceinline__ bool keeps(std::int64_t bh, std::int64_t seq, std::int64_t query, std::int64_t key) const {
    return d.p == 0 || attention_keeps(d, step, bh, seq, query, key);
  }
  // The mask of a warp's N m16n8 accumulator tiles: bit 4·nt + e for element e of tile nt, at row
  // row0 + g + 8·(e >> 1) and column col0 + 8·nt + 2t + (e & 1) (the mma.sync layout). Rows are
  // queries and columns keys, or the reverse (kRowsAreKeys: the dK/dV kernel's Sᵀ). Causally
  // masked and past-the-end elements read as kept. Drawn before the scores are live, so the
  // generator's registers never compete with them (nothing spills).
  template <int N, bool kRowsAreKeys>
  __device__ __forceinline__ std::uint32_t tile_bits(std::int64_t bh, std::int64_t seq, std::int64_t row0, std::int64_t col0, int g,
                                                     int t) const {
    static_assert(N <= 8, "32 bits: at most 8 tiles");
    std::uint32_t bits = ~0u;
    if (d.p == 0) return bits;
HT_NO_UNROLL  // a generator's registers at a time, not N tiles' (the forward at head 64 would spill)
    for (int nt = 0; nt < N; ++nt)
      HT_UNROLL
      for (int e = 0; e < 4; ++e) {
        const std::int64_t row = row0 + g + 8 * (e >> 1), col = col0 + 8 * nt + 2 * t + (e & 1);
        const std::int64_t query = kRowsAreKeys ? col : row, key = kRowsAreKeys ? row : col;
        if (key <= query && query < seq && !attention_keeps(d, step, bh, seq, query, key)) bits &= ~(1u << (4 * nt + e));
      }
    return bits;
  }
};

// Calls f(std::integral_constant<int, D_PAD>) for the kernel variant that takes head size d.
template <class F> void with_head_pad(std::int64_t d, F&& f) {
  if (d <= 32) f(std::integral_constant<int, 32>{});
  else if (d <= 64) f(std::integral_constant<int, 64>{});
  else if (d <= kAttentionMaxHeadDim) f(std::integral_constant<int, 128>{});
  else ht::call_failed("attention", "head size above 128", __FILE__, __LINE__);
}

// The fp16/bf16 path (kernels/attention_tc.cu) and the fp32 one (kernels/attention_fp32.cu).
void forward_tc(const AttentionArgs& a, const Geometry& geo, const Stream& s);
void backward_tc(const AttentionBackwardArgs& a, const Geometry& geo, const Stream& s);
void forward_fp32(const AttentionArgs& a, const Geometry& geo, const Stream& s);
void backward_fp32(const AttentionBackwardArgs& a, const Geometry& geo, const Stream& s);

}  // namespace ht::gpu::inline HT_GPU_NS::attention
