// Softmax cross-entropy, forward and logit gradient fused, FP32 math on low-precision logits:
//   loss[r]    = logsumexp(z[r,:]) - z[r, label[r]]
//   dz[r, c]   = round((softmax(z[r,:])[c] - [c == label[r]]) * loss_scale / grad_divisor)
// grad_divisor is batch × accumulation steps, so the gradient is that of the mean loss over the
// whole optimizer step, multiplied by the loss scale. An fp16 dz overflows to inf exactly
// where a scaled gradient would on the GPU. A label outside [0, classes) is never an index: the
// reference throws naming the row and the label; the kernel makes that row's loss and gradient
// NaN, which the step's non-finite check reports. A padded vocabulary (nanoGPT's and llm.c's
// 50,304 for GPT-2's 50,257) widens each row past the classes: the padding columns take no part
// in the softmax and get a zero gradient, so they are never predicted and never learn.
#pragma once

#include "ground/dtype.h"

#include <cstdint>

namespace ht {

struct CrossEntropyArgs {
  const void* logits = nullptr;       // (rows, width()) dtype
  DType dtype = DType::f32;
  const std::int32_t* labels = nullptr;  // (rows), each in [0, classes)
  std::int64_t rows = 0, classes = 0;
  float* row_loss = nullptr;          // (rows) fp32, unscaled
  float* row_correct = nullptr;       // (rows) 1 when argmax == label, else 0; may be nullptr
  void* dlogits = nullptr;            // (rows, width()) dtype; nullptr: forward only (evaluation);
                                      // may be logits itself (the gradient overwrites them)
  const float* loss_scale = nullptr;  // (1) fp32 on the device; nullptr means 1
  float grad_divisor = 1;
  std::int64_t padded_classes = 0;    // the rows' length when padded past classes; 0: classes
  std::int64_t width() const { return padded_classes ? padded_classes : classes; }
};
void cross_entropy_ref(const CrossEntropyArgs& a);

}  // namespace ht
