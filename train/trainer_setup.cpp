// The trainer's setup, in the order the constructor (train/trainer.cpp) takes its steps: the
// configuration checked on every rank; the model and the data in batches of its shape; the
// model's description; the weights, the same on every rank; ZeRO's shards and the reducer; the
// step's state, the loss scaler and the optimizer; the log; a resume.
#include "train/trainer.h"

#include "comm/agreement.h"
#include "models/registry.h"

#include <algorithm>

#include <unistd.h>

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

void Trainer::check_configuration() {
  // Every rank runs the same configuration (the CLI checked), so a problem with it shows on
  // every rank alike: said once, and every rank stops.
  check_on_every_rank(comm_, "checking the configuration", [&] {
    config_.validate();
    faults_.check_ranks(comm_.world_size());
    HT_CHECK(!config_.cuda_graph || backend_.device() != Device::cpu,
             "--cuda-graph needs a GPU backend (--device cuda or simt), not cpu");
    const int cc = backend_.compute_capability();
    HT_CHECK(config_.precision != Precision::fp8 || cc == 0 || cc >= 89,
             "--precision fp8 needs FP8 tensor cores (sm_89 or newer); this GPU is {}{}", backend_.description(),
             backend_.device() == Device::simt ? " (the emulator emulates a Hopper GPU under HALFTAPE_SIMT_ARCH=sm_90)" : "");
    HT_CHECK(!config_.cuda_graph || comm_.world_size() == 1 || comm_.name() == "nccl",
             "--cuda-graph with data parallelism needs NCCL (--device cuda): MPI collectives run on the host");
  });
  // Before anything is sized from the data: every rank trains on the same data (by content).
  check_ranks_agree(comm_, {{"the training data", data_identity_}}, "the training data");
  // A --save directory that cannot be written is found now, on every rank, not after the run.
  if (!config_.save_dir.empty()) {
    const ExistingRun existing = config_.resume.empty() && !config_.overwrite ? ExistingRun::refuse : ExistingRun::accept;
    check_on_every_rank(comm_, "checking --save", [&] { check_save_directory(config_.save_dir, comm_.rank(), existing); });
  }
  backend_.set_gemm_impl(config_.gemm);
}

std::size_t Trainer::make_model_and_batches(const DataSplit& data) {
  std::size_t data_bytes = 0;
  check_on_every_rank(comm_, "making the model and its batches", [&] {
    model_ = make_model(config_.model, data.task, params_);
    const BatchConfig bc{.batch_size = config_.batch_size,
                         .accum_steps = config_.accum_steps,
                         .sequence_length = model_->sequence_length(),
                         .eval_batch_size = config_.eval_batch_size,
                         .eval_windows = config_.eval_windows,
                         .rank = comm_.rank(),
                         .world_size = comm_.world_size(),
                         .seed = config_.seed,
                         .shuffle = config_.shuffle};
    batches_ = make_training_batches(backend_, data, bc);
    eval_ = make_eval_batches(backend_, data, bc);
    data_bytes = backend_.memory_stats().in_use - memory_base_;
    steps_per_epoch_ = batches_->steps_per_epoch();
    rows_per_step_ = checked_mul(batches_->rows_per_micro_batch(), config_.accum_steps, "rows per step");
    total_steps_ = config_.steps ? *config_.steps : checked_mul(config_.epochs, steps_per_epoch_, "--epochs × steps per epoch");
  });
  config_.schedule.total_steps = std::max<std::int64_t>(1, total_steps_);
  return data_bytes;
}

void Trainer::describe_model(const DataSplit& data) {
  model_metadata_["model"] = model_->config().dump();
  if (data.is_text() && data.text.vocab.empty()) {
    // token files: ids with no characters to store; GPT-2's unless --vocab-size said otherwise
    model_metadata_["tokenizer"] = data.text.vocab_size == kGpt2Vocab ? "gpt2" : fmt::format("ids of {}", data.text.vocab_size);
  } else if (data.is_text()) {
    std::string vocab;
    for (const std::string& c : data.text.vocab) vocab += c;
    model_metadata_["vocab"] = vocab;
  }
}

void Trainer::initialize_weights() {
  params_.allocate(backend_, dtype_);
  model_->initialize(params_, backend_, config_.seed);
  if (comm_.world_size() > 1) {
    // Every rank starts from rank 0's weights, whatever its own initialisation produced.
    comm_.broadcast(params_.master().data(), params_.master().bytes(), 0);
    params_.refresh_working_copy(backend_);
  }
}

void Trainer::make_shards_and_reducer() {
  if (config_.zero >= 1 && comm_.world_size() > 1)
    for (int r = 0; r < comm_.world_size(); ++r) shards_.push_back(params_.shard(r, comm_.world_size()));
  if (comm_.world_size() > 1 || comm_.name() == "nccl") {  // (NCCL on one rank: a check of the path)
    reducer_ = std::make_unique<Reducer>(backend_, comm_, params_,
                                         ReducerConfig{config_.bucket_bytes, config_.first_bucket_bytes, config_.allreduce_dtype,
                                                       config_.zero >= 2},
                                         shards_);
  }
}

void Trainer::make_step_state_and_optimizer() {
  steps_ = std::make_unique<StepState>(backend_, config_.schedule);
  if (config_.precision == Precision::fp8) {  // the linear layers FP8 covers: all, or all but the model's first and last
    const Model::LinearWeights w = model_->linear_weights();
    std::vector<int> layers;
    for (int weight : w.all)
      if (config_.fp8_all_layers || std::find(w.edge.begin(), w.edge.end(), weight) == w.edge.end()) layers.push_back(weight);
    HT_CHECK(!layers.empty(), "--precision fp8: --fp8-layers inner leaves no layer of this model in FP8 (its first and "
             "last stay bf16); use --fp8-layers all");
    steps_->enable_fp8(std::make_unique<Fp8State>(backend_, config_.fp8, std::move(layers),
                                                 static_cast<std::int64_t>(params_.params().size())));
  }
  scaler_ = std::make_unique<LossScaler>(backend_, params_, *steps_, config_.scaler, config_.precision == Precision::fp16);
  if (shards_.empty()) {
    optimizer_ = std::make_unique<Optimizer>(backend_, params_, config_.optimizer);
    return;
  }
  const ArenaShard& mine = shards_[static_cast<std::size_t>(comm_.rank())];
  optimizer_ = std::make_unique<Optimizer>(backend_, params_, config_.optimizer, mine);
  shard_gradients(mine);
  // An injected overflow poisons the first gradient of a rank's shard: a rank may have none.
  check_on_every_rank(comm_, "checking --inject-overflow", [&] {
    HT_CHECK(!faults_.overflows_on_this_rank() || mine.size() > 0,
             "--inject-overflow on rank {}: with --zero {} it holds no shard of the gradients (the model has fewer chunks "
             "of {} than ranks); inject on rank 0", comm_.rank(), config_.zero, ParamArena::chunk_elements);
  });
}

void Trainer::make_log(std::ostream* log) {
  StepLogConfig lc;
  lc.log_every = config_.log_every;
  lc.readback_every = readback_interval(config_.log_every, config_.max_consecutive_skips);
  lc.total_steps = total_steps_;
  lc.steps_per_epoch = steps_per_epoch_;
  lc.rows_per_step = rows_per_step_ * comm_.world_size();
  lc.row_unit = batches_->unit();
  for (const ParamInfo& p : params_.params()) lc.param_names.push_back(p.name);
  lc.human = log;
  lc.metrics_path = comm_.rank() == 0 ? config_.metrics_path : "";
  lc.append_metrics = !config_.resume.empty();
  // mpirun hands ranks a pseudo-terminal even when its own output is a file: no bar there.
  lc.progress_bar = config_.progress_bar && log != nullptr && isatty(STDOUT_FILENO) && comm_.world_size() == 1;
  log_ = std::make_unique<StepLog>(backend_, lc);
}

void Trainer::resume(const std::string& path) {
  // Every rank reads the checkpoint; all must find it, and the same step, or none goes on.
  CheckpointState state;
  check_on_every_rank(comm_, "reading --resume", [&] { state = read_checkpoint(path); });
  check_ranks_agree(comm_, {{"the step of the --resume checkpoint", std::to_string(state.step)}}, "the checkpoint");
  check_on_every_rank(comm_, "restoring --resume", [&] { restore(state); });
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

}  // namespace ht
