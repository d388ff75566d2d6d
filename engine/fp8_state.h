// FP8's scaling state (--precision fp8), in the step's room (engine/step_state.h): for each
// linear layer the recipe covers, the scales, amaxes and amax histories of its three FP8
// tensors (input, weight, output gradient: kernels/fp8_scaling.h), in one device buffer.
//
// What a step does with it, in the order the data flows:
//   begin_step      (delayed) each scale from its history - the steps before this one;
//   cast            each FP8 operand of the step's GEMMs: under the delayed recipe, cast with
//                   the step's scale, its amax measured in the same pass; under the current
//                   recipe, an amax pass, the scale from it, then the cast;
//   step_amaxes     the trainer MAX-allreduces them, so every rank's histories stay the same;
//   end_step        the amaxes join the histories.
// Checkpoints carry the scales and histories (scale_inv follows from the scale), so a resumed
// run scales exactly as the uninterrupted one.
#pragma once

#include "engine/backend.h"
#include "kernels/fp8_update.h"

#include <cstdint>
#include <vector>

namespace ht {

class Fp8State {
 public:
  // layer_weights[l]: the parameter index of FP8 layer l's weight; `params`: the arena's count.
  Fp8State(Backend& backend, const Fp8ScalingConfig& config, std::vector<int> layer_weights, std::int64_t params);

  const Fp8ScalingConfig& config() const { return config_; }
  const Fp8Tensors& tensors() const { return t_; }
  std::int32_t layers() const { return static_cast<std::int32_t>(layer_weights_.size()); }
  const std::vector<int>& layer_weights() const { return layer_weights_; }
  int layer_of(int weight) const;  // the FP8 layer whose weight this is; -1: none

  // x: (rows, cols) bf16 -> codes (rows, cols) and, when out_t is given, (cols, rows), under the
  // recipe with the scale of slot `slot`. `record`: measure the amax and count saturations (the
  // training step; not evaluation).
  void cast(const Tensor& x, std::int32_t slot, const Tensor& out, const Tensor& out_t, bool record) const;

  // A covered layer's weight (out, in) bf16, cast for the training step - its codes and their
  // transpose - once, however many micro-batches and recomputed forwards read it (Transformer
  // Engine's weight caching): the weights change only in the optimizer, after end_step, which
  // empties the cache. (Emptied inside the step, so a captured CUDA graph keeps its memory.)
  struct CastWeight {
    Tensor codes, codes_t;
  };
  const CastWeight& cast_weight(std::int32_t layer, const Tensor& weight) const;
  std::int64_t weight_casts() const { return weight_casts_; }  // so far (tests)

  void begin_step() const;
  float* step_amaxes() const { return t_.amax; }  // (count) fp32 on the device
  void end_step(const DeviceStepState* state) const;

  // Host copies (synchronise): what checkpoints hold, and the saturations since the last take.
  struct Saved {
    std::vector<float> scale;    // (count)
    std::vector<float> history;  // (count · history_len)
  };
  Saved read() const;
  void write(const Saved& s);
  std::vector<std::uint32_t> take_saturations();

 private:
  Backend& backend_;
  Fp8ScalingConfig config_;
  std::vector<int> layer_weights_;
  std::vector<int> layer_of_param_;
  Tensor buffer_;
  Fp8Tensors t_;
  mutable std::vector<CastWeight> weight_cache_;  // by layer; empty codes: not cast this step
  mutable std::int64_t weight_casts_ = 0;
};

// The slot of a layer's tensor, and its name in logs and checkpoints ("3.input").
inline std::int32_t fp8_slot(std::int32_t layer, Fp8Role role) { return kFp8Roles * layer + static_cast<std::int32_t>(role); }
const char* fp8_role_name(Fp8Role role);

}  // namespace ht
