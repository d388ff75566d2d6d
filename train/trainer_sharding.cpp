// ZeRO-1 and 2, the trainer's side (docs/distributed.md): each rank's optimizer updates only its
// shard of the arena (engine/optimizer.h); after the update every shard of the FP32 master weights
// goes to every rank, and a checkpoint gathers the whole optimizer state, so checkpoints are the
// same at any stage and number of ranks. The reducer (comm/reducer.h) reduce-scatters each
// bucket so that a rank receives its shard's gradients (ZeRO-2 keeps no others), and the scaler's
// norm and overflow check combine the shards' partials.
#include "train/trainer.h"

#include <algorithm>

namespace ht {

void Trainer::share_shards(float* arena) const {
  constexpr std::int64_t kPiece = std::int64_t{1} << 28;  // floats (1 GiB): within MPI's int counts
  for (std::size_t r = 0; r < shards_.size(); ++r)
    for (std::int64_t at = shards_[r].begin; at < shards_[r].end; at += kPiece)
      comm_.broadcast(arena + at, static_cast<std::size_t>(std::min(kPiece, shards_[r].end - at)) * sizeof(float),
                      static_cast<int>(r));
}

void Trainer::shard_gradients(const ArenaShard& mine) {
  if (config_.zero >= 2)
    params_.shard_gradients(backend_, mine, [r = reducer_.get()](int param) { return r->staging(param); });
  scaler_->shard_grad_stats(mine, [this](float* partials, std::int32_t n, std::int32_t* flags, std::int32_t tensors) {
    comm_.allreduce(partials, n, CommDType::f32, ReduceOp::sum);   // each chunk's partial plus zeros
    comm_.allreduce(flags, tensors, CommDType::i32, ReduceOp::max);  // any shard's overflow, everywhere
  });
}

void Trainer::share_updated_shards() {
  share_shards(params_.master().data_as<float>());
  params_.refresh_working_copy(backend_);
  const ArenaShard &mine = optimizer_->shard(), &held = params_.grad_range();
  if (held.size() == mine.size()) return;  // ZeRO-2: the optimizer zeroed every gradient held
  float* grads = params_.grads().data_as<float>();  // ZeRO-1: the gradients beyond the shard
  backend_.fill({grads, mine.begin, 0.0f});
  backend_.fill({grads + mine.end, params_.size() - mine.end, 0.0f});
}

std::vector<std::pair<std::string, std::vector<float>>> Trainer::full_optimizer_state() const {
  std::vector<std::pair<std::string, std::vector<float>>> out;
  for (const auto& [kind, tensor] : optimizer_->state_tensors()) {
    if (shards_.empty()) {
      out.emplace_back(kind, download<float>(backend_, tensor));
      continue;
    }
    const Tensor full = backend_.zeros(Shape{params_.size()}, DType::f32);
    const ArenaShard& mine = optimizer_->shard();
    backend_.cast({tensor.data(), DType::f32, full.data_as<float>() + mine.begin, DType::f32, mine.size()});
    share_shards(full.data_as<float>());
    out.emplace_back(kind, download<float>(backend_, full));
  }
  return out;
}

}  // namespace ht
