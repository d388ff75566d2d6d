// The kernels of the element-wise ops (kernels/elementwise.h): for each op of
// HT_ELEMENTWISE_OPS one kernel, NAME_kernel<Out, In...>, instantiated for the dtypes its
// operands take, and its launcher. A kernel is the grid-stride map of kernels/elementwise.cuh,
// 256 threads a block, moving packs of 4 elements (16 bytes of fp32, 8 of fp16/bf16) where
// every pointer allows; each element is widened to FP32, computed by the op, rounded to the
// output's dtype (nearest even).
#include "kernels/elementwise.cuh"
#include "kernels/launch.h"

#include <tuple>

namespace ht::gpu::inline HT_GPU_NS {

namespace {

constexpr int kBlock = 256;
constexpr int kBlocksPerSM = 8;  // the SM full (64 warps): at most 32 registers a thread

// Calls f(p...) with each operand as a typed device pointer: an Operand as its dtype's device
// type, a float* as it is.
template <class F> void with_types(F&& f) { f(); }
template <class F, class First, class... Rest> void with_types(F&& f, First first, Rest... rest) {
  if constexpr (std::is_same_v<First, Operand> || std::is_same_v<First, ConstOperand>) {
    dispatch(first.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using P = std::conditional_t<std::is_same_v<First, Operand>, T*, const T*>;
      with_types([&](auto... r) { f(static_cast<P>(first.data), r...); }, rest...);
    });
  } else {
    with_types([&](auto... r) { f(first, r...); }, rest...);
  }
}

// out: (n) Out = op(in: (n) In...), in FP32; out may alias an input of its type.
template <class Op, class Out, class... In>
__device__ __forceinline__ void map_op(const Op& op, bool packed, Out* out, const In*... in) {
  map_elements(op.n, packed, [op](In... x) { return from_float<Out>(op(to_float(x)...)); }, out, in...);
}

// launch(cfg, packed, out, in...) with the op's operands typed, if there is anything to do.
template <class Args, class Launch> void launch_map(const Args& a, const Stream& s, Launch launch) {
  if (a.n == 0) return;
  const LaunchConfig cfg{grid_for(a.n, kBlock, s), kBlock};
  std::apply([&](auto... operands) {
    with_types([&](auto* out, const auto*... in) { launch(cfg, packs_aligned(out, in...), out, in...); },
               a.out(), operands...);
  }, a.ins());
}

template <class P> using Element = std::remove_const_t<std::remove_pointer_t<P>>;

}  // namespace

// One kernel an op, named after it (the profile's rows, the floors), and its launcher.
#define HT_DEFINE_ELEMENTWISE_KERNEL(name, Args)                                                              \
  template <class Out, class... In>                                                                           \
  __global__ void __launch_bounds__(kBlock, kBlocksPerSM) name##_kernel(Args a, bool packed, Out* out,       \
                                                                     const In*... in) {                      \
    map_op(a, packed, out, in...);                                                                            \
  }                                                                                                           \
  void launch_##name(const Args& a, const Stream& s) {                                                        \
    launch_map(a, s, [&](const LaunchConfig& cfg, bool packed, auto* out, const auto*... in) {                \
      HT_LAUNCH((name##_kernel<Element<decltype(out)>, Element<decltype(in)>...>), cfg, s, a, packed, out, in...); \
    });                                                                                                       \
  }
HT_ELEMENTWISE_OPS(HT_DEFINE_ELEMENTWISE_KERNEL)
#undef HT_DEFINE_ELEMENTWISE_KERNEL

}  // namespace ht::gpu::inline HT_GPU_NS
