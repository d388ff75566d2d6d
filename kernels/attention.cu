// Causal self-attention, FlashAttention-2 style (kernels/attention.h for the math and rounding):
// the public launchers, which take each dtype to its path - fp16/bf16 on tensor cores
// (kernels/attention_tc.cu), fp32 on CUDA cores (kernels/attention_fp32.cu), both over
// kernels/attention_paths.cuh - and Δ = rowsum(dO ∘ O), which both paths' backward reads.
#include "kernels/attention_paths.cuh"
#include "kernels/reduce.cuh"

namespace ht::gpu::inline HT_GPU_NS {

namespace {

// Δ = rowsum(dO ∘ O) for every (b, h, t): out, dout: (B, T, C) T -> delta: (B, H, T) fp32.
// A warp a row: lane l sums elements l, l + 32, ... (the warp's loads are one contiguous run of
// the row), then the fixed shuffle tree (kernels/reduce.cuh) adds the lanes.
constexpr int kDeltaBlock = 256, kDeltaWarps = kDeltaBlock / 32;
template <class T>
__global__ void __launch_bounds__(kDeltaBlock) attention_delta_kernel(const T* __restrict__ out, const T* __restrict__ dout,
                                                                      float* __restrict__ delta, std::int64_t n, attention::Geometry geo) {
  const int lane = threadIdx.x % 32;
  const std::int64_t first = std::int64_t{blockIdx.x} * kDeltaWarps + threadIdx.x / 32;
  for (std::int64_t i = first; i < n; i += std::int64_t{gridDim.x} * kDeltaWarps) {
    const std::int64_t t = i % geo.seq, bh = i / geo.seq, h = bh % geo.heads, b = bh / geo.heads;
    const std::int64_t at = (b * geo.seq + t) * geo.channels + h * geo.head_dim;
    float sum = 0;
    for (std::int64_t d = lane; d < geo.head_dim; d += 32) sum += to_float(dout[at + d]) * to_float(out[at + d]);
    sum = warp_sum(sum);
    if (lane == 0) delta[i] = sum;
  }
}

}  // namespace

void launch_attention(const AttentionArgs& a, const Stream& s) {
  if (a.batch * a.seq * a.heads == 0) return;
  const attention::Geometry geo{a.seq, a.heads, a.head_dim, a.heads * a.head_dim};
  if (a.dtype == DType::f32) attention::forward_fp32(a, geo, s);
  else attention::forward_tc(a, geo, s);
}

void launch_attention_backward(const AttentionBackwardArgs& a, const Stream& s) {
  if (a.batch * a.seq * a.heads == 0) return;
  const attention::Geometry geo{a.seq, a.heads, a.head_dim, a.heads * a.head_dim};
  const std::int64_t rows = a.batch * a.heads * a.seq;
  dispatch(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    HT_LAUNCH(attention_delta_kernel<T>, (LaunchConfig{grid_for(rows * 32, kDeltaBlock, s), kDeltaBlock}), s,
              static_cast<const T*>(a.out), static_cast<const T*>(a.dout), a.delta, rows, geo);
  });
  if (a.dtype == DType::f32) attention::backward_fp32(a, geo, s);
  else attention::backward_tc(a, geo, s);
}

}  // namespace ht::gpu::inline HT_GPU_NS
