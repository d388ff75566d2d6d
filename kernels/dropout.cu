// Dropout (kernels/dropout.h): a grid-stride pass, the mask regenerated per element from its
// counter; the same kernel serves the forward and the backward.
#include "kernels/launch.h"

namespace ht::gpu::inline HT_GPU_NS {

namespace {

constexpr int kBlock = 256;

// in, out: (n) T
template <class T>
__global__ void __launch_bounds__(kBlock) dropout_kernel(const T* __restrict__ in, T* __restrict__ out, std::int64_t n, float p,
                                                         DropoutKey key, const DeviceStepState* __restrict__ state) {
  const std::int64_t step = steps_done(*state) + 1;
  const float scale = 1.0f / (1.0f - p);
  for (std::int64_t i = std::int64_t{blockIdx.x} * kBlock + threadIdx.x; i < n; i += std::int64_t{gridDim.x} * kBlock)
    out[i] = from_float<T>(dropout_keeps(key, step, i, p) ? to_float(in[i]) * scale : 0.0f);
}

}  // namespace

void launch_dropout(const DropoutArgs& a, const Stream& s) {
  if (a.n == 0) return;
  dispatch(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    HT_LAUNCH(dropout_kernel<T>, (LaunchConfig{grid_for(a.n, kBlock, s), kBlock}), s, static_cast<const T*>(a.in),
              static_cast<T*>(a.out), a.n, a.p, a.key, a.state);
  });
}

}  // namespace ht::gpu::inline HT_GPU_NS
