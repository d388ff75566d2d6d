#include "kernels/cpu_dtype.h"
#include "kernels/dropout.h"

#include <algorithm>

namespace ht {

void dropout_ref(const DropoutArgs& a) {
  const std::int64_t step = steps_done(*a.state) + 1;
  const float scale = 1.0f / (1.0f - a.p);
  cpu::dispatch(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    float row[cpu::kChunk];
    for (std::int64_t i0 = 0; i0 < a.n; i0 += cpu::kChunk) {
      const std::int64_t n = std::min(cpu::kChunk, a.n - i0);
      cpu::load_n(static_cast<const T*>(a.in) + i0, row, n);
      for (std::int64_t i = 0; i < n; ++i) row[i] = dropout_keeps(a.key, step, i0 + i, a.p) ? row[i] * scale : 0.0f;
      cpu::store_n(row, static_cast<T*>(a.out) + i0, n);
    }
  });
}

}  // namespace ht
