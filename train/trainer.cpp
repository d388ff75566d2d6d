// The trainer's constructor, as the list of its setup's steps (each in train/trainer_setup.cpp),
// and the run loop over steps, evaluations, health checks and checkpoints (train/trainer.h lists
// the files of its other parts).
#include "train/trainer.h"

#include "train/stop_signal.h"

#include <cstring>

namespace ht {

Trainer::Trainer(const TrainConfig& config, Backend& backend, Communicator& comm, const DataSplit& data,
                 std::ostream* log)
    : config_(config),
      backend_(backend),
      comm_(comm),
      faults_(config.inject_faults, config.inject_overflow, comm.rank()),
      data_identity_(data_identity(data)),
      eval_split_(data.eval_split()),
      dtype_(compute_dtype(config.precision)) {
  check_configuration();                           // the same answer on every rank, before anything is made
  memory_base_ = backend.memory_stats().in_use;
  const std::size_t data_bytes = make_model_and_batches(data);
  describe_model(data);                            // what model.safetensors' metadata says of it
  initialize_weights();                            // rank 0's on every rank
  make_shards_and_reducer();                       // ZeRO's shards; data parallelism's buckets
  make_step_state_and_optimizer();                 // the step's state, the loss scaler, the optimizer
  make_log(log);
  if (!config_.resume.empty()) resume(config_.resume);
  start_step_ = checked_through_ = steps_done_;
  measure_persistent_memory(memory_base_, data_bytes);
}

const MemoryAccount& Trainer::dry_run() {
  train_step(steps_done_ + 1);
  backend_.synchronize();
  return memory_;
}

Trainer::~Trainer() = default;

TrainSummary Trainer::run() {
  TrainSummary summary;
  const double start = now_seconds();
  std::int64_t last_eval = steps_done_;
  auto evaluate_and_log = [&](std::int64_t step) {
    log_->drain();
    const EvalResult r = evaluate();
    EvalSummary e{(step + steps_per_epoch_ - 1) / steps_per_epoch_, step, log_->mean_loss(last_eval, step), r.loss, r.accuracy,
                  eval_split_, step - last_eval};
    log_->eval(e);
    report_fp8_saturations(step);
    summary.evals.push_back(e);
    last_eval = step;
  };
  auto finish = [&] {
    summary.steps = log_->history();
    summary.skipped_steps = log_->skipped_total();
    summary.seconds = now_seconds() - start;
    return summary;
  };

  // Preempted (SIGTERM, ...): stop between steps, every rank after the same one, saving first.
  auto stop_on_signal = [&](int signo) {
    log_->drain();
    check_health();
    std::string saved = "no checkpoint written (no --save)";
    if (!config_.save_dir.empty())
      saved = steps_done_ > start_step_ ? "checkpoint saved to " + save_checkpoint(steps_done_) : "nothing new to save";
    log_->message(fmt::format("stopped by signal {} ({}) after step {}: {}", signo, strsignal(signo), steps_done_, saved));
    summary.stopped_by_signal = signo;
    return finish();
  };

  const std::int64_t last = std::min(total_steps_, config_.stop_after.value_or(total_steps_));
  for (std::int64_t step = steps_done_ + 1; step <= last; ++step) {
    if (const int signo = agreed_stop_signal()) return stop_on_signal(signo);
    train_step(step);
    if (evaluates_after(step, last)) evaluate_and_log(step);
    check_health();
    if (config_.save_every > 0 && step % config_.save_every == 0 && step != last) save_checkpoint(step);
  }
  if (const int signo = agreed_stop_signal()) return stop_on_signal(signo);
  if (last_eval != last || summary.evals.empty()) evaluate_and_log(last);
  log_->drain();
  check_health();
  if (!config_.save_dir.empty()) save_checkpoint(last);
  return finish();
}

}  // namespace ht
