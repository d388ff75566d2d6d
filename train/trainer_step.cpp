// One training step, in the order the data flows (docs/architecture.md, "One training step"):
// data -> forward (tape) -> loss -> scaled backward -> allreduce buckets -> unscale/check/clip
// -> optimizer -> scaler update; eagerly, or replayed as a captured CUDA graph (--cuda-graph).
// The first eager step of a run also measures the memory account (train/memory_account.h).
#include "train/trainer.h"

#include "engine/ops.h"
#include "engine/rng.h"

#include <cmath>

namespace ht {

void Trainer::train_step(std::int64_t step) {
  faults_.at_step_start(step);
  const std::int64_t epoch = (step - 1) / steps_per_epoch_;  // 0-based
  batches_->prepare_step(step);  // the host's part of the step: a new sample order, or the step's token windows
  const bool inject = faults_.overflow_at(step);
  if (config_.cuda_graph && !inject && step > kGraphWarmupSteps) {
    if (!graph_) {  // capture once (the warm-up steps filled the allocator's cache), then replay
      backend_.begin_capture();
      queue_step(false);
      graph_ = backend_.end_capture();
    }
    graph_->replay();
    // The replayed collectives are watched like eager ones: a dead peer ends the job, not a hang.
    comm_.watch_queued_work(fmt::format("step {} (a replayed CUDA graph)", step));
  } else {
    measuring_step_ = !memory_.measured_step;  // the first eager step of this run
    step_base_ = backend_.memory_stats().in_use;
    if (measuring_step_) backend_.reset_memory_peak();
    queue_step(inject);
    if (measuring_step_) {
      const AllocatorStats after = backend_.memory_stats();
      const std::size_t kept_through = step_base_ + memory_.activations;
      memory_.workspace = after.peak_in_use > kept_through ? after.peak_in_use - kept_through : 0;
      memory_.cache = after.cached;
      memory_.measured_step = true;
      measuring_step_ = false;
      log_->message(memory_.describe());
      log_->metrics_record(nlohmann::json{{"event", "memory"}, {"step", step}, {"memory", memory_.to_json()}}.dump());
    }
  }
  log_->step_queued(step, epoch + 1);
  steps_done_ = step;
}

void Trainer::queue_step(bool inject_overflow) {
  const auto divisor = static_cast<float>(rows_per_step_);
  const Fp8State* fp8 = steps_->fp8();
  if (fp8) fp8->begin_step();  // the delayed recipe's scales, from the steps before this one
  for (std::int64_t micro = 0; micro < config_.accum_steps; ++micro) {
    // data: this step's micro-batch, located on the device from the step counter
    const Batch batch = batches_->micro_batch(micro, steps_->device(), dtype_);
    // forward, recorded on the tape
    Tape tape;
    const bool last_micro_batch = micro + 1 == config_.accum_steps;
    if (reducer_) reducer_->attach(tape, /*sync=*/last_micro_batch);  // no traffic before the last
    // dropout: masks keyed by the seed, the step (on the device), the global micro-batch and the site
    const DropoutContext drop{.p = config_.dropout,
                              .seed = derive_seed(config_.seed, /*purpose=*/8),
                              .micro = static_cast<std::uint32_t>(micro * comm_.world_size() + comm_.rank()),
                              .state = steps_->device()};
    OpContext ctx{backend_, params_, &tape, config_.dropout > 0 ? &drop : nullptr, fp8};
    const Var logits = model_->forward(ctx, batch.input);
    // loss: mean cross-entropy over the step's rows, logit gradient × loss scale fused in, written
    // over the logits (nothing reads them after the loss)
    cross_entropy(ctx, logits, {batch.targets.data_as<std::int32_t>(), steps_->loss_scale(), divisor, steps_->step_loss(),
                                1.0f / divisor, nullptr, model_->classes(), /*gradient_in_place=*/true});
    if (measuring_step_) {  // what the forward keeps for the backward, above the state between steps
      const std::size_t in_use = backend_.memory_stats().in_use;
      memory_.activations = std::max(memory_.activations, in_use > step_base_ ? in_use - step_base_ : 0);
    }
    // scaled backward: parameter gradients accumulate in the FP32 arena; on the last
    // micro-batch (ZeRO-2: on each) every bucket goes out as soon as its gradients are final
    tape.backward();
    // allreduce: wait for every bucket (gradients are now averaged over the ranks; ZeRO-2: every
    // micro-batch's, each rank's part added into its shard)
    if (reducer_ && reducer_->syncing()) reducer_->finish();
  }
  if (fp8) {  // FP8's amaxes of this step, the largest over the ranks, join the histories
    if (comm_.world_size() > 1 && fp8->tensors().count > 0)
      comm_.allreduce(fp8->step_amaxes(), fp8->tensors().count, CommDType::f32, ReduceOp::max);
    fp8->end_step(steps_->device());
  }

  if (inject_overflow) {  // the first gradient of the rank's shard (of the arena, unsharded): what its scaler checks
    const std::int64_t first = shards_.empty() ? 0 : shards_[static_cast<std::size_t>(comm_.rank())].begin;
    backend_.fill({params_.grad_arena() + first, 1, INFINITY});
  }
  // unscale, check for inf/NaN, global norm, clip coefficient
  scaler_->unscale(config_.clip_grad_norm, log_->nonfinite_ring(), log_->ring_slots());
  // every rank makes the same skip decision: one overflowing rank makes all of them skip
  if (comm_.world_size() > 1) comm_.allreduce(steps_->found_inf(), 1, CommDType::i32, ReduceOp::max);
  // optimizer: skipped on the device when any gradient was non-finite (ZeRO-1: this rank's shard)
  scaler_->step(*optimizer_);
  if (!shards_.empty()) share_updated_shards();
  // scaler update: back off or grow, and write this step's record
  scaler_->update(log_->record_ring(), log_->ring_slots());
}

}  // namespace ht
