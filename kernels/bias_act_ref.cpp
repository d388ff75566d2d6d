#include "kernels/activation.h"
#include "kernels/bias_act.h"
#include "kernels/cpu_dtype.h"

namespace ht {

void bias_act_ref(const BiasActArgs& a) {
  cpu::dispatch(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* bias = static_cast<const T*>(a.bias);
    T* pre = static_cast<T*>(a.pre);
    T* out = static_cast<T*>(a.out);
    for (std::int64_t r = 0; r < a.rows; ++r) {
      for (std::int64_t c = 0; c < a.cols; ++c) {
        const std::int64_t i = r * a.cols + c;
        const T z = cpu::store<T>(a.acc[i] + (bias ? cpu::load(bias[c]) : 0.0f));
        if (pre) pre[i] = z;
        out[i] = cpu::store<T>(activate(a.act, cpu::load(z)));
      }
    }
  });
}

void act_backward_ref(const ActBackwardArgs& a) {
  cpu::dispatch(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* dout = static_cast<const T*>(a.dout);
    const T* saved = static_cast<const T*>(a.saved);
    T* dpre = static_cast<T*>(a.dpre);
    for (std::int64_t i = 0; i < a.n; ++i)
      dpre[i] = cpu::store<T>(cpu::load(dout[i]) * activation_derivative(a.act, cpu::load(saved[i])));
  });
}

void bias_grad_ref(const BiasGradArgs& a) {
  cpu::dispatch(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* dpre = static_cast<const T*>(a.dpre);
    for (std::int64_t c = 0; c < a.cols; ++c) {
      float sum = 0;
      for (std::int64_t r = 0; r < a.rows; ++r) sum += cpu::load(dpre[r * a.cols + c]);
      a.dbias[c] += sum;
    }
  });
}

}  // namespace ht
