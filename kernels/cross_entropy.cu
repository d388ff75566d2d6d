// Softmax cross-entropy, forward and logit gradient in one kernel, as llm.c's fused classifier:
// a warp a row, two passes over it, FP32 math -
//   pass 1 reads the row once: its max, the sum of exp(z - max) kept online (rescaled whenever
//          the max grows), its argmax and the label's logit;
//   pass 2 writes the logit gradient, in place over the logits where the caller passes
//          dlogits == logits (the op does in training: the logits are dead once the loss is taken).
// A block is kRows warps, one row each: its labels are read, and its losses and correct flags
// written, kRows at a time by one warp (one request each, not one a row), which keeps the
// small per-row accesses from dominating short rows. Where the rows start 16-byte aligned
// (packs_aligned, and a width that is a multiple of kPack) each lane moves kPack elements an
// access: a warp's request is 256 bytes of fp16 or 512 of fp32, every sector whole.
#include "kernels/launch.h"
#include "kernels/reduce.cuh"

#include <climits>

namespace ht::gpu::inline HT_GPU_NS {

namespace {

constexpr int kRows = 8, kBlock = 32 * kRows;
constexpr int kBlocksPerSm = 2048 / kBlock;  // a full SM: at most 32 registers a thread

// The softmax statistics of part of a row: max, Σ exp(z - max), and the argmax (first occurrence).
struct RowStats {
  float max = -INFINITY, sum = 0.0f;
  int argmax = INT_MAX;
};

__device__ __forceinline__ void add(RowStats& s, float v, int c) {
  if (v > s.max) {
    s.sum = s.sum * expf(s.max - v) + 1.0f;  // expf(-inf) = 0 for the first value
    s.max = v;
    s.argmax = c;
  } else if (v != -INFINITY) {
    s.sum += expf(v - s.max);  // a NaN logit makes the sum NaN: the step's non-finite check sees it
  }
}

// Merges two parts' statistics; an empty part (max -inf) adds its sum times 0 (a NaN stays NaN).
__device__ __forceinline__ RowStats merge(const RowStats& a, const RowStats& b) {
  RowStats r;
  r.max = fmaxf(a.max, b.max);
  r.sum = a.sum * (a.max == -INFINITY ? 0.0f : expf(a.max - r.max)) + b.sum * (b.max == -INFINITY ? 0.0f : expf(b.max - r.max));
  const bool b_wins = b.max > a.max || (b.max == a.max && b.argmax < a.argmax);
  r.argmax = b_wins ? b.argmax : a.argmax;
  return r;
}

__device__ __forceinline__ RowStats warp_merge(RowStats s) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    RowStats other;
    other.max = __shfl_xor_sync(0xffffffffu, s.max, offset);
    other.sum = __shfl_xor_sync(0xffffffffu, s.sum, offset);
    other.argmax = __shfl_xor_sync(0xffffffffu, s.argmax, offset);
    s = merge(s, other);
  }
  return s;
}

// Calls f(c, k) for the columns c of the row this lane reads, k its place in the lane's access:
// packed, lane l takes packs l, l + 32, ... (kPack columns each); else columns l, l + 32, ...
template <bool kPacked, class F> __device__ __forceinline__ void for_lane_columns(std::int64_t width, int lane, F f) {
  if constexpr (kPacked) {
    for (std::int64_t p = lane; p < width / kPack; p += 32) f(p);
  } else {
    for (std::int64_t c = lane; c < width; c += 32) f(c);
  }
}

// logits: (rows, width) T, labels: (rows) -> row_loss, row_correct: (rows) fp32,
// dlogits: (rows, width) T (when not null; may be logits itself), scaled by *loss_scale /
// grad_divisor. Columns [classes, width) are vocabulary padding: outside the softmax, gradient 0.
// A label outside [0, classes) is never used as an index: its row's loss and gradient are NaN,
// which the step's non-finite check then reports (the data readers refuse such labels first).
template <class T, bool kPacked>
__global__ void __launch_bounds__(kBlock, kBlocksPerSm) cross_entropy_kernel(const T* logits, const std::int32_t* __restrict__ labels,
                                                               std::int64_t rows, std::int64_t classes, std::int64_t width,
                                                               float* __restrict__ row_loss, float* __restrict__ row_correct,
                                                               T* dlogits, const float* __restrict__ loss_scale, float grad_divisor) {
  __shared__ std::int32_t block_labels[kRows];
  __shared__ float block_loss[kRows], block_correct[kRows], block_scale;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const std::int64_t first = std::int64_t{blockIdx.x} * kRows, r = first + warp;
  if (warp == 0) {  // the block's labels and the loss scale, a request each
    if (lane < kRows && first + lane < rows) block_labels[lane] = labels[first + lane];
    if (lane == kRows) block_scale = loss_scale ? *loss_scale : 1.0f;
  }
  __syncthreads();
  if (r < rows) {
    const T* z = logits + r * width;
    const std::int32_t label = block_labels[warp];
    const bool valid = label >= 0 && label < classes;
    // Pass 1: the statistics, and the label's logit from the lane that reads it.
    RowStats s;
    float label_logit = 0.0f;
    for_lane_columns<kPacked>(width, lane, [&](std::int64_t i) {
      if constexpr (kPacked) {
        const Pack<T> v = reinterpret_cast<const Pack<T>*>(z)[i];
        HT_UNROLL for (int k = 0; k < kPack; ++k) {
          const std::int64_t c = i * kPack + k;
          const float x = to_float(v.v[k]);
          if (c < classes) add(s, x, static_cast<int>(c));
          if (c == label) label_logit = x;
        }
      } else {
        const float x = to_float(z[i]);
        if (i < classes) add(s, x, static_cast<int>(i));
        if (i == label) label_logit = x;
      }
    });
    s = warp_merge(s);
    const int owner = valid ? static_cast<int>((kPacked ? label / kPack : label) % 32) : 0;
    label_logit = __shfl_sync(0xffffffffu, label_logit, owner);
    if (lane == 0) {
      block_loss[warp] = valid ? s.max + logf(s.sum) - label_logit : NAN;
      block_correct[warp] = valid && s.argmax == label ? 1.0f : 0.0f;
    }
    // Pass 2: the gradient, (softmax - one-hot) · loss scale / divisor; padding 0.
    if (dlogits) {
      const float multiplier = valid ? block_scale / grad_divisor : NAN;
      const float inv_sum = 1.0f / s.sum;
      auto grad = [&](float x, std::int64_t c) {
        return c < classes ? (expf(x - s.max) * inv_sum - (c == label ? 1.0f : 0.0f)) * multiplier : 0.0f;
      };
      T* dz = dlogits + r * width;
      for_lane_columns<kPacked>(width, lane, [&](std::int64_t i) {
        if constexpr (kPacked) {
          const Pack<T> v = reinterpret_cast<const Pack<T>*>(z)[i];
          Pack<T> g;
          HT_UNROLL for (int k = 0; k < kPack; ++k) g.v[k] = from_float<T>(grad(to_float(v.v[k]), i * kPack + k));
          reinterpret_cast<Pack<T>*>(dz)[i] = g;
        } else {
          dz[i] = from_float<T>(grad(to_float(z[i]), i));
        }
      });
    }
  }
  __syncthreads();
  if (warp == 0 && lane < kRows && first + lane < rows) {  // the block's losses, a request each
    row_loss[first + lane] = block_loss[lane];
    if (row_correct) row_correct[first + lane] = block_correct[lane];
  }
}

}  // namespace

void launch_cross_entropy(const CrossEntropyArgs& a, const Stream& s) {
  if (a.rows == 0) return;
  dispatch(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto* logits = static_cast<const T*>(a.logits);
    auto* dlogits = static_cast<T*>(a.dlogits);
    const LaunchConfig cfg{static_cast<unsigned>((a.rows + kRows - 1) / kRows), kBlock};
    const bool packed = a.width() % kPack == 0 && packs_aligned(logits) && (!dlogits || packs_aligned(static_cast<const T*>(dlogits)));
    if (packed)
      HT_LAUNCH((cross_entropy_kernel<T, true>), cfg, s, logits, a.labels, a.rows, a.classes, a.width(), a.row_loss,
                a.row_correct, dlogits, a.loss_scale, a.grad_divisor);
    else
      HT_LAUNCH((cross_entropy_kernel<T, false>), cfg, s, logits, a.labels, a.rows, a.classes, a.width(), a.row_loss,
                a.row_correct, dlogits, a.loss_scale, a.grad_divisor);
  });
}

}  // namespace ht::gpu::inline HT_GPU_NS
