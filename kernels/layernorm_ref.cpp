#include "kernels/cpu_dtype.h"
#include "kernels/layernorm.h"

#include <cmath>
#include <vector>

namespace ht {

void layernorm_ref(const LayerNormArgs& a) {
  cpu::dispatch(a.out_dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* out = static_cast<T*>(a.out);
    thread_local std::vector<float> y;  // a row, before rounding to T
    y.resize(static_cast<std::size_t>(a.channels));
    for (std::int64_t r = 0; r < a.rows; ++r) {
      const float* x = a.x + r * a.channels;
      float sum = 0;
      for (std::int64_t c = 0; c < a.channels; ++c) sum += x[c];
      const float mean = sum / static_cast<float>(a.channels);
      float var = 0;
      for (std::int64_t c = 0; c < a.channels; ++c) var += (x[c] - mean) * (x[c] - mean);
      const float rstd = 1.0f / std::sqrt(var / static_cast<float>(a.channels) + a.eps);
      for (std::int64_t c = 0; c < a.channels; ++c) y[static_cast<std::size_t>(c)] = (x[c] - mean) * rstd * a.weight[c] + a.bias[c];
      cpu::store_n(y.data(), out + r * a.channels, a.channels);
      a.mean[r] = mean;
      a.rstd[r] = rstd;
    }
  });
}

void layernorm_backward_ref(const LayerNormBackwardArgs& a) {
  cpu::dispatch(a.dout_dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* dout = static_cast<const T*>(a.dout);
    std::vector<float> dw(static_cast<std::size_t>(a.channels), 0.0f), db(static_cast<std::size_t>(a.channels), 0.0f);
    std::vector<float> dy_row(static_cast<std::size_t>(a.channels));
    for (std::int64_t r = 0; r < a.rows; ++r) {
      const float* x = a.x + r * a.channels;
      const float* dy = dy_row.data();
      cpu::load_n(dout + r * a.channels, dy_row.data(), a.channels);
      float mean_g = 0, mean_gx = 0;
      for (std::int64_t c = 0; c < a.channels; ++c) {
        const float xhat = (x[c] - a.mean[r]) * a.rstd[r];
        const float g = dy[c] * a.weight[c];
        mean_g += g;
        mean_gx += g * xhat;
      }
      mean_g /= static_cast<float>(a.channels);
      mean_gx /= static_cast<float>(a.channels);
      for (std::int64_t c = 0; c < a.channels; ++c) {
        const float xhat = (x[c] - a.mean[r]) * a.rstd[r];
        const float g = dy[c] * a.weight[c];
        const float d = a.rstd[r] * (g - mean_g - xhat * mean_gx);
        float& out = a.dx[r * a.channels + c];
        out = a.beta == 0.0f ? d : out + d;
        dw[static_cast<std::size_t>(c)] += dy[c] * xhat;
        db[static_cast<std::size_t>(c)] += dy[c];
      }
    }
    for (std::int64_t c = 0; c < a.channels; ++c) {
      a.dweight[c] += dw[static_cast<std::size_t>(c)];
      a.dbias[c] += db[static_cast<std::size_t>(c)];
    }
  });
}

}  // namespace ht
