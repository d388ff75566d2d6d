// The loss scaler's kernels: the fused multi-tensor read-only pass over the gradient arena
// (unscaled in registers: inf/NaN check + norm²), the one-block finalisation, and the one-thread
// scaler update.
#include "kernels/launch.h"
#include "kernels/reduce.cuh"

#include <cmath>

namespace ht::gpu::inline HT_GPU_NS {

namespace {

constexpr int kBlock = 256;

// grads: (arena) fp32, scaled, read only; chunks: (num_chunks), block b takes chunks b, b + grid, ...
// -> block_norm2: (gridDim.x), tensor_nonfinite: (tensors) set to 1 where an unscaled value is inf/NaN.
__global__ void __launch_bounds__(kBlock) check_norm_kernel(const float* __restrict__ grads, const GradChunk* __restrict__ chunks,
                                                                    int num_chunks, const DeviceStepState* __restrict__ state,
                                                                    float* __restrict__ block_norm2,
                                                                    std::int32_t* __restrict__ tensor_nonfinite) {
  const float inv_scale = unscale_factor(*state);
  float norm2 = 0;
  for (int k = blockIdx.x; k < num_chunks; k += gridDim.x) {
    const GradChunk chunk = chunks[k];
    int nonfinite = 0;
    for (std::int64_t i = chunk.begin + threadIdx.x; i < chunk.end; i += kBlock) {
      const float unscaled = grads[i] * inv_scale;  // inf/NaN here whether g or 1/scale overflowed
      nonfinite |= !std::isfinite(unscaled);
      norm2 += unscaled * unscaled;
    }
    if (__syncthreads_or(nonfinite) && threadIdx.x == 0) atomicOr(&tensor_nonfinite[chunk.tensor], 1);
  }
  norm2 = block_sum<kBlock>(norm2);
  if (threadIdx.x == 0) block_norm2[blockIdx.x] = norm2;
}

// One block: Σ partials (in double), OR of the flags (copied to the step's log and cleared),
// then the step's control values.
__global__ void __launch_bounds__(kBlock) finalize_grad_stats_kernel(FinalizeArgs a) {
  double norm2 = 0;
  for (int b = threadIdx.x; b < a.num_blocks; b += kBlock) norm2 += a.block_norm2[b];
  norm2 = block_sum<kBlock>(norm2);
  int found = 0;
  std::int32_t* log = a.nonfinite_ring ? a.nonfinite_ring + steps_done(*a.state) % a.ring_slots * a.num_tensors : nullptr;
  for (int t = threadIdx.x; t < a.num_tensors; t += kBlock) {
    const std::int32_t flag = a.tensor_nonfinite[t];
    found |= flag;
    if (log) log[t] = flag;
    a.tensor_nonfinite[t] = 0;
  }
  found = __syncthreads_or(found);
  if (threadIdx.x == 0) finish_step_control(*a.state, norm2, found, a.max_grad_norm, a.schedule);
}

__global__ void __launch_bounds__(1) update_scaler_kernel(ScalerUpdateArgs a) { finish_scaler_update(*a.state, a.config, a.records, a.ring_slots); }

}  // namespace

// One block per chunk, whatever the device: each chunk's partial sum is formed in the same order
// on every GPU model and MIG slice, so ranks on different hardware compute the same norm - and
// the same clip coefficient - bit for bit.
int grad_stats_blocks(int num_chunks) { return std::max(1, num_chunks); }

void launch_check_norm(const CheckNormArgs& a, const Stream& s) {
  HT_LAUNCH(check_norm_kernel, (LaunchConfig{static_cast<unsigned>(a.num_blocks), kBlock}), s, a.grads, a.chunks,
            a.num_chunks, a.state, a.block_norm2, a.tensor_nonfinite);
}

void launch_finalize_grad_stats(const FinalizeArgs& a, const Stream& s) {
  HT_LAUNCH(finalize_grad_stats_kernel, (LaunchConfig{1, kBlock}), s, a);
}

void launch_update_scaler(const ScalerUpdateArgs& a, const Stream& s) {
  HT_LAUNCH(update_scaler_kernel, (LaunchConfig{1, 1}), s, a);
}

}  // namespace ht::gpu::inline HT_GPU_NS
