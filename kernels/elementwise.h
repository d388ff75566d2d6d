// Element-wise maps, out[i] = f(in[i]...) for i < n: dtype casts, fills, scaling and the FP32
// sums of two tensors. Each op is declared here and nowhere else: its argument struct says which
// tensors it reads and writes (out(), ins()) and what it computes for one element, in FP32
// (operator()). From that one declaration and one line of HT_ELEMENTWISE_OPS come its CPU
// reference (elementwise_ref.cpp: a loop through FP32 scratch rows, ground/dtype.h's rounding),
// its kernel and launcher (elementwise.cu: the grid-stride map with 16-byte packs, CUDA's
// rounding; named NAME_kernel), its entry in the Backend (kernels/kernel_list.h) and its floors
// (the element-wise lines of tests/resource_floors.txt and tests/counter_floors.inc). What the
// reference checks of the kernel is the map - the dtype dispatch, packs, tails, aliasing and
// rounding; the element function is shared, as the other HT_HD rules are.
//
// A tensor an op reads or writes in any float dtype is an `Operand` (the kernels are instantiated
// for each dtype, and only those: fp32, fp16, bf16); one always in FP32 is a `float*`.
#pragma once

#include "ground/dtype.h"
#include "ground/host_device.h"

#include <cstdint>
#include <tuple>

namespace ht {

struct Operand {
  void* data = nullptr;
  DType dtype = DType::f32;
};
struct ConstOperand {
  const void* data = nullptr;
  DType dtype = DType::f32;
};

// dst[i] = round_to(dst_dtype, src[i]). Rounds to nearest even.
struct CastArgs {
  const void* src = nullptr;  // (n) src_dtype
  DType src_dtype = DType::f32;
  void* dst = nullptr;        // (n) dst_dtype
  DType dst_dtype = DType::f32;
  std::int64_t n = 0;

  Operand out() const { return {dst, dst_dtype}; }
  std::tuple<ConstOperand> ins() const { return {{src, src_dtype}}; }
  HT_HD float operator()(float x) const { return x; }
};

// dst[i] = value (used to poison gradients for --inject-overflow).
struct FillArgs {
  float* dst = nullptr;  // (n) fp32
  std::int64_t n = 0;
  float value = 0;

  float* out() const { return dst; }
  std::tuple<> ins() const { return {}; }
  HT_HD float operator()() const { return value; }
};

// x[i] *= alpha (data parallelism divides gradients by the world size before summing).
struct ScaleArgs {
  float* x = nullptr;  // (n) fp32, in place
  std::int64_t n = 0;
  float alpha = 1;

  float* out() const { return x; }
  std::tuple<const float*> ins() const { return {x}; }
  HT_HD float operator()(float v) const { return v * alpha; }
};

// out[i] = a[i] + b[i] in FP32 (out may be a): the residual stream's sums (an FP32 stream plus a
// low-precision branch) and the gradient contributions several consumers add to one value.
struct AddArgs {
  const void* a = nullptr;  // (n) a_dtype
  DType a_dtype = DType::f32;
  const void* b = nullptr;  // (n) b_dtype
  DType b_dtype = DType::f32;
  float* sum = nullptr;     // (n) fp32
  std::int64_t n = 0;

  float* out() const { return sum; }
  std::tuple<ConstOperand, ConstOperand> ins() const { return {{a, a_dtype}, {b, b_dtype}}; }
  HT_HD float operator()(float x, float y) const { return x + y; }
};

// Every element-wise op, as X(name, ArgumentStruct): name_ref, launch_name, name_kernel and the
// Backend's name() come from this list (kernels/kernel_list.h includes it).
#define HT_ELEMENTWISE_OPS(X) \
  X(cast, CastArgs)           \
  X(fill, FillArgs)           \
  X(scale, ScaleArgs)         \
  X(add, AddArgs)

#define HT_DECLARE_ELEMENTWISE_REF(name, Args) void name##_ref(const Args& a);
HT_ELEMENTWISE_OPS(HT_DECLARE_ELEMENTWISE_REF)
#undef HT_DECLARE_ELEMENTWISE_REF

}  // namespace ht
