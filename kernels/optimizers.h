// Fused optimizers over the flat arenas, one pass each, chunk by chunk (a multi-tensor kernel:
// one launch for every parameter, each chunk carrying its tensor's weight-decay flag): read the
// scaled FP32 gradient, unscale and clip it (applied_gradient, kernels/grad_stats.h), update
// the FP32 master weight and the moments,
// write the low-precision working copy, and zero the gradient for the next accumulation window.
// Nothing changes (but the gradient is still zeroed) when control.found_inf is set: the step is
// skipped on the device.
#pragma once

#include "ground/dtype.h"
#include "ground/host_device.h"
#include "kernels/grad_stats.h"
#include "kernels/step_state.h"

#include <cmath>
#include <cstdint>

namespace ht {

struct SgdConfig {
  float momentum = 0;
  float weight_decay = 0;  // L2, added to the gradient (torch.optim.SGD)
  std::int32_t nesterov = 0;
};

struct AdamWConfig {
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
  float weight_decay = 0.01f;  // decoupled (torch.optim.AdamW)
};

struct OptimizerArgs {
  float* master = nullptr;     // (n) fp32
  void* working = nullptr;     // (n) working dtype, or nullptr in fp32 mode (master is the working copy)
  DType working_dtype = DType::f32;
  float* grads = nullptr;      // (n) fp32, scaled by the loss scale; zeroed
  float* moment1 = nullptr;    // (n - state_offset...) fp32: SGD momentum buffer / Adam m
  float* moment2 = nullptr;    // (...) fp32: Adam v (unused by SGD)
  std::int64_t state_offset = 0;  // the moments hold arena elements [state_offset, ...): a ZeRO-1 shard's
  const GradChunk* chunks = nullptr;  // (num_chunks) the arena's parameters, a decay flag each
  std::int32_t num_chunks = 0;
  const DeviceStepState* state = nullptr;  // reads control
};

struct SgdArgs : OptimizerArgs { SgdConfig config; };
struct AdamWArgs : OptimizerArgs { AdamWConfig config; };

void sgd_step_ref(const SgdArgs& a);
void adamw_step_ref(const AdamWArgs& a);

// torch.optim.SGD for one element; the first update initialises the momentum buffer to g.
// weight_decay is the config's, or 0 for a tensor that takes none.
HT_HD float sgd_update(float& p, float& buf, float g, const SgdConfig& c, float weight_decay, float lr, std::int64_t t) {
  g += weight_decay * p;
  if (c.momentum != 0.0f) {
    buf = t == 1 ? g : c.momentum * buf + g;
    g = c.nesterov ? g + c.momentum * buf : buf;
  }
  p -= lr * g;
  return p;
}

// torch.optim.AdamW, in PyTorch's order of operations. The per-step constants are computed
// once per thread, the element update once per parameter.
struct AdamWStepConstants {
  float lr = 0;
  float step_size = 0;             // lr / (1 - beta1^t)
  float bias_correction2_sqrt = 1; // sqrt(1 - beta2^t)
};

HT_HD AdamWStepConstants adamw_constants(const AdamWConfig& c, float lr, std::int64_t t) {
  AdamWStepConstants k;
  k.lr = lr;
  k.step_size = lr / (1.0f - powf(c.beta1, static_cast<float>(t)));
  k.bias_correction2_sqrt = sqrtf(1.0f - powf(c.beta2, static_cast<float>(t)));
  return k;
}

HT_HD float adamw_update(float& p, float& m, float& v, float g, const AdamWConfig& c, float weight_decay,
                         const AdamWStepConstants& k) {
  p *= 1.0f - k.lr * weight_decay;
  m = c.beta1 * m + (1.0f - c.beta1) * g;
  v = c.beta2 * v + (1.0f - c.beta2) * g * g;
  const float denom = sqrtf(v) / k.bias_correction2_sqrt + c.eps;
  p -= k.step_size * (m / denom);
  return p;
}

}  // namespace ht
