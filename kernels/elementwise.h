// Element-wise kernels: dtype casts, fills, and the batch gather that feeds the first layer.
#pragma once

#include "ground/dtype.h"
#include "kernels/step_state.h"

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

// x[r, :] = round_to(dtype, images[i[r], :] / 255), labels[r] = all_labels[i[r]], where
// i = indices, advanced (when cursor is set) by (steps_done(*cursor) % steps_per_epoch) ×
// rows_per_step: the training loop's micro-batch rows, found on the device.
struct GatherArgs {
  const std::uint8_t* images = nullptr;   // (samples, features) u8, row-major
  const std::int32_t* all_labels = nullptr;  // (samples)
  const std::int32_t* indices = nullptr;  // (rows) sample index of each batch row (before the cursor's offset)
  std::int64_t rows = 0;
  std::int64_t features = 0;
  void* x = nullptr;                      // (rows, features) dtype
  DType dtype = DType::f32;
  std::int32_t* labels = nullptr;         // (rows)
  const DeviceStepState* cursor = nullptr;
  std::int64_t rows_per_step = 0, steps_per_epoch = 1;
};
void gather_batch_ref(const GatherArgs& a);

HT_HD std::int64_t gather_offset(const GatherArgs& a) {
  return a.cursor ? steps_done(*a.cursor) % a.steps_per_epoch * a.rows_per_step : 0;
}

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

// *accumulator += factor * sum(values[0..n)). One block on the GPU; used for losses and counts.
struct SumArgs {
  const float* values = nullptr;  // (n) fp32
  std::int64_t n = 0;
  float factor = 1;
  float* accumulator = nullptr;   // (1) fp32
};
void sum_ref(const SumArgs& a);

}  // namespace ht
