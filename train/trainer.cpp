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
  for (std::int64_t micro = 0; micro < config_.accum_steps; ++micro) {
    // data: this step's micro-batch, located on the device from the step counter
    const Batch batch = batches_->micro_batch(micro, scaler_->state(), dtype_);
    // forward, recorded on the tape
    Tape tape;
    const bool last_micro_batch = micro + 1 == config_.accum_steps;
    if (reducer_) reducer_->attach(tape, /*sync=*/last_micro_batch);  // no traffic before the last
    // dropout: masks keyed by the seed, the step (on the device), the global micro-batch and the site
    const DropoutContext drop{.p = config_.dropout,
                              .seed = derive_seed(config_.seed, /*purpose=*/8),
                              .micro = static_cast<std::uint32_t>(micro * comm_.world_size() + comm_.rank()),
                              .state = scaler_->state()};
    OpContext ctx{backend_, params_, &tape, config_.dropout > 0 ? &drop : nullptr};
    const Var logits = model_->forward(ctx, batch.input);
    // loss: mean cross-entropy over the step's rows, logit gradient × loss scale fused in, written
    // over the logits (nothing reads them after the loss)
    cross_entropy(ctx, logits, {batch.targets.data_as<std::int32_t>(), scaler_->scale(), divisor, scaler_->step_loss(),
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

  if (inject_overflow) {  // the first gradient of the rank's shard (of the arena, unsharded): what its scaler checks
    const std::int64_t first = shards_.empty() ? 0 : shards_[static_cast<std::size_t>(comm_.rank())].begin;
    backend_.fill({params_.grad_arena() + first, 1, INFINITY});
  }
  // unscale, check for inf/NaN, global norm, clip coefficient
  scaler_->unscale(config_.clip_grad_norm, config_.schedule, log_->nonfinite_ring(), log_->ring_slots());
  // every rank makes the same skip decision: one overflowing rank makes all of them skip
  if (comm_.world_size() > 1) comm_.allreduce(scaler_->found_inf(), 1, CommDType::i32, ReduceOp::max);
  // optimizer: skipped on the device when any gradient was non-finite (ZeRO-1: this rank's shard)
  scaler_->step(*optimizer_);
  if (!shards_.empty()) share_updated_shards();
  // scaler update: back off or grow, and write this step's record
  scaler_->update(log_->record_ring(), log_->ring_slots());
}

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

CheckpointState Trainer::snapshot() const {
  CheckpointState s;
  s.params = params_.params();
  s.arena_size = params_.size();
  s.master = download<float>(backend_, params_.master());
  s.optimizer = full_optimizer_state();
  s.step_state = scaler_->read_state();
  s.step = steps_done_;
  s.config = run_identity();
  s.model_metadata = model_metadata_;
  return s;
}

nlohmann::json Trainer::run_identity() const {
  nlohmann::json names = nlohmann::json::array(), kinds = nlohmann::json::array();
  for (const ParamInfo& p : params_.params()) names.push_back(p.name);
  for (const auto& [kind, tensor] : optimizer_->state_tensors()) kinds.push_back(kind);
  return {{"params", names},
          {"optimizer_state", kinds},
          {"model", model_->config()},
          {"precision", precision_name(config_.precision)},
          {"optimizer", optimizer_name(config_.optimizer.kind)},
          {"seed", config_.seed},
          {"batch_size", config_.batch_size},
          {"accum_steps", config_.accum_steps},
          {"world_size", comm_.world_size()},
          {"data", data_identity_}};
}

std::string Trainer::save_checkpoint(std::int64_t step) const {
  HT_ASSERT(step == steps_done_);
  const CheckpointState state = snapshot();
  const std::string& root = config_.save_dir;
  if (comm_.rank() == 0) begin_checkpoint(root, step);
  comm_.barrier();
  // This rank's own state: where it is in the data (its shard follows from seed, epoch, rank).
  write_rank_file(checkpoint_staging_dir(root, step), comm_.rank(),
                  {{"rank", comm_.rank()}, {"world_size", comm_.world_size()}, {"step", step}, {"seed", config_.seed},
                   {"epoch", step / steps_per_epoch_}, {"step_in_epoch", step % steps_per_epoch_}});
  comm_.barrier();
  std::string dir;
  if (comm_.rank() == 0) {
    const CommitResult result = commit_checkpoint(root, state, comm_.world_size(), config_.keep, faults_.save_hook(step));
    dir = result.dir;
    log_->message(fmt::format("saved {}", dir));
    if (!result.removed.empty())
      log_->message(fmt::format("removed {} (--keep {})", fmt::join(result.removed, ", "), config_.keep));
  }
  comm_.barrier();
  return dir;
}

void Trainer::restore(const CheckpointState& s) {
  const nlohmann::json identity = run_identity();
  const std::vector<ParamInfo>& params = params_.params();
  const std::string what = config_.resume.empty() ? std::string("checkpoint") : "--resume " + config_.resume;
  for (const char* key : {"model", "precision", "optimizer", "optimizer_state", "seed", "data", "params"})
    HT_CHECK(s.config.contains(key), "{}: the checkpoint's config lacks '{}'", what, key);
  for (const char* key : {"batch_size", "accum_steps", "world_size"})
    HT_CHECK(s.config.contains(key) && s.config[key].is_number_integer() && s.config[key].get<std::int64_t>() >= 1,
             "{}: the checkpoint's config lacks '{}' (a count)", what, key);
  for (const char* key : {"model", "precision", "optimizer", "optimizer_state", "seed", "data", "params"})
    HT_CHECK(s.config[key] == identity[key], "{}: the checkpoint has {} {}, this run has {}", what, key,
             s.config[key].dump(), identity[key].dump());
  // The batch: what must match is the global one (batch × accumulation × ranks). A step reads the
  // same windows (or samples) however the ranks split it (data/batches.cpp), and the checkpoint
  // holds the whole state (gathered under ZeRO-1), so a run resumes on another number of ranks.
  struct GlobalBatch {
    std::int64_t batch, accum, ranks;
    std::int64_t total() const { return batch * accum * ranks; }
    std::string describe() const { return fmt::format("{} (batch_size {} x accum_steps {} x {} ranks)", total(), batch, accum, ranks); }
  };
  auto global_batch = [](const nlohmann::json& c) {
    return GlobalBatch{c["batch_size"].get<std::int64_t>(), c["accum_steps"].get<std::int64_t>(), c["world_size"].get<std::int64_t>()};
  };
  const GlobalBatch saved = global_batch(s.config), here = global_batch(identity);
  HT_CHECK(saved.total() == here.total(), "{}: the checkpoint's global batch is {}, this run's {}", what, saved.describe(),
           here.describe());
  HT_CHECK(s.params.size() == params.size(), "{}: the checkpoint has {} tensors, the model {}", what, s.params.size(),
           params.size());
  for (std::size_t i = 0; i < s.params.size(); ++i)
    HT_CHECK(s.params[i].name == params[i].name && s.params[i].shape == params[i].shape,
             "{}: tensor '{}' is {} in the checkpoint, the model has '{}' {}", what, s.params[i].name,
             s.params[i].shape.to_string(), params[i].name, params[i].shape.to_string());
  HT_CHECK(static_cast<std::int64_t>(s.ranks.size()) == saved.ranks, "{}: written by {} ranks, its config says {}", what,
           s.ranks.size(), saved.ranks);
  for (std::size_t r = 0; r < s.ranks.size(); ++r)
    HT_CHECK(s.ranks[r].value("rank", -1) == static_cast<int>(r) && s.ranks[r].value("step", std::int64_t{-1}) == s.step,
             "{}: rank-{}.json does not describe rank {} at step {}", what, r, r, s.step);
  // On another number of ranks the epochs must still fall at the same steps (a sample set that
  // divides evenly by both; a text's windows always do).
  HT_CHECK(s.ranks[0].value("epoch", std::int64_t{-1}) == s.step / steps_per_epoch_,
           "{}: saved at step {} of epoch {}, but {} ranks make it epoch {} ({} steps an epoch): the data set does not split "
           "alike over {} and {} ranks", what, s.step, s.ranks[0].value("epoch", std::int64_t{-1}), comm_.world_size(),
           s.step / steps_per_epoch_, steps_per_epoch_, saved.ranks, comm_.world_size());
  HT_CHECK(s.step <= total_steps_, "{}: the checkpoint is at step {}, beyond --steps {}", what, s.step, total_steps_);
  HT_CHECK(!config_.stop_after || *config_.stop_after >= s.step,
           "--stop-after {} is before the step this run resumes from ({}, {}): nothing to run", config_.stop_after.value_or(0),
           s.step, what);
  const auto state_tensors = optimizer_->state_tensors();
  HT_CHECK(s.optimizer.size() == state_tensors.size(), "{}: the optimizer state differs", what);
  for (const auto& [kind, values] : s.optimizer)
    HT_CHECK(static_cast<std::int64_t>(values.size()) == params_.size(), "{}: the optimizer state '{}' has {} elements, the "
             "arena {}", what, kind, values.size(), params_.size());
  // Everything checked: now change state.
  upload(backend_, params_.master(), s.master);
  params_.refresh_working_copy(backend_);
  const ArenaShard& mine = optimizer_->shard();  // the whole arena, or this rank's part of it
  for (std::size_t i = 0; i < s.optimizer.size(); ++i) {
    backend_.upload(state_tensors[i].second.data(), s.optimizer[i].second.data() + mine.begin,
                    static_cast<std::size_t>(mine.size()) * sizeof(float));
  }
  DeviceStepState d = s.step_state;
  d.control = StepControl{};
  d.step_loss = 0;
  scaler_->write_state(d);
  steps_done_ = s.step;
  log_->start_after(s.step);
  backend_.synchronize();
}

void Trainer::check_health() {
  // Only records every rank has read back by now (settled_through), so all ranks stop together.
  const std::int64_t through = log_->settled_through();
  const bool scaling = scaler_->scaling_enabled();
  for (std::int64_t step = checked_through_ + 1; step <= through; ++step) {
    const StepSummary* s = log_->summary_of(step);
    HT_ASSERT(s != nullptr);
    std::string problem;
    if (s->record.consecutive_skips >= config_.max_consecutive_skips) {
      problem = fmt::format("{} consecutive steps up to step {} were skipped (non-finite gradients, last in {}; loss scale {:g}) "
                            "- --max-consecutive-skips {}",
                            s->record.consecutive_skips, step,
                            s->nonfinite_tensors.empty() ? std::string("?") : fmt::format("{}", fmt::join(s->nonfinite_tensors, ", ")),
                            s->record.loss_scale, config_.max_consecutive_skips);
    } else if (!scaling && !std::isfinite(s->record.loss)) {
      problem = fmt::format("the loss of step {} is {} (in {} there is no loss scale to back off: the run has diverged)", step,
                            std::isnan(s->record.loss) ? "NaN" : "infinite", precision_name(config_.precision));
    }
    if (problem.empty()) continue;
    log_->drain();
    std::string saved = "no checkpoint written (no --save)";
    if (!config_.save_dir.empty()) {
      const std::string dir = save_checkpoint(steps_done_);
      saved = comm_.rank() == 0 ? "checkpoint saved to " + dir : "checkpoint saved by rank 0";
    }
    fail_collectively(fmt::format("stopping after step {}: {}; {}", steps_done_, problem, saved));
  }
  checked_through_ = std::max(checked_through_, through);
}

int Trainer::agreed_stop_signal() {
  const int mine = requested_stop_signal();
  return comm_.world_size() > 1 ? comm_.allreduce_max(mine, "agreeing on a stop signal") : mine;
}

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
