#include "kernels/cpu_dtype.h"
#include "kernels/gather_batch.h"

#include <algorithm>

namespace ht {

void gather_batch_ref(const GatherArgs& a) {
  cpu::dispatch(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* x = static_cast<T*>(a.x);
    const std::int32_t* indices = a.indices + gather_offset(a);
    float row[cpu::kChunk];
    for (std::int64_t r = 0; r < a.rows; ++r) {
      const std::int64_t sample = indices[r];
      const std::uint8_t* pixels = a.images + sample * a.features;
      for (std::int64_t f0 = 0; f0 < a.features; f0 += cpu::kChunk) {
        const std::int64_t n = std::min(cpu::kChunk, a.features - f0);
        for (std::int64_t f = 0; f < n; ++f) row[f] = static_cast<float>(pixels[f0 + f]) / 255.0f;
        cpu::store_n(row, x + r * a.features + f0, n);
      }
      a.labels[r] = a.all_labels[sample];
    }
  });
}

}  // namespace ht
