// The trainer's setup - the configuration checked on every rank, the data, the model, its
// shards, the reducer, the scaler, the optimizer, the log, a resume - and the run loop over steps,
// evaluations, health checks and checkpoints (train/trainer.h lists the files of its other parts).
#include "train/trainer.h"

#include "comm/agreement.h"
#include "engine/ops.h"
#include "engine/rng.h"
#include "models/registry.h"
#include "train/stop_signal.h"

#include <unistd.h>

#include <cmath>
#include <cstring>

namespace ht {

namespace {

// How often the step records are read back: the largest divisor of --log-every that is at most
// --max-consecutive-skips, so that a streak of skipped steps is seen within a few steps of its
// limit while the human log still prints every --log-every steps.
std::int64_t readback_interval(std::int64_t log_every, std::int64_t max_consecutive_skips) {
  for (std::int64_t d = std::min(log_every, max_consecutive_skips); d > 1; --d)
    if (log_every % d == 0) return d;
  return 1;
}

}  // namespace

Trainer::Trainer(const TrainConfig& config, Backend& backend, Communicator& comm, const DataSplit& data,
                 std::ostream* log)
    : config_(config),
      backend_(backend),
      comm_(comm),
      faults_(config.inject_faults, config.inject_overflow, comm.rank()),
      data_identity_(data_identity(data)),
      eval_split_(data.eval_split()),
      dtype_(compute_dtype(config.precision)) {
  // Every rank runs the same configuration (the CLI checked), so a problem with it shows on
  // every rank alike: said once, and every rank stops.
  check_on_every_rank(comm, "checking the configuration", [&] {
    config_.validate();
    faults_.check_ranks(comm.world_size());
    HT_CHECK(!config_.cuda_graph || backend.device() != Device::cpu,
             "--cuda-graph needs a GPU backend (--device cuda or simt), not cpu");
    HT_CHECK(!config_.cuda_graph || comm.world_size() == 1 || comm.name() == "nccl",
             "--cuda-graph with data parallelism needs NCCL (--device cuda): MPI collectives run on the host");
  });
  // Before anything is sized from the data: every rank trains on the same data (by content).
  check_ranks_agree(comm, {{"the training data", data_identity_}}, "the training data");
  // A --save directory that cannot be written is found now, on every rank, not after the run.
  if (!config_.save_dir.empty())
    check_on_every_rank(comm, "checking --save", [&] { check_save_directory(config_.save_dir, comm.rank(), config_.resume.empty() && !config_.overwrite
                                                                    ? ExistingRun::refuse : ExistingRun::accept); });
  backend.set_gemm_impl(config_.gemm);
  memory_base_ = backend.memory_stats().in_use;
  std::size_t data_bytes = 0;
  // The model, and the data in batches of the shape it reads.
  check_on_every_rank(comm, "making the model and its batches", [&] {
    model_ = make_model(config_.model, data.task, params_);
    const BatchConfig bc{.batch_size = config_.batch_size,
                         .accum_steps = config_.accum_steps,
                         .sequence_length = model_->sequence_length(),
                         .eval_batch_size = config_.eval_batch_size,
                         .eval_windows = config_.eval_windows,
                         .rank = comm.rank(),
                         .world_size = comm.world_size(),
                         .seed = config_.seed,
                         .shuffle = config_.shuffle};
    batches_ = make_training_batches(backend, data, bc);
    eval_ = make_eval_batches(backend, data, bc);
    data_bytes = backend.memory_stats().in_use - memory_base_;
    steps_per_epoch_ = batches_->steps_per_epoch();
    rows_per_step_ = checked_mul(batches_->rows_per_micro_batch(), config_.accum_steps, "rows per step");
    total_steps_ = config_.steps ? *config_.steps : checked_mul(config_.epochs, steps_per_epoch_, "--epochs × steps per epoch");
  });
  config_.schedule.total_steps = std::max<std::int64_t>(1, total_steps_);
  model_metadata_["model"] = model_->config().dump();
  if (data.is_text() && data.text.vocab.empty()) {
    // token files: ids with no characters to store; GPT-2's unless --vocab-size said otherwise
    model_metadata_["tokenizer"] = data.text.vocab_size == kGpt2Vocab ? "gpt2" : fmt::format("ids of {}", data.text.vocab_size);
  } else if (data.is_text()) {
    std::string vocab;
    for (const std::string& c : data.text.vocab) vocab += c;
    model_metadata_["vocab"] = vocab;
  }

  params_.allocate(backend, dtype_);
  model_->initialize(params_, backend, config_.seed);
  if (comm.world_size() > 1) {
    // Every rank starts from rank 0's weights, whatever its own initialisation produced.
    comm.broadcast(params_.master().data(), params_.master().bytes(), 0);
    params_.refresh_working_copy(backend);
  }
  if (config_.zero >= 1 && comm.world_size() > 1)
    for (int r = 0; r < comm.world_size(); ++r) shards_.push_back(params_.shard(r, comm.world_size()));
  if (comm.world_size() > 1 || comm.name() == "nccl") {  // (NCCL on one rank: a check of the path)
    reducer_ = std::make_unique<Reducer>(backend, comm, params_,
                                         ReducerConfig{config_.bucket_bytes, config_.first_bucket_bytes, config_.allreduce_dtype,
                                                       config_.zero >= 2},
                                         shards_);
  }

  scaler_ = std::make_unique<LossScaler>(backend, params_, config_.scaler, config_.precision == Precision::fp16);
  if (!shards_.empty()) {
    const ArenaShard& mine = shards_[static_cast<std::size_t>(comm.rank())];
    optimizer_ = std::make_unique<Optimizer>(backend, params_, config_.optimizer, mine);
    shard_gradients(mine);
    // An injected overflow poisons the first gradient of a rank's shard: a rank may have none.
    check_on_every_rank(comm, "checking --inject-overflow", [&] {
      HT_CHECK(!faults_.overflows_on_this_rank() || mine.size() > 0,
               "--inject-overflow on rank {}: with --zero {} it holds no shard of the gradients (the model has fewer chunks "
               "of {} than ranks); inject on rank 0", comm.rank(), config_.zero, ParamArena::chunk_elements);
    });
  } else {
    optimizer_ = std::make_unique<Optimizer>(backend, params_, config_.optimizer);
  }

  StepLogConfig lc;
  lc.log_every = config_.log_every;
  lc.readback_every = readback_interval(config_.log_every, config_.max_consecutive_skips);
  lc.total_steps = total_steps_;
  lc.steps_per_epoch = steps_per_epoch_;
  lc.rows_per_step = rows_per_step_ * comm.world_size();
  lc.row_unit = batches_->unit();
  for (const ParamInfo& p : params_.params()) lc.param_names.push_back(p.name);
  lc.human = log;
  lc.metrics_path = comm.rank() == 0 ? config_.metrics_path : "";
  lc.append_metrics = !config_.resume.empty();
  // mpirun hands ranks a pseudo-terminal even when its own output is a file: no bar there.
  lc.progress_bar = config_.progress_bar && log != nullptr && isatty(STDOUT_FILENO) && comm.world_size() == 1;
  log_ = std::make_unique<StepLog>(backend, lc);
  if (!config_.resume.empty()) {
    // Every rank reads the checkpoint; all must find it, and the same step, or none goes on.
    CheckpointState state;
    check_on_every_rank(comm, "reading --resume", [&] { state = read_checkpoint(config_.resume); });
    check_ranks_agree(comm, {{"the step of the --resume checkpoint", std::to_string(state.step)}}, "the checkpoint");
    check_on_every_rank(comm, "restoring --resume", [&] { restore(state); });
  }
  start_step_ = checked_through_ = steps_done_;
  measure_persistent_memory(memory_base_, data_bytes);
}

void Trainer::measure_persistent_memory(std::size_t in_use_at_start, std::size_t data_bytes) {
  MemoryAccount& m = memory_;
  m.parameters = params_.size();
  m.numel = params_.numel();
  m.data = data_bytes;
  std::vector<Tensor> state = {params_.master(), params_.grads()};
  if (params_.has_separate_working_copy()) state.push_back(params_.working());
  m.master = params_.master().bytes();
  m.working = params_.has_separate_working_copy() ? params_.working().bytes() : 0;
  m.gradients = params_.grads().bytes();
  for (const auto& [name, t] : optimizer_->state_tensors()) {
    m.optimizer += t.bytes();
    state.push_back(t);
  }
  for (const Tensor& t : state) m.rounding += CachingAllocator::round_size(t.bytes()) - t.bytes();
  const std::size_t in_use = backend_.memory_stats().in_use - in_use_at_start, known = m.data + m.state() + m.rounding;
  m.other = in_use > known ? in_use - known : 0;  // the rest of what the trainer holds
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
