// Element-wise kernels: casts, fills, the batch gather and a one-block sum. Grid-stride loops,
// 256 threads a block; the maps take 16-byte (fp32) or 8-byte (fp16/bf16) packs of 4 elements
// where every pointer allows (kernels/elementwise.cuh).
#include "kernels/elementwise.cuh"
#include "kernels/launch.h"
#include "kernels/reduce.cuh"

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

// images: (samples, features) u8, indices: (rows) -> x: (rows, features) T = images/255, labels: (rows)
template <class T>
__global__ void __launch_bounds__(kBlock) gather_batch_kernel(const std::uint8_t* __restrict__ images,
                                                              const std::int32_t* __restrict__ all_labels,
                                                              const std::int32_t* __restrict__ indices, std::int64_t rows,
                                                              std::int64_t features, T* __restrict__ x,
                                                              std::int32_t* __restrict__ labels, GatherArgs a) {
  indices += gather_offset(a);  // the step's rows, when the loop's cursor says so
  for (std::int64_t i = first_index(); i < rows * features; i += grid_stride()) {
    const std::int64_t r = i / features, f = i % features;
    const std::int64_t sample = indices[r];
    x[i] = from_float<T>(static_cast<float>(images[sample * features + f]) / 255.0f);
    if (f == 0) labels[r] = all_labels[sample];
  }
}

// a: (n) A, b: (n) B -> out: (n) fp32 = a + b (out may alias a)
template <class A, class B>
__global__ void __launch_bounds__(kBlock) add_kernel(const A* a, const B* b, float* out, std::int64_t n, bool packed) {
  map_elements(n, packed, [](A x, B y) { return to_float(x) + to_float(y); }, out, a, b);
}

// values: (n) fp32 -> *accumulator += factor * Σ values. One block.
__global__ void __launch_bounds__(kBlock) sum_kernel(const float* __restrict__ values, std::int64_t n, float factor,
                                                     float* __restrict__ accumulator) {
  float s = 0;
  for (std::int64_t i = threadIdx.x; i < n; i += kBlock) s += values[i];
  s = block_sum<kBlock>(s);
  if (threadIdx.x == 0) *accumulator += factor * s;
}

}  // namespace

void launch_cast(const CastArgs& a, const Stream& s) {
  if (a.n == 0) return;
  const LaunchConfig cfg{grid_for(a.n, kBlock, s), kBlock};
  dispatch(a.src_dtype, [&](auto src) {
    dispatch(a.dst_dtype, [&](auto dst) {
      using S = typename decltype(src)::type;
      using D = typename decltype(dst)::type;
      const auto* from = static_cast<const S*>(a.src);
      auto* to = static_cast<D*>(a.dst);
      HT_LAUNCH((cast_kernel<S, D>), cfg, s, from, to, a.n, packs_aligned(from, static_cast<const D*>(to)));
    });
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

void launch_gather_batch(const GatherArgs& a, const Stream& s) {
  if (a.rows == 0) return;
  const LaunchConfig cfg{grid_for(a.rows * a.features, kBlock, s), kBlock};
  dispatch(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    HT_LAUNCH(gather_batch_kernel<T>, cfg, s, a.images, a.all_labels, a.indices, a.rows, a.features, static_cast<T*>(a.x),
              a.labels, a);
  });
}

void launch_add(const AddArgs& a, const Stream& s) {
  if (a.n == 0) return;
  const LaunchConfig cfg{grid_for(a.n, kBlock, s), kBlock};
  dispatch(a.a_dtype, [&](auto a_tag) {
    dispatch(a.b_dtype, [&](auto b_tag) {
      using A = typename decltype(a_tag)::type;
      using B = typename decltype(b_tag)::type;
      const auto* x = static_cast<const A*>(a.a);
      const auto* y = static_cast<const B*>(a.b);
      HT_LAUNCH((add_kernel<A, B>), cfg, s, x, y, a.out, a.n, packs_aligned(x, y, static_cast<const float*>(a.out)));
    });
  });
}

void launch_sum(const SumArgs& a, const Stream& s) {
  HT_LAUNCH(sum_kernel, (LaunchConfig{1, kBlock}), s, a.values, a.n, a.factor, a.accumulator);
}

}  // namespace ht::gpu::inline HT_GPU_NS
