// Evaluation: the loss and accuracy of the evaluation split, each rank its share, summed over
// the ranks; and when the run evaluates (--eval-every, else each epoch, and at the end).
#include "train/trainer.h"

#include "engine/ops.h"

namespace ht {

EvalResult Trainer::evaluate() {
  // Each rank evaluates its share; the sums are then added up.
  const Tensor sums = backend_.zeros(Shape{2}, DType::f32);  // loss, correct
  OpContext ctx{backend_, params_, nullptr, nullptr, steps_->fp8()};  // (FP8 layers cast with the step's scales)
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

void Trainer::report_fp8_saturations(std::int64_t step) {
  Fp8State* fp8 = steps_->fp8();
  if (!fp8 || fp8->tensors().count == 0) return;
  if (comm_.world_size() > 1)  // counts below 2^31 a report: summed as i32
    comm_.allreduce(fp8->tensors().saturated, fp8->tensors().count, CommDType::i32, ReduceOp::sum);
  const std::vector<std::uint32_t> counts = fp8->take_saturations();
  nlohmann::json per_tensor = nlohmann::json::object();
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] == 0) continue;
    const int weight = fp8->layer_weights()[i / kFp8Roles];
    per_tensor[fmt::format("{}:{}", params_.params()[static_cast<std::size_t>(weight)].name,
                           fp8_role_name(static_cast<Fp8Role>(i % kFp8Roles)))] = counts[i];
    total += counts[i];
  }
  log_->metrics_record(
      nlohmann::json{{"event", "fp8_saturation"}, {"step", step}, {"total", total}, {"tensors", per_tensor}}.dump());
  if (total > 0)
    log_->message(fmt::format("fp8: {} elements saturated through step {}: {}", total, step, per_tensor.dump()));
}

}  // namespace ht
