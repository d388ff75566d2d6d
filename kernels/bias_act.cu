// The linear layer's epilogue (bias + activation, rounded where the policy says), the
// activation's backward, and the bias gradient (a deterministic column reduction).
#include "kernels/activation.h"
#include "kernels/column_sums.cuh"
#include "kernels/elementwise.cuh"
#include "kernels/launch.h"

namespace ht::gpu::inline HT_GPU_NS {

namespace {

constexpr int kBlock = 256;

// acc: (rows, cols) fp32, bias: (cols) T or null -> pre: (rows, cols) T (gelu only), out: (rows, cols) T
template <class T>
__global__ void __launch_bounds__(kBlock) bias_act_kernel(const float* __restrict__ acc, const T* __restrict__ bias,
                                                          T* __restrict__ pre, T* __restrict__ out, std::int64_t rows,
                                                          std::int64_t cols, Activation act) {
  const std::int64_t n = rows * cols;
  for (std::int64_t i = std::int64_t{blockIdx.x} * kBlock + threadIdx.x; i < n; i += std::int64_t{gridDim.x} * kBlock) {
    const T z = from_float<T>(acc[i] + (bias ? to_float(bias[i % cols]) : 0.0f));
    if (pre) pre[i] = z;
    out[i] = from_float<T>(activate(act, to_float(z)));
  }
}

// dout, saved: (n) T -> dpre: (n) T (dpre may alias dout), in packs where aligned (kernels/elementwise.cuh)
template <class T>
__global__ void __launch_bounds__(kBlock) act_backward_kernel(const T* dout, const T* saved, T* dpre, std::int64_t n,
                                                              Activation act, bool packed) {
  map_elements(n, packed, [act](T dy, T z) { return from_float<T>(to_float(dy) * activation_derivative(act, to_float(z))); },
               dpre, dout, saved);
}

// dpre: (rows, cols) T -> dbias: (cols) fp32 +=, column_sums' pass 1 over one row slice (a
// deterministic reduction: kernels/column_sums.cuh). partials: (slices, cols) fp32.
template <class T>
__global__ void __launch_bounds__(column_sums::kCols * column_sums::kRowGroups) bias_grad_kernel(
    const T* __restrict__ dpre, std::int64_t rows, std::int64_t cols, column_sums::Outputs<1> out, std::int64_t rows_per_slice,
    float* __restrict__ partials) {
  const auto term = [&](std::int64_t r, std::int64_t c, float (&v)[1]) { v[0] += to_float(dpre[r * cols + c]); };
  column_sums::slice_sums<1>(term, rows, cols, rows_per_slice, out, partials);
}

}  // namespace

void launch_bias_act(const BiasActArgs& a, const Stream& s) {
  if (a.rows * a.cols == 0) return;
  const LaunchConfig cfg{grid_for(a.rows * a.cols, kBlock, s), kBlock};
  dispatch(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    HT_LAUNCH(bias_act_kernel<T>, cfg, s, a.acc, static_cast<const T*>(a.bias), static_cast<T*>(a.pre),
              static_cast<T*>(a.out), a.rows, a.cols, a.act);
  });
}

void launch_act_backward(const ActBackwardArgs& a, const Stream& s) {
  if (a.n == 0) return;
  const LaunchConfig cfg{grid_for(a.n, kBlock, s), kBlock};
  dispatch(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto *dout = static_cast<const T*>(a.dout), *saved = static_cast<const T*>(a.saved);
    auto* dpre = static_cast<T*>(a.dpre);
    HT_LAUNCH(act_backward_kernel<T>, cfg, s, dout, saved, dpre, a.n, a.act, packs_aligned(dout, saved, static_cast<const T*>(dpre)));
  });
}

void launch_bias_grad(const BiasGradArgs& a, const Stream& s) {
  const column_sums::Outputs<1> out{{a.dbias}};
  dispatch(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    column_sums::launch(a.rows, a.cols, out, s, [&](const LaunchConfig& cfg, std::int64_t rows_per_slice, float* partials) {
      HT_LAUNCH(bias_grad_kernel<T>, cfg, s, static_cast<const T*>(a.dpre), a.rows, a.cols, out, rows_per_slice, partials);
    });
  });
}

}  // namespace ht::gpu::inline HT_GPU_NS
