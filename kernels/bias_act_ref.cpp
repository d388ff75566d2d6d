#include "kernels/activation.h"
#include "kernels/bias_act.h"
#include "kernels/cpu_dtype.h"

#include <algorithm>
#include <vector>

namespace ht {

namespace {

// Calls f(activation) with the activation as a function object, so that each loop below is
// straight-line code the compiler vectorises (no switch per element).
template <class F> void with_activation(Activation act, F&& f) {
  switch (act) {
    case Activation::relu:  // (as x > 0 ? x : 0, written as a select so that it vectorises)
      f([](float x) { return select_if(!(x > 0.0f), 0.0f, x); }, [](float s) { return select_if(s > 0.0f, 1.0f, 0.0f); });
      return;
    case Activation::gelu: f([](float x) { return gelu(x); }, [](float s) { return gelu_derivative(s); }); return;
    default: f([](float x) { return x; }, [](float) { return 1.0f; }); return;
  }
}

}  // namespace

void bias_act_ref(const BiasActArgs& a) {
  cpu::dispatch(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::vector<float> bias(static_cast<std::size_t>(a.cols), 0.0f);
    if (a.bias)
      for (std::int64_t c = 0; c < a.cols; ++c) bias[static_cast<std::size_t>(c)] = cpu::load(static_cast<const T*>(a.bias)[c]);
    T* __restrict pre = static_cast<T*>(a.pre);
    T* __restrict out = static_cast<T*>(a.out);
    const float* __restrict acc = a.acc;
    const float* __restrict b = bias.data();
    with_activation(a.act, [&](auto act, auto) {
      if constexpr (std::is_same_v<T, float>) {
        for (std::int64_t r = 0; r < a.rows; ++r) {
          const std::int64_t row = r * a.cols;
          if (pre) {
            for (std::int64_t c = 0; c < a.cols; ++c) {
              const float z = acc[row + c] + b[c];
              pre[row + c] = z;
              out[row + c] = act(z);
            }
          } else {
            for (std::int64_t c = 0; c < a.cols; ++c) out[row + c] = act(acc[row + c] + b[c]);
          }
        }
      } else {
        // A row at a time in FP32 scratch: z = round(acc + bias) is stored as the
        // pre-activation, act(z) rounded as the output (the element-wise order of the GPU's).
        float z[cpu::kChunk], y[cpu::kChunk];
        for (std::int64_t r = 0; r < a.rows; ++r)
          for (std::int64_t c0 = 0; c0 < a.cols; c0 += cpu::kChunk) {
            const std::int64_t n = std::min(cpu::kChunk, a.cols - c0), at = r * a.cols + c0;
            for (std::int64_t c = 0; c < n; ++c) z[c] = acc[at + c] + b[c0 + c];
            cpu::round_n<T>(z, n);
            if (pre) cpu::store_n(z, pre + at, n);
            for (std::int64_t c = 0; c < n; ++c) y[c] = act(z[c]);
            cpu::store_n(y, out + at, n);
          }
      }
    });
  });
}

void act_backward_ref(const ActBackwardArgs& a) {
  cpu::dispatch(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* __restrict dout = static_cast<const T*>(a.dout);
    const T* __restrict saved = static_cast<const T*>(a.saved);
    T* __restrict dpre = static_cast<T*>(a.dpre);
    with_activation(a.act, [&](auto, auto derivative) {
      float g[cpu::kChunk], x[cpu::kChunk];
      for (std::int64_t i0 = 0; i0 < a.n; i0 += cpu::kChunk) {
        const std::int64_t n = std::min(cpu::kChunk, a.n - i0);
        cpu::load_n(dout + i0, g, n);
        cpu::load_n(saved + i0, x, n);
        for (std::int64_t i = 0; i < n; ++i) g[i] *= derivative(x[i]);
        cpu::store_n(g, dpre + i0, n);
      }
    });
  });
}

void bias_grad_ref(const BiasGradArgs& a) {
  cpu::dispatch(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* dpre = static_cast<const T*>(a.dpre);
    // Each column summed over the rows in order, row by row (the memory order).
    std::vector<float> sum(static_cast<std::size_t>(a.cols), 0.0f);
    float row[cpu::kChunk];
    for (std::int64_t r = 0; r < a.rows; ++r)
      for (std::int64_t c0 = 0; c0 < a.cols; c0 += cpu::kChunk) {
        const std::int64_t n = std::min(cpu::kChunk, a.cols - c0);
        cpu::load_n(dpre + r * a.cols + c0, row, n);
        for (std::int64_t c = 0; c < n; ++c) sum[static_cast<std::size_t>(c0 + c)] += row[c];
      }
    for (std::int64_t c = 0; c < a.cols; ++c) a.dbias[c] += sum[static_cast<std::size_t>(c)];
  });
}

}  // namespace ht
