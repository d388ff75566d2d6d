#include "kernels/cpu_dtype.h"
#include "kernels/cross_entropy.h"

#include <cmath>

namespace ht {

void cross_entropy_ref(const CrossEntropyArgs& a) {
  const float multiplier = (a.loss_scale ? *a.loss_scale : 1.0f) / a.grad_divisor;
  cpu::dispatch(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (std::int64_t r = 0; r < a.rows; ++r) {
      const T* z = static_cast<const T*>(a.logits) + r * a.classes;
      const std::int32_t label = a.labels[r];
      float max = -INFINITY;
      std::int64_t argmax = 0;
      for (std::int64_t c = 0; c < a.classes; ++c) {
        const float v = cpu::load(z[c]);
        if (v > max) { max = v; argmax = c; }
      }
      float sum = 0;
      for (std::int64_t c = 0; c < a.classes; ++c) sum += expf(cpu::load(z[c]) - max);
      a.row_loss[r] = max + logf(sum) - cpu::load(z[label]);
      if (a.row_correct) a.row_correct[r] = argmax == label ? 1.0f : 0.0f;
      if (!a.dlogits) continue;
      T* dz = static_cast<T*>(a.dlogits) + r * a.classes;
      for (std::int64_t c = 0; c < a.classes; ++c) {
        const float p = expf(cpu::load(z[c]) - max) / sum;
        dz[c] = cpu::store<T>((p - (c == label ? 1.0f : 0.0f)) * multiplier);
      }
    }
  });
}

}  // namespace ht
