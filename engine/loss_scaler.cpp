#include "engine/loss_scaler.h"

namespace ht {

LossScaler::LossScaler(Backend& backend, const ParamArena& params, StepState& steps, const LossScalerConfig& config,
                       bool scaling_enabled)
    : backend_(backend), params_(params), config_(config), enabled_(scaling_enabled), steps_(steps) {
  // Unscaling multiplies by 1/scale: every scale the scaler can reach must have a finite inverse.
  HT_CHECK(valid_loss_scale(config.init_scale), "--init-scale {:g}: a loss scale must be finite and at least {:g} (its "
           "inverse must be a finite fp32 number)", config.init_scale, kMinLossScale);
  HT_CHECK(valid_loss_scale(config.min_scale), "--min-scale {:g}: a loss scale must be finite and at least {:g}",
           config.min_scale, kMinLossScale);
  HT_CHECK(valid_loss_scale(config.max_scale), "loss scaler max scale {:g} is not a valid loss scale", config.max_scale);
  HT_CHECK(config.growth_factor > 1, "loss scaler growth factor must be > 1");
  HT_CHECK(config.backoff_factor > 0 && config.backoff_factor < 1, "loss scaler backoff factor must be in (0, 1)");
  HT_CHECK(config.growth_interval > 0, "--growth-interval must be positive");
  HT_CHECK(config.hysteresis > 0, "--hysteresis must be positive");
  HT_CHECK(config.min_scale <= config.init_scale, "--min-scale ({:g}) must be at most the initial scale ({:g})",
           config.min_scale, config.init_scale);
  if (!enabled_) config_.dynamic = 0;

  DeviceStepState initial = steps.read();
  initial.scaler = initial_scaler_state(config_, enabled_);
  steps.write(initial);

  block_norm2_ = backend.zeros(Shape{std::max(1, backend.grad_stats_blocks(params.num_chunks()))}, DType::f32);
  tensor_nonfinite_ = backend.buffer(params.params().size() * sizeof(std::int32_t));
}

void LossScaler::unscale(float max_grad_norm, std::int32_t* nonfinite_ring, std::int32_t ring_slots) {
  HT_CHECK(stage_ == Stage::ready, "LossScaler: unscale() has already been called since the last update()");
  const std::int32_t blocks = backend_.grad_stats_blocks(params_.num_chunks());
  auto* flags = tensor_nonfinite_.data_as<std::int32_t>();
  auto* partials = block_norm2_.data_as<float>();
  const auto tensors = static_cast<std::int32_t>(params_.params().size());
  if (combine_) {
    // A partial a chunk (grad_stats_blocks), at the chunk's index: this rank's chunks only.
    HT_CHECK(blocks == params_.num_chunks(), "ZeRO needs a partial sum a chunk ({} partials for {} chunks)", blocks,
             params_.num_chunks());
    backend_.fill({partials, blocks, 0.0f});
    const std::int32_t mine = shard_.end_chunk - shard_.first_chunk;
    if (mine > 0)
      backend_.check_norm({params_.grad_arena(), params_.chunk_table() + shard_.first_chunk, mine, steps_.device(),
                                   partials + shard_.first_chunk, mine, flags});
    combine_(partials, blocks, flags, tensors);
  } else {
    backend_.check_norm({params_.grad_arena(), params_.chunk_table(), params_.num_chunks(), steps_.device(), partials,
                                 blocks, flags});
  }
  backend_.finalize_grad_stats({partials, blocks, flags, tensors, nonfinite_ring, ring_slots, max_grad_norm, steps_.schedule(), steps_.device()});
  stage_ = Stage::unscaled;
}

void LossScaler::step(Optimizer& optimizer) {
  HT_CHECK(stage_ != Stage::stepped, "LossScaler: step() has already been called since the last update()");
  HT_CHECK(stage_ == Stage::unscaled, "LossScaler: step() needs unscale() first (the skip decision comes from it)");
  optimizer.step(steps_.device());
  stage_ = Stage::stepped;
}

void LossScaler::update(StepRecord* records, std::int32_t ring_slots) {
  HT_CHECK(stage_ == Stage::stepped, "LossScaler: update() called before step()");
  backend_.update_scaler({steps_.device(), config_, records, ring_slots});
  stage_ = Stage::ready;
}

}  // namespace ht
