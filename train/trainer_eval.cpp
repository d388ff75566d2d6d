// Evaluation: the loss and accuracy of the evaluation split, each rank its share, summed over
// the ranks; and when the run evaluates (--eval-every, else each epoch, and at the end).
#include "train/trainer.h"

#include "engine/ops.h"

namespace ht {

EvalResult Trainer::evaluate() {
  // Each rank evaluates its share; the sums are then added up.
  const Tensor sums = backend_.zeros(Shape{2}, DType::f32);  // loss, correct
  OpContext ctx{backend_, params_, nullptr};
  for (std::int64_t i = 0; i < eval_->batches(); ++i) {
    const Batch batch = eval_->batch(i, dtype_);
    const Var logits = model_->forward(ctx, batch.input);
    cross_entropy(ctx, logits, {batch.targets.data_as<std::int32_t>(), nullptr, 1.0f, sums.data_as<float>(), 1.0f,
                                sums.data_as<float>() + 1, model_->classes()});
  }
  comm_.allreduce(sums.data(), 2, CommDType::f32, ReduceOp::sum);  // device memory, as NCCL needs
  const std::vector<float> host = download<float>(backend_, sums);
  const auto n = static_cast<double>(eval_->total_rows());
  return {host[0] / n, host[1] / n};
}

bool Trainer::evaluates_after(std::int64_t step, std::int64_t last) const {
  if (step == last) return true;
  return config_.eval_every > 0 ? step % config_.eval_every == 0 : step % steps_per_epoch_ == 0;
}

}  // namespace ht
