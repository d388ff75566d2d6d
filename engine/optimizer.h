// Optimizers over the flat arenas: one fused launch per step updates every parameter's FP32
// master weight and moments, refreshes the working copy and zeroes the gradients. The skip
// decision, learning rate, clip coefficient and t are read on the device (StepControl).
#pragma once

#include "engine/backend.h"
#include "engine/params.h"
#include "kernels/optimizers.h"

#include <string_view>

namespace ht {

enum class OptimizerKind { sgd, adamw };
std::string_view optimizer_name(OptimizerKind k);

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::adamw;
  SgdConfig sgd;
  AdamWConfig adamw;
};

class Optimizer {
 public:
  // With a shard (ZeRO-1), the optimizer keeps state for the shard's elements only and updates
  // only its chunks (their master, working copy and gradients); the rest of the arena is another
  // rank's to update. Without one: the whole arena.
  Optimizer(Backend& backend, const ParamArena& params, const OptimizerConfig& config);
  Optimizer(Backend& backend, const ParamArena& params, const OptimizerConfig& config, const ArenaShard& shard);
  void step(const DeviceStepState* state);  // one launch; a no-op update when found_inf is set

  const OptimizerConfig& config() const { return config_; }
  const ArenaShard& shard() const { return shard_; }
  // The optimizer's per-parameter state, shard-shaped: {"exp_avg", ...} or {"momentum_buffer"}.
  std::vector<std::pair<std::string, Tensor>> state_tensors() const;

 private:
  Backend& backend_;
  const ParamArena& params_;
  OptimizerConfig config_;
  ArenaShard shard_;
  Tensor moment1_, moment2_;
};

}  // namespace ht
