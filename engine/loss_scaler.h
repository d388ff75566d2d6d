// LossScaler: torch.amp.GradScaler for halftape, with its state on the device: its part of the
// trainer's StepState (engine/step_state.h), the scale and its trackers and the step's control.
//
// A step goes  unscale() -> optimizer step -> update(), exactly once each, as in PyTorch:
//   unscale()  one read-only pass over the gradient arena: ×1/scale in registers, per-tensor
//              inf/NaN flags, the global norm; then one block computes found_inf, the clip
//              coefficient, the LR and t. The arena stays scaled (kernels/grad_stats.h).
//   step       the optimizer kernels read found_inf on the device and skip the update if set;
//              else they unscale and clip each gradient as they read it.
//   update()   GradScaler's rule (see update_loss_scale): back off on overflow, grow after
//              growth_interval clean steps; and the step's StepRecord is written.
// Calling unscale() twice, or stepping twice, before update() is an error, as in PyTorch.
// When scaling is off (fp32, bf16) the scale is 1 and never changes, but the check still runs:
// a non-finite gradient skips the step rather than poisoning the weights.
#pragma once

#include "engine/backend.h"
#include "engine/optimizer.h"
#include "engine/params.h"
#include "engine/step_state.h"

#include <functional>

namespace ht {

class LossScaler {
 public:
  // Sets the scaler's part of `steps` to its initial value (the scale of `config`, or 1).
  LossScaler(Backend& backend, const ParamArena& params, StepState& steps, const LossScalerConfig& config,
             bool scaling_enabled);

  bool scaling_enabled() const { return enabled_; }
  const LossScalerConfig& config() const { return config_; }

  // The step's per-tensor overflow flags go to row steps_done % ring_slots of nonfinite_ring
  // ((ring_slots, num params) int32 on the device; may be null). The step's learning rate comes
  // from the step state's schedule, in the same pass.
  void unscale(float max_grad_norm, std::int32_t* nonfinite_ring, std::int32_t ring_slots);
  void step(Optimizer& optimizer);     // the optimizer's update, skipped on the device on overflow
  void update(StepRecord* records, std::int32_t ring_slots);  // the step's record: slot steps_done % ring_slots

  // ZeRO: this rank's reduced gradients are those of `shard` only (ZeRO-2: all it holds; ZeRO-1:
  // the rest of its arena is unreduced). unscale() then checks and sums that shard, and `combine`
  // adds up every rank's per-chunk partial sums of squares and ORs its per-tensor overflow flags
  // (allreduces), so that the norm, the clip coefficient and the skip decision are the whole
  // arena's - bit for bit those of an unsharded run: each chunk's partial is formed on its one
  // rank and every other rank adds zero to it.
  using CombineGradStats = std::function<void(float* partials, std::int32_t n, std::int32_t* flags, std::int32_t tensors)>;
  void shard_grad_stats(const ArenaShard& shard, CombineGradStats combine) {
    shard_ = shard;
    combine_ = std::move(combine);
  }

 private:
  enum class Stage { ready, unscaled, stepped };
  Backend& backend_;
  const ParamArena& params_;
  LossScalerConfig config_;
  bool enabled_;
  Stage stage_ = Stage::ready;
  StepState& steps_;
  Tensor block_norm2_;      // partial sums of squares
  Tensor tensor_nonfinite_; // per-parameter flags
  ArenaShard shard_;
  CombineGradStats combine_;
};

}  // namespace ht
