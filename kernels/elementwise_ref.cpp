#include "kernels/cpu_dtype.h"
#include "kernels/elementwise.h"

#include <algorithm>

namespace ht {

void cast_ref(const CastArgs& a) {
  cpu::dispatch(a.src_dtype, [&](auto src_tag) {
    using S = typename decltype(src_tag)::type;
    cpu::dispatch(a.dst_dtype, [&](auto dst_tag) {
      using D = typename decltype(dst_tag)::type;
      cpu::convert_n(static_cast<const S*>(a.src), static_cast<D*>(a.dst), a.n);
    });
  });
}

void fill_ref(const FillArgs& a) {
  for (std::int64_t i = 0; i < a.n; ++i) a.dst[i] = a.value;
}

void scale_ref(const ScaleArgs& a) {
  for (std::int64_t i = 0; i < a.n; ++i) a.x[i] *= a.alpha;
}

void add_ref(const AddArgs& a) {
  cpu::dispatch(a.a_dtype, [&](auto a_tag) {
    using A = typename decltype(a_tag)::type;
    cpu::dispatch(a.b_dtype, [&](auto b_tag) {
      using B = typename decltype(b_tag)::type;
      const A* x = static_cast<const A*>(a.a);
      const B* y = static_cast<const B*>(a.b);
      if constexpr (std::is_same_v<A, float> && std::is_same_v<B, float>) {
        for (std::int64_t i = 0; i < a.n; ++i) a.out[i] = x[i] + y[i];
        return;
      }
      float xs[cpu::kChunk], ys[cpu::kChunk];
      for (std::int64_t i0 = 0; i0 < a.n; i0 += cpu::kChunk) {
        const std::int64_t n = std::min(cpu::kChunk, a.n - i0);
        cpu::load_n(x + i0, xs, n);
        cpu::load_n(y + i0, ys, n);
        for (std::int64_t i = 0; i < n; ++i) a.out[i0 + i] = xs[i] + ys[i];
      }
    });
  });
}

}  // namespace ht
