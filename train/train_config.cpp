#include "train/train_config.h"

#include "ground/error.h"
#include "models/registry.h"

#include <cmath>

namespace ht {

std::string_view precision_name(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::fp16: return "fp16";
    case Precision::bf16: return "bf16";
    case Precision::fp8: return "fp8";
  }
  return "?";
}

DType compute_dtype(Precision p) {
  switch (p) {
    case Precision::fp16: return DType::f16;
    case Precision::bf16:
    case Precision::fp8: return DType::bf16;
    default: return DType::f32;
  }
}

void TrainConfig::validate() const {
  HT_CHECK(batch_size >= 1, "--batch-size must be at least 1, got {}", batch_size);
  HT_CHECK(zero >= 0 && zero <= 2, "--zero {}: the stages are 0 (no sharding), 1 (optimizer state) and 2 (optimizer state and "
           "gradients)", zero);
  HT_CHECK(accum_steps >= 1, "--accum-steps must be at least 1, got {}", accum_steps);
  HT_CHECK(epochs >= 1 || steps.has_value(), "--epochs must be at least 1, got {}", epochs);
  HT_CHECK(!steps || *steps >= 0, "--steps must be >= 0, got {}", steps.value_or(0));
  HT_CHECK(eval_batch_size >= 1, "--eval-batch-size must be at least 1");
  HT_CHECK(log_every >= 1, "--log-every must be at least 1, got {}", log_every);
  HT_CHECK(save_every >= 0, "--save-every must be >= 0, got {}", save_every);
  HT_CHECK(max_consecutive_skips >= 1, "--max-consecutive-skips must be at least 1, got {}", max_consecutive_skips);
  HT_CHECK(save_every == 0 || !save_dir.empty(), "--save-every needs --save DIR");
  HT_CHECK(schedule.base_lr > 0 && std::isfinite(schedule.base_lr), "--lr must be positive, got {}", schedule.base_lr);
  HT_CHECK(schedule.warmup_steps >= 0, "--warmup-steps must be >= 0");
  HT_CHECK(optimizer.sgd.momentum >= 0 && optimizer.sgd.momentum < 1, "--momentum must be in [0, 1)");
  HT_CHECK(std::isfinite(optimizer.sgd.weight_decay) && std::isfinite(optimizer.adamw.weight_decay) &&
               optimizer.sgd.weight_decay >= 0 && optimizer.adamw.weight_decay >= 0,
           "--weight-decay must be a finite number >= 0");
  HT_CHECK(!optimizer.sgd.nesterov || optimizer.sgd.momentum > 0, "--nesterov needs --momentum > 0");
  HT_CHECK(clip_grad_norm >= 0 && std::isfinite(clip_grad_norm), "--clip-grad-norm must be a finite number >= 0");
  HT_CHECK(bucket_bytes > 0, "--bucket-mb must be positive");
  HT_CHECK(first_bucket_bytes > 0, "--first-bucket-mb must be positive");
  HT_CHECK(keep >= 0, "--keep must be >= 0, got {}", keep);
  HT_CHECK(eval_every >= 0, "--eval-every must be >= 0, got {}", eval_every);
  HT_CHECK(eval_windows >= 1, "--eval-windows must be at least 1, got {}", eval_windows);
  // A graph under capture keeps every block freed during it for the graph's replays, so each
  // bucket's staging, wire and received buffers would stay allocated: ZeRO-2's bound of two
  // buckets in flight (comm/reducer.h) would not hold.
  HT_CHECK(!cuda_graph || zero < 2, "--cuda-graph with --zero 2: a captured step keeps every bucket's buffers allocated, "
           "which undoes ZeRO-2's memory bound; use --zero 1, or leave out --cuda-graph");
  HT_CHECK(fp8.amax_history >= 1 && fp8.amax_history <= 1 << 20, "--fp8-amax-history must be in [1, 2^20], got {}",
           fp8.amax_history);
  HT_CHECK(fp8.margin >= 0 && fp8.margin <= 64, "--fp8-margin must be in [0, 64], got {}", fp8.margin);
  validate_model(model);
}

}  // namespace ht
