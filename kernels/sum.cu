// A one-block sum (kernels/sum.h), in the fixed order of kernels/reduce.cuh's block_sum.
#include "kernels/launch.h"
#include "kernels/reduce.cuh"

namespace ht::gpu::inline HT_GPU_NS {

namespace {

constexpr int kBlock = 256;

// values: (n) fp32 -> *accumulator += factor * Σ values. One block.
__global__ void __launch_bounds__(kBlock) sum_kernel(const float* __restrict__ values, std::int64_t n, float factor,
                                                     float* __restrict__ accumulator) {
  float s = 0;
  for (std::int64_t i = threadIdx.x; i < n; i += kBlock) s += values[i];
  s = block_sum<kBlock>(s);
  if (threadIdx.x == 0) *accumulator += factor * s;
}

}  // namespace

void launch_sum(const SumArgs& a, const Stream& s) {
  HT_LAUNCH(sum_kernel, (LaunchConfig{1, kBlock}), s, a.values, a.n, a.factor, a.accumulator);
}

}  // namespace ht::gpu::inline HT_GPU_NS
