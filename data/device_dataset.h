// A data set resident on the device (u8 samples, int32 labels), and the gather that turns a
// list of sample indices into a batch: x = samples / 255 in the compute dtype, plus labels.
#pragma once

#include "engine/backend.h"
#include "data/dataset.h"

namespace ht {

struct Batch {
  Tensor x;       // (rows, features) compute dtype
  Tensor labels;  // (rows) int32, stored in an fp32-typed buffer
  std::int64_t rows = 0;
};

class DeviceDataset {
 public:
  DeviceDataset(Backend& backend, const Dataset& data);
  // indices: (rows) int32 on the device.
  Batch gather(const std::int32_t* indices, std::int64_t rows, DType dtype) const;
  // The training loop's micro-batch: indices advanced on the device by the step cursor (see
  // GatherArgs), so the call is the same every step.
  Batch gather(const std::int32_t* indices, std::int64_t rows, DType dtype, const DeviceStepState* cursor,
               std::int64_t rows_per_step, std::int64_t steps_per_epoch) const;
  std::int64_t samples() const { return samples_; }
  std::int64_t features() const { return features_; }

 private:
  Backend& backend_;
  Tensor images_, labels_;
  std::int64_t samples_, features_;
};

// Host int32 indices uploaded to the device.
Tensor upload_indices(Backend& backend, const std::vector<std::int32_t>& indices);

}  // namespace ht
