// Softmax cross-entropy, forward and logit gradient in one kernel: one block per row, FP32
// math, rows of any length (each thread strides over the row).
#include "kernels/launch.h"
#include "kernels/reduce.cuh"

#include <climits>

namespace ht::gpu::inline HT_GPU_NS {

namespace {

constexpr int kBlock = 128;

// logits: (rows, width) T, labels: (rows) -> row_loss, row_correct: (rows) fp32,
// dlogits: (rows, width) T (when not null), scaled by *loss_scale / grad_divisor. Columns
// [classes, width) are vocabulary padding: outside the softmax, gradient 0.
// A label outside [0, classes) is never used as an index: its row's loss and gradient are NaN,
// which the step's non-finite check then reports (the data readers refuse such labels first).
template <class T>
__global__ void __launch_bounds__(kBlock) cross_entropy_kernel(const T* __restrict__ logits, const std::int32_t* __restrict__ labels,
                                                               std::int64_t classes, std::int64_t width, float* __restrict__ row_loss,
                                                               float* __restrict__ row_correct, T* __restrict__ dlogits,
                                                               const float* __restrict__ loss_scale, float grad_divisor) {
  const std::int64_t r = blockIdx.x;
  const T* z = logits + r * width;
  float max = -INFINITY;
  int argmax = INT_MAX;
  for (std::int64_t c = threadIdx.x; c < classes; c += kBlock) {
    const float v = to_float(z[c]);
    if (v > max) { max = v; argmax = static_cast<int>(c); }
  }
  block_argmax<kBlock>(max, argmax);
  float sum = 0;
  for (std::int64_t c = threadIdx.x; c < classes; c += kBlock) sum += expf(to_float(z[c]) - max);
  sum = block_sum<kBlock>(sum);
  const std::int32_t label = labels[r];
  const bool valid = label >= 0 && label < classes;
  if (threadIdx.x == 0) {
    row_loss[r] = valid ? max + logf(sum) - to_float(z[label]) : NAN;
    if (row_correct) row_correct[r] = valid && argmax == label ? 1.0f : 0.0f;
  }
  if (!dlogits) return;
  const float multiplier = valid ? (loss_scale ? *loss_scale : 1.0f) / grad_divisor : NAN;
  for (std::int64_t c = threadIdx.x; c < width; c += kBlock) {
    float g = 0.0f;  // padding
    if (c < classes) g = (expf(to_float(z[c]) - max) / sum - (c == label ? 1.0f : 0.0f)) * multiplier;
    dlogits[r * width + c] = from_float<T>(g);
  }
}

}  // namespace

void launch_cross_entropy(const CrossEntropyArgs& a, const Stream& s) {
  if (a.rows == 0) return;
  dispatch(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    HT_LAUNCH(cross_entropy_kernel<T>, (LaunchConfig{static_cast<unsigned>(a.rows), kBlock}), s, static_cast<const T*>(a.logits),
              a.labels, a.classes, a.width(), a.row_loss, a.row_correct, static_cast<T*>(a.dlogits), a.loss_scale,
              a.grad_divisor);
  });
}

}  // namespace ht::gpu::inline HT_GPU_NS
