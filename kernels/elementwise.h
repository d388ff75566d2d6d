// Element-wise kernels: dtype casts, fills, scaling and the FP32 sums of two tensors.
#pragma once

#include "ground/dtype.h"

#include <cstdint>

namespace ht {

// dst[i] = round_to(dst_dtype, src[i]), i < n. Rounds to nearest even.
struct CastArgs {
  const void* src = nullptr;  // (n) src_dtype
  DType src_dtype = DType::f32;
  void* dst = nullptr;        // (n) dst_dtype
  DType dst_dtype = DType::f32;
  std::int64_t n = 0;
};
void cast_ref(const CastArgs& a);

// dst[i] = value, i < n (used to poison gradients for --inject-overflow).
struct FillArgs {
  float* dst = nullptr;  // (n) fp32
  std::int64_t n = 0;
  float value = 0;
};
void fill_ref(const FillArgs& a);

// x[i] *= alpha, i < n (data parallelism divides gradients by the world size before summing).
struct ScaleArgs {
  float* x = nullptr;  // (n) fp32
  std::int64_t n = 0;
  float alpha = 1;
};
void scale_ref(const ScaleArgs& a);

// out[i] = a[i] + b[i] in FP32 (out may be a): the residual stream's sums (an FP32 stream plus a
// low-precision branch) and the gradient contributions several consumers add to one value.
struct AddArgs {
  const void* a = nullptr;  // (n) a_dtype
  DType a_dtype = DType::f32;
  const void* b = nullptr;  // (n) b_dtype
  DType b_dtype = DType::f32;
  float* out = nullptr;     // (n) fp32
  std::int64_t n = 0;
};
void add_ref(const AddArgs& a);

}  // namespace ht
