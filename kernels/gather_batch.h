// The MLP's input batch: rows of a u8 image set gathered by index and scaled to [0, 1] in the
// compute dtype, with their labels - the micro-batch's rows found on the device from the step
// counter, so a CUDA graph replays the right rows each step.
#pragma once

#include "ground/dtype.h"
#include "kernels/step_state.h"

#include <cstdint>

namespace ht {

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

}  // namespace ht
