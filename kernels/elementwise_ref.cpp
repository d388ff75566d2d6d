// The CPU reference of every element-wise op (kernels/elementwise.h): one loop, through FP32
// scratch rows of cpu::kChunk elements - widen the inputs, apply the op, round into the output.
#include "kernels/cpu_dtype.h"
#include "kernels/elementwise.h"

#include <algorithm>
#include <array>
#include <utility>

namespace ht {

namespace {

// Calls f(p...) with each operand as a typed pointer: an Operand as its dtype's storage type,
// a float* as it is.
template <class F> void with_types(F&& f) { f(); }
template <class F, class First, class... Rest> void with_types(F&& f, First first, Rest... rest) {
  if constexpr (std::is_same_v<First, Operand> || std::is_same_v<First, ConstOperand>) {
    cpu::dispatch(first.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using P = std::conditional_t<std::is_same_v<First, Operand>, T*, const T*>;
      with_types([&](auto... r) { f(static_cast<P>(first.data), r...); }, rest...);
    });
  } else {
    with_types([&](auto... r) { f(first, r...); }, rest...);
  }
}

// An FP32 view of n elements at p: p itself, or p widened into `scratch`.
template <class T> const float* widened(const T* p, float* scratch, std::int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    return p;
  } else {
    cpu::load_n(p, scratch, n);
    return scratch;
  }
}

template <class Args> void map_ref(const Args& a) {
  std::apply([&](auto... operands) {
    with_types([&]<class Out, class... In>(Out* out, const In*... in) {
      [&]<std::size_t... K>(std::index_sequence<K...>) {
        const std::tuple<const In*...> inputs{in...};
        float scratch[sizeof...(In) + 1][cpu::kChunk];
        for (std::int64_t i0 = 0; i0 < a.n; i0 += cpu::kChunk) {
          const std::int64_t n = std::min(cpu::kChunk, a.n - i0);
          [[maybe_unused]] const std::array<const float*, sizeof...(In)> src{widened(std::get<K>(inputs) + i0, scratch[K], n)...};
          float* dst = scratch[sizeof...(In)];
          if constexpr (std::is_same_v<Out, float>) dst = out + i0;  // (out may be an input: the same element)
          for (std::int64_t i = 0; i < n; ++i) dst[i] = a(src[K][i]...);
          if constexpr (!std::is_same_v<Out, float>) cpu::store_n(dst, out + i0, n);
        }
      }(std::index_sequence_for<In...>{});
    }, a.out(), operands...);
  }, a.ins());
}

}  // namespace

#define HT_DEFINE_ELEMENTWISE_REF(name, Args) \
  void name##_ref(const Args& a) { map_ref(a); }
HT_ELEMENTWISE_OPS(HT_DEFINE_ELEMENTWISE_REF)
#undef HT_DEFINE_ELEMENTWISE_REF

}  // namespace ht
