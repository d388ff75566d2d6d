// LayerNorm forward and backward (kernels/layernorm.h): a warp per row for the row's statistics
// and dx; the weight and bias gradients in a second pass, a deterministic column reduction
// over row slices (kernels/column_sums.cuh: the same bits on every device).
#include "kernels/column_sums.cuh"
#include "kernels/launch.h"
#include "kernels/reduce.cuh"

namespace ht::gpu::inline HT_GPU_NS {

namespace {

constexpr int kWarps = 8, kBlock = 32 * kWarps;

// x: (rows, C) fp32, weight, bias: (C) fp32 -> out: (rows, C) T, mean, rstd: (rows) fp32
template <class T>
__global__ void __launch_bounds__(kBlock) layernorm_kernel(const float* __restrict__ x, const float* __restrict__ weight,
                                                           const float* __restrict__ bias, T* __restrict__ out,
                                                           float* __restrict__ mean_out, float* __restrict__ rstd_out,
                                                           std::int64_t rows, std::int64_t channels, float eps) {
  const std::int64_t r = std::int64_t{blockIdx.x} * kWarps + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (r >= rows) return;  // a whole warp leaves together: no barrier below, only warp collectives
  const float* row = x + r * channels;
  float sum = 0;
  for (std::int64_t c = lane; c < channels; c += 32) sum += row[c];
  const float mean = warp_sum(sum) / static_cast<float>(channels);
  float var = 0;
  for (std::int64_t c = lane; c < channels; c += 32) var += (row[c] - mean) * (row[c] - mean);
  const float rstd = 1.0f / sqrtf(warp_sum(var) / static_cast<float>(channels) + eps);
  for (std::int64_t c = lane; c < channels; c += 32)
    out[r * channels + c] = from_float<T>((row[c] - mean) * rstd * weight[c] + bias[c]);
  if (lane == 0) mean_out[r] = mean, rstd_out[r] = rstd;
}

// x: (rows, C) fp32, dout: (rows, C) T -> dx: (rows, C) fp32 (= or +=)
template <class T>
__global__ void __launch_bounds__(kBlock) layernorm_dx_kernel(const float* __restrict__ x, const float* __restrict__ weight,
                                                              const float* __restrict__ mean, const float* __restrict__ rstd,
                                                              const T* __restrict__ dout, float* __restrict__ dx, float beta,
                                                              std::int64_t rows, std::int64_t channels) {
  const std::int64_t r = std::int64_t{blockIdx.x} * kWarps + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (r >= rows) return;
  const float* row = x + r * channels;
  const T* dy = dout + r * channels;
  const float m = mean[r], s = rstd[r];
  float sum_g = 0, sum_gx = 0;
  for (std::int64_t c = lane; c < channels; c += 32) {
    const float g = to_float(dy[c]) * weight[c];
    sum_g += g;
    sum_gx += g * (row[c] - m) * s;
  }
  const float mean_g = warp_sum(sum_g) / static_cast<float>(channels);
  const float mean_gx = warp_sum(sum_gx) / static_cast<float>(channels);
  for (std::int64_t c = lane; c < channels; c += 32) {
    const float xhat = (row[c] - m) * s;
    const float d = s * (to_float(dy[c]) * weight[c] - mean_g - xhat * mean_gx);
    float* out = dx + r * channels + c;
    *out = beta == 0.0f ? d : *out + d;
  }
}

// x, dout: (rows, C) -> dweight[c] += Σ_r dout·x̂, dbias[c] += Σ_r dout: column_sums' pass 1
// over one row slice, each row's mean and rstd staged in shared memory. partials: (slices, 2, C) fp32.
template <class T>
__global__ void __launch_bounds__(column_sums::kCols * column_sums::kRowGroups) layernorm_dweight_kernel(
    const float* __restrict__ x, const float* __restrict__ mean, const float* __restrict__ rstd, const T* __restrict__ dout,
    column_sums::Outputs<2> out, std::int64_t rows, std::int64_t channels, std::int64_t rows_per_slice,
    float* __restrict__ partials) {
  const auto row_value = [&](std::int64_t r, int k) { return k == 0 ? mean[r] : rstd[r]; };
  const auto term = [&](std::int64_t r, std::int64_t c, const float (&row)[2], float (&v)[2]) {
    const float dy = to_float(dout[r * channels + c]);
    v[0] += dy * (x[r * channels + c] - row[0]) * row[1];
    v[1] += dy;
  };
  column_sums::slice_sums_with_rows<2, 2>(row_value, term, rows, channels, rows_per_slice, out, partials);
}

}  // namespace

void launch_layernorm(const LayerNormArgs& a, const Stream& s) {
  if (a.rows == 0) return;
  const LaunchConfig cfg{static_cast<unsigned>((a.rows + kWarps - 1) / kWarps), kBlock};
  dispatch(a.out_dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    HT_LAUNCH(layernorm_kernel<T>, cfg, s, a.x, a.weight, a.bias, static_cast<T*>(a.out), a.mean, a.rstd, a.rows, a.channels,
              a.eps);
  });
}

void launch_layernorm_backward(const LayerNormBackwardArgs& a, const Stream& s) {
  if (a.rows == 0 || a.channels == 0) return;
  dispatch(a.dout_dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* dout = static_cast<const T*>(a.dout);
    HT_LAUNCH(layernorm_dx_kernel<T>, (LaunchConfig{static_cast<unsigned>((a.rows + kWarps - 1) / kWarps), kBlock}), s, a.x,
              a.weight, a.mean, a.rstd, dout, a.dx, a.beta, a.rows, a.channels);
    const column_sums::Outputs<2> out{{a.dweight, a.dbias}};
    column_sums::launch(a.rows, a.channels, out, s, [&](const LaunchConfig& cfg, std::int64_t rows_per_slice, float* partials) {
      HT_LAUNCH(layernorm_dweight_kernel<T>, cfg, s, a.x, a.mean, a.rstd, dout, out, a.rows, a.channels, rows_per_slice,
                partials);
    });
  });
}

}  // namespace ht::gpu::inline HT_GPU_NS
