// A one-block sum into an accumulator on the device: the step's loss and the evaluation's loss
// and correct counts.
#pragma once

#include <cstdint>

namespace ht {

// *accumulator += factor * sum(values[0..n)). One block on the GPU; used for losses and counts.
struct SumArgs {
  const float* values = nullptr;  // (n) fp32
  std::int64_t n = 0;
  float factor = 1;
  float* accumulator = nullptr;   // (1) fp32
};
void sum_ref(const SumArgs& a);

}  // namespace ht
