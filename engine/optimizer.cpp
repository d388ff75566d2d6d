#include "engine/optimizer.h"

namespace ht {

std::string_view optimizer_name(OptimizerKind k) { return k == OptimizerKind::sgd ? "sgd" : "adamw"; }

Optimizer::Optimizer(Backend& backend, const ParamArena& params, const OptimizerConfig& config)
    : Optimizer(backend, params, config, params.shard(0, 1)) {}

Optimizer::Optimizer(Backend& backend, const ParamArena& params, const OptimizerConfig& config, const ArenaShard& shard)
    : backend_(backend), params_(params), config_(config), shard_(shard) {
  const Shape state{shard.size()};
  if (config.kind == OptimizerKind::adamw) {
    moment1_ = backend.zeros(state, DType::f32);
    moment2_ = backend.zeros(state, DType::f32);
  } else if (config.sgd.momentum != 0.0f) {
    moment1_ = backend.zeros(state, DType::f32);
  }
}

void Optimizer::step(const DeviceStepState* state) {
  OptimizerArgs base;
  base.master = params_.master().data_as<float>();
  base.working = params_.has_separate_working_copy() ? params_.working().data() : nullptr;
  base.working_dtype = params_.working_dtype();
  HT_ASSERT(params_.grad_range().begin <= shard_.begin && shard_.end <= params_.grad_range().end);
  base.grads = params_.grad_arena();
  base.moment1 = moment1_.data_as<float>();
  base.moment2 = moment2_.data_as<float>();
  base.state_offset = shard_.begin;
  base.chunks = params_.chunk_table() + shard_.first_chunk;
  base.num_chunks = shard_.end_chunk - shard_.first_chunk;
  base.state = state;
  if (config_.kind == OptimizerKind::adamw) {
    backend_.adamw_step({base, config_.adamw});
  } else {
    backend_.sgd_step({base, config_.sgd});
  }
}

std::vector<std::pair<std::string, Tensor>> Optimizer::state_tensors() const {
  if (config_.kind == OptimizerKind::adamw) return {{"exp_avg", moment1_}, {"exp_avg_sq", moment2_}};
  if (moment1_.defined()) return {{"momentum_buffer", moment1_}};
  return {};
}

}  // namespace ht
