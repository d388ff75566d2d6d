// Element-wise kernels: casts, fills, scaling and sums of two tensors. Grid-stride loops,
// 256 threads a block; the maps take 16-byte (fp32) or 8-byte (fp16/bf16) packs of 4 elements
// where every pointer allows (kernels/elementwise.cuh).
#include "kernels/elementwise.cuh"
#include "kernels/launch.h"

namespace ht::gpu::inline HT_GPU_NS {

namespace {

constexpr int kBlock = 256;

// src: (n) S -> dst: (n) D, rounded to nearest even.
template <class S, class D>
__global__ void __launch_bounds__(kBlock) cast_kernel(const S* __restrict__ src, D* __restrict__ dst, std::int64_t n, bool packed) {
  map_elements(n, packed, [](S x) { return from_float<D>(to_float(x)); }, dst, src);
}

// dst: (n) fp32
__global__ void __launch_bounds__(kBlock) fill_kernel(float* __restrict__ dst, std::int64_t n, float value, bool packed) {
  map_elements(n, packed, [value] { return value; }, dst);
}

// x: (n) fp32, scaled in place
__global__ void __launch_bounds__(kBlock) scale_kernel(float* x, std::int64_t n, float alpha, bool packed) {
  map_elements(n, packed, [alpha](float v) { return v * alpha; }, x, static_cast<const float*>(x));
}

// a: (n) A, b: (n) B -> out: (n) fp32 = a + b (out may alias a)
template <class A, class B>
__global__ void __launch_bounds__(kBlock) add_kernel(const A* a, const B* b, float* out, std::int64_t n, bool packed) {
  map_elements(n, packed, [](A x, B y) { return to_float(x) + to_float(y); }, out, a, b);
}

}  // namespace

void launch_cast(const CastArgs& a, const Stream& s) {
  if (a.n == 0) return;
  const LaunchConfig cfg{grid_for(a.n, kBlock, s), kBlock};
  dispatch2(a.src_dtype, a.dst_dtype, [&](auto src, auto dst) {
    using S = typename decltype(src)::type;
    using D = typename decltype(dst)::type;
    const auto* from = static_cast<const S*>(a.src);
    auto* to = static_cast<D*>(a.dst);
    HT_LAUNCH((cast_kernel<S, D>), cfg, s, from, to, a.n, packs_aligned(from, static_cast<const D*>(to)));
  });
}

void launch_fill(const FillArgs& a, const Stream& s) {
  if (a.n == 0) return;
  HT_LAUNCH(fill_kernel, (LaunchConfig{grid_for(a.n, kBlock, s), kBlock}), s, a.dst, a.n, a.value,
            packs_aligned(static_cast<const float*>(a.dst)));
}

void launch_scale(const ScaleArgs& a, const Stream& s) {
  if (a.n == 0) return;
  HT_LAUNCH(scale_kernel, (LaunchConfig{grid_for(a.n, kBlock, s), kBlock}), s, a.x, a.n, a.alpha,
            packs_aligned(static_cast<const float*>(a.x)));
}

void launch_add(const AddArgs& a, const Stream& s) {
  if (a.n == 0) return;
  const LaunchConfig cfg{grid_for(a.n, kBlock, s), kBlock};
  dispatch2(a.a_dtype, a.b_dtype, [&](auto a_tag, auto b_tag) {
    using A = typename decltype(a_tag)::type;
    using B = typename decltype(b_tag)::type;
    const auto* x = static_cast<const A*>(a.a);
    const auto* y = static_cast<const B*>(a.b);
    HT_LAUNCH((add_kernel<A, B>), cfg, s, x, y, a.out, a.n, packs_aligned(x, y, static_cast<const float*>(a.out)));
  });
}

}  // namespace ht::gpu::inline HT_GPU_NS
