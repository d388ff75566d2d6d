#include "kernels/cpu_dtype.h"
#include "kernels/cross_entropy.h"

#include <cmath>
#include <vector>

namespace ht {

void cross_entropy_ref(const CrossEntropyArgs& a) {
  const float multiplier = (a.loss_scale ? *a.loss_scale : 1.0f) / a.grad_divisor;
  cpu::dispatch(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const std::int64_t width = a.width();
    HT_CHECK(width >= a.classes, "cross-entropy: rows of {} columns cannot hold {} classes", width, a.classes);
    thread_local std::vector<float> row, grad;
    row.resize(static_cast<std::size_t>(a.classes));
    grad.assign(static_cast<std::size_t>(width), 0.0f);  // the padding columns' gradient stays 0
    const float* z = row.data();
    for (std::int64_t r = 0; r < a.rows; ++r) {
      cpu::load_n(static_cast<const T*>(a.logits) + r * width, row.data(), a.classes);
      const std::int32_t label = a.labels[r];
      HT_CHECK(label >= 0 && label < a.classes, "cross-entropy: the target of row {} is {}, outside the {} classes [0, {})", r,
               label, a.classes, a.classes);
      float max = -INFINITY;
      std::int64_t argmax = 0;
      for (std::int64_t c = 0; c < a.classes; ++c) {
        const float v = z[c];
        if (v > max) { max = v; argmax = c; }
      }
      float sum = 0;
      for (std::int64_t c = 0; c < a.classes; ++c) sum += expf(z[c] - max);
      a.row_loss[r] = max + logf(sum) - z[label];
      if (a.row_correct) a.row_correct[r] = argmax == label ? 1.0f : 0.0f;
      if (!a.dlogits) continue;
      for (std::int64_t c = 0; c < a.classes; ++c) {
        const float p = expf(z[c] - max) / sum;
        grad[static_cast<std::size_t>(c)] = (p - (c == label ? 1.0f : 0.0f)) * multiplier;
      }
      cpu::store_n(grad.data(), static_cast<T*>(a.dlogits) + r * width, width);
    }
  });
}

}  // namespace ht
