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

// The walk both optimizers take over the arenas: block b takes chunks b, b + grid, ...; each
// element's gradient is unscaled and clipped as it is read, update(p, i, g, decay) changes the
// master weight p (and the optimizer's own state at i), the working copy follows, and the
// gradient is zeroed. On found_inf nothing but the zeroing happens.
// master, grads: (arena) fp32; working: (arena) W, or unused when W is float (fp32 mode);
// chunks: (num_chunks).
template <class W, class Update>
__device__ __forceinline__ void update_arena(float* __restrict__ master, W* __restrict__ working, float* __restrict__ grads,
                                             const GradChunk* __restrict__ chunks, int num_chunks, float weight_decay,
                                             const StepControl& control, float inv_scale, Update update) {
  for (int c = blockIdx.x; c < num_chunks; c += gridDim.x) {
    const GradChunk chunk = chunks[c];
    const float decay = chunk.decay ? weight_decay : 0.0f;
    for (std::int64_t i = chunk.begin + threadIdx.x; i < chunk.end; i += kBlock) {
      if (!control.found_inf) {
        float p = master[i];
        update(p, i, applied_gradient(grads[i], inv_scale, control), decay);
        master[i] = p;
        if constexpr (!std::is_same_v<W, float>) working[i] = from_float<W>(p);
      }
      grads[i] = 0.0f;
    }
  }
}

// m, v: fp32, element i of the arena at i - offset (a shard's); the rest as update_arena.
template <class W>
__global__ void __launch_bounds__(kBlock, kAdamWBlocksPerSM) adamw_kernel(float* __restrict__ master, W* __restrict__ working,
                                                       float* __restrict__ grads, float* __restrict__ m, float* __restrict__ v,
                                                       std::int64_t offset, const GradChunk* __restrict__ chunks, int num_chunks,
                                                       AdamWConfig config, const DeviceStepState* __restrict__ state) {
  const StepControl control = state->control;
  const AdamWStepConstants k = adamw_constants(config, control.lr, control.t);
  update_arena(master, working, grads, chunks, num_chunks, config.weight_decay, control, unscale_factor(*state),
               [&](float& p, std::int64_t i, float g, float decay) {
                 float mi = m[i - offset], vi = v[i - offset];
                 adamw_update(p, mi, vi, g, config, decay, k);
                 m[i - offset] = mi;
                 v[i - offset] = vi;
               });
}

// momentum: as adamw_kernel's moments, or null when SGD runs without momentum.
template <class W>
__global__ void __launch_bounds__(kBlock) sgd_kernel(float* __restrict__ master, W* __restrict__ working,
                                                     float* __restrict__ grads, float* __restrict__ momentum, std::int64_t offset,
                                                     const GradChunk* __restrict__ chunks, int num_chunks, SgdConfig config,
                                                     const DeviceStepState* __restrict__ state) {
  const StepControl control = state->control;
  update_arena(master, working, grads, chunks, num_chunks, config.weight_decay, control, unscale_factor(*state),
               [&](float& p, std::int64_t i, float g, float decay) {
                 float buf = momentum ? momentum[i - offset] : 0.0f;
                 sgd_update(p, buf, g, config, decay, control.lr, control.t);
                 if (momentum) momentum[i - offset] = buf;
               });
}

// One launch over the chunk table, with the kernel instantiated for the working copy's dtype:
// launch(cfg, working) with `working` typed.
template <class Launch> void launch_over_arena(const OptimizerArgs& a, const Stream& s, Launch launch) {
  if (a.num_chunks == 0) return;
  const LaunchConfig cfg{static_cast<unsigned>(a.num_chunks), kBlock};
  dispatch(a.working ? a.working_dtype : DType::f32, [&](auto tag) {
    using W = typename decltype(tag)::type;
    launch(cfg, static_cast<W*>(a.working));
  });
}

}  // namespace

void launch_adamw_step(const AdamWArgs& a, const Stream& s) {
  launch_over_arena(a, s, [&](const LaunchConfig& cfg, auto* working) {
    using W = std::remove_pointer_t<decltype(working)>;
    HT_LAUNCH(adamw_kernel<W>, cfg, s, a.master, working, a.grads, a.moment1, a.moment2, a.state_offset, a.chunks,
              a.num_chunks, a.config, a.state);
  });
}

void launch_sgd_step(const SgdArgs& a, const Stream& s) {
  launch_over_arena(a, s, [&](const LaunchConfig& cfg, auto* working) {
    using W = std::remove_pointer_t<decltype(working)>;
    HT_LAUNCH(sgd_kernel<W>, cfg, s, a.master, working, a.grads, a.moment1, a.state_offset, a.chunks, a.num_chunks,
              a.config, a.state);
  });
}

}  // namespace ht::gpu::inline HT_GPU_NS
