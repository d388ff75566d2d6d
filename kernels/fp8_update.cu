// FP8's scale updates (kernels/fp8_update.h): a thread a tensor, one block of them per 256.
#include "kernels/launch.h"

namespace ht::gpu::inline HT_GPU_NS {

namespace {

constexpr int kThreads = 256;

// tensors: count FP8 tensors' scales, amaxes and (count, history_len) histories, fp32.
__global__ void __launch_bounds__(kThreads) fp8_update_kernel(Fp8UpdateArgs a) {
  const std::int32_t i = static_cast<std::int32_t>(blockIdx.x * kThreads + threadIdx.x);
  if (a.what == Fp8Update::from_current) {
    if (i == 0) fp8_update_slot(a, a.slot);
  } else if (i < a.tensors.count) {
    fp8_update_slot(a, i);
  }
}

}  // namespace

void launch_fp8_update(const Fp8UpdateArgs& a, const Stream& s) {
  const std::int32_t n = a.what == Fp8Update::from_current ? 1 : a.tensors.count;
  if (n == 0) return;
  HT_LAUNCH(fp8_update_kernel, (LaunchConfig{dim3(static_cast<unsigned>((n + kThreads - 1) / kThreads)), dim3(kThreads)}),
            s, a);
}

}  // namespace ht::gpu::inline HT_GPU_NS
