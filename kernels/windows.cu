// The token-window gather (kernels/windows.h): one thread per position of the batch.
#include "kernels/launch.h"

namespace ht::gpu::inline HT_GPU_NS {

namespace {

constexpr int kBlock = 256;

// tokens: (n) i32 -> inputs: (B, T) i32, targets: (B·T) i32
__global__ void __launch_bounds__(kBlock) gather_windows_kernel(WindowArgs a) {
  const std::int64_t n = a.rows * a.length;
  for (std::int64_t i = std::int64_t{blockIdx.x} * kBlock + threadIdx.x; i < n; i += std::int64_t{gridDim.x} * kBlock) {
    const std::int64_t r = i / a.length, t = i % a.length;
    const std::int32_t* w = a.tokens + window_start(a, r);
    a.inputs[i] = w[t];
    a.targets[i] = w[t + 1];
  }
}

}  // namespace

void launch_gather_windows(const WindowArgs& a, const Stream& s) {
  if (a.rows * a.length == 0) return;
  HT_LAUNCH(gather_windows_kernel, (LaunchConfig{grid_for(a.rows * a.length, kBlock, s), kBlock}), s, a);
}

}  // namespace ht::gpu::inline HT_GPU_NS
