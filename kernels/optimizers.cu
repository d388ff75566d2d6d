// Fused SGD and AdamW over the flat arenas, a block per chunk of the chunk table (see
// kernels/optimizers.h). The element update is the HT_HD function the CPU reference calls; the
// skip decision is read on the device.
#include "kernels/launch.h"

namespace ht::gpu::inline HT_GPU_NS {

namespace {

constexpr int kBlock = 256;
// AdamW holds an element's master weight, moments, gradient and working copy, the step's
// constants and 1/scale: at most 40 registers keeps 6 blocks (75% occupancy) an SM.
constexpr int kAdamWBlocksPerSM = 6;

// master, grads: (arena) fp32; moments: fp32, element i of the arena at i - offset (a shard's);
// working: (arena) W, or unused when W is float (fp32 mode); chunks: (num_chunks), block b takes
// chunks b, b + grid, ...
template <class W>
__global__ void __launch_bounds__(kBlock, kAdamWBlocksPerSM) adamw_kernel(float* __restrict__ master, W* __restrict__ working,
                                                       float* __restrict__ grads, float* __restrict__ m, float* __restrict__ v,
                                                       std::int64_t offset, const GradChunk* __restrict__ chunks, int num_chunks,
                                                       AdamWConfig config, const DeviceStepState* __restrict__ state) {
  const StepControl control = state->control;
  const float inv_scale = unscale_factor(*state);  // the arena holds scaled gradients (kernels/grad_stats.h)
  const AdamWStepConstants k = adamw_constants(config, control.lr, control.t);
  for (int c = blockIdx.x; c < num_chunks; c += gridDim.x) {
    const GradChunk chunk = chunks[c];
    const float decay = chunk.decay ? config.weight_decay : 0.0f;
    for (std::int64_t i = chunk.begin + threadIdx.x; i < chunk.end; i += kBlock) {
      if (!control.found_inf) {
        float p = master[i], mi = m[i - offset], vi = v[i - offset];
        adamw_update(p, mi, vi, applied_gradient(grads[i], inv_scale, control), config, decay, k);
        master[i] = p;
        m[i - offset] = mi;
        v[i - offset] = vi;
        if constexpr (!std::is_same_v<W, float>) working[i] = from_float<W>(p);
      }
      grads[i] = 0.0f;
    }
  }
}

// As adamw_kernel; momentum is null when SGD runs without momentum.
template <class W>
__global__ void __launch_bounds__(kBlock) sgd_kernel(float* __restrict__ master, W* __restrict__ working,
                                                     float* __restrict__ grads, float* __restrict__ momentum, std::int64_t offset,
                                                     const GradChunk* __restrict__ chunks, int num_chunks, SgdConfig config,
                                                     const DeviceStepState* __restrict__ state) {
  const StepControl control = state->control;
  const float inv_scale = unscale_factor(*state);  // the arena holds scaled gradients (kernels/grad_stats.h)
  for (int c = blockIdx.x; c < num_chunks; c += gridDim.x) {
    const GradChunk chunk = chunks[c];
    const float decay = chunk.decay ? config.weight_decay : 0.0f;
    for (std::int64_t i = chunk.begin + threadIdx.x; i < chunk.end; i += kBlock) {
      if (!control.found_inf) {
        float p = master[i], buf = momentum ? momentum[i - offset] : 0.0f;
        sgd_update(p, buf, applied_gradient(grads[i], inv_scale, control), config, decay, control.lr, control.t);
        master[i] = p;
        if (momentum) momentum[i - offset] = buf;
        if constexpr (!std::is_same_v<W, float>) working[i] = from_float<W>(p);
      }
      grads[i] = 0.0f;
    }
  }
}

}  // namespace

void launch_adamw_step(const AdamWArgs& a, const Stream& s) {
  if (a.num_chunks == 0) return;
  const LaunchConfig cfg{static_cast<unsigned>(a.num_chunks), kBlock};
  dispatch(a.working ? a.working_dtype : DType::f32, [&](auto tag) {
    using W = typename decltype(tag)::type;
    HT_LAUNCH(adamw_kernel<W>, cfg, s, a.master, static_cast<W*>(a.working), a.grads, a.moment1, a.moment2, a.state_offset,
              a.chunks, a.num_chunks, a.config, a.state);
  });
}

void launch_sgd_step(const SgdArgs& a, const Stream& s) {
  if (a.num_chunks == 0) return;
  const LaunchConfig cfg{static_cast<unsigned>(a.num_chunks), kBlock};
  dispatch(a.working ? a.working_dtype : DType::f32, [&](auto tag) {
    using W = typename decltype(tag)::type;
    HT_LAUNCH(sgd_kernel<W>, cfg, s, a.master, static_cast<W*>(a.working), a.grads, a.moment1, a.state_offset, a.chunks,
              a.num_chunks, a.config, a.state);
  });
}

}  // namespace ht::gpu::inline HT_GPU_NS
