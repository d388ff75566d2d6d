// Trainer: one model, one data set, one loop - over interfaces: it holds a Model
// (models/model.h) and batches of data (data/batches.h) and names neither a model nor a data
// set. A step of `train_step` reads top to bottom as
//   data -> forward (tape) -> loss -> scaled backward -> [allreduce] -> unscale/check/clip
//        -> optimizer -> scaler update
// with every decision (skip, scale, LR) taken on the device; the host only queues work and,
// every --log-every steps, reads back what happened.
//
// One file a concept: train/trainer.cpp (the constructor's steps and the run loop),
// trainer_setup.cpp (those steps), trainer_step.cpp (the step),
// trainer_eval.cpp (evaluation), trainer_checkpoint.cpp (save, restore, the run's identity),
// trainer_health.cpp (stopping on endless overflows, divergence or a signal),
// trainer_sharding.cpp (ZeRO-1/2).
#pragma once

#include "comm/communicator.h"
#include "comm/reducer.h"
#include "data/batches.h"
#include "data/dataset.h"
#include "engine/backend.h"
#include "engine/checkpoint.h"
#include "engine/loss_scaler.h"
#include "engine/optimizer.h"
#include "engine/params.h"
#include "engine/step_state.h"
#include "models/model.h"
#include "train/fault_injection.h"
#include "train/memory_account.h"
#include "train/step_log.h"
#include "train/train_config.h"

#include <map>
#include <memory>
#include <ostream>

namespace ht {

struct EvalResult {
  double loss = 0;
  double accuracy = 0;
};

struct TrainSummary {
  std::vector<StepSummary> steps;
  std::vector<EvalSummary> evals;
  std::int64_t skipped_steps = 0;
  double seconds = 0;
  int stopped_by_signal = 0;  // SIGTERM etc.: the run stopped early (the CLI exits 128 + it)
};

class Trainer {
 public:
  // `log` receives the human log (pass nullptr on ranks other than 0).
  Trainer(const TrainConfig& config, Backend& backend, Communicator& comm, const DataSplit& data, std::ostream* log);
  ~Trainer();

  TrainSummary run();
  void train_step(std::int64_t step);  // one optimizer step: accum_steps micro-batches
  static constexpr std::int64_t kGraphWarmupSteps = 2;  // eager steps before --cuda-graph captures
  EvalResult evaluate();
  // --precision fp8: the elements each FP8 tensor saturated since the last report, summed over
  // the ranks, into --metrics ({"event": "fp8_saturation"}) and, when any, the log.
  void report_fp8_saturations(std::int64_t step);

  CheckpointState snapshot() const;   // everything a resume needs, on the host (synchronises)
  std::string save_checkpoint(std::int64_t step) const;  // every rank takes part; returns the directory
  // Continues from a checkpoint: weights, optimizer moments, scaler, step; refuses (naming the
  // field) one made by another model, precision, optimizer, batch, seed, data or world size, or
  // one beyond --steps or after --stop-after, and changes nothing unless everything checks out.
  void restore(const CheckpointState& state);
  std::int64_t steps_done() const { return steps_done_; }

  const Model& model() const { return *model_; }
  const ParamArena& params() const { return params_; }
  const Reducer* reducer() const { return reducer_.get(); }
  const LossScaler& scaler() const { return *scaler_; }
  const StepState& step_state() const { return *steps_; }
  const Optimizer& optimizer() const { return *optimizer_; }
  std::int64_t total_steps() const { return total_steps_; }
  std::int64_t steps_per_epoch() const { return steps_per_epoch_; }
  std::int64_t rows_per_step() const { return rows_per_step_; }  // this rank's, all micro-batches
  std::string describe_evaluation() const { return eval_->describe(); }
  // This rank's memory by kind: the persistent part from construction on, the step's part once
  // the first step of this run has been queued (train/memory_account.h).
  const MemoryAccount& memory() const { return memory_; }
  // --dry-run: queues one step (to measure it; nothing is saved or evaluated) and waits for it.
  const MemoryAccount& dry_run();

 private:
  // Setup, in the constructor's order (train/trainer_setup.cpp).
  void check_configuration();
  std::size_t make_model_and_batches(const DataSplit& data);  // returns the data's device bytes
  void describe_model(const DataSplit& data);
  void initialize_weights();
  void make_shards_and_reducer();
  void make_step_state_and_optimizer();
  void make_log(std::ostream* log);
  void resume(const std::string& path);

  void queue_step(bool inject_overflow);  // the step's device work, the same every step
  void measure_persistent_memory(std::size_t in_use_at_start, std::size_t data_bytes);
  // ZeRO-1/2: the scaler combines the shards' norm partials and overflow flags over the ranks;
  // ZeRO-2: the arena keeps `mine` of the gradients, backward writes to the reducer's buckets.
  void shard_gradients(const ArenaShard& mine);
  // ZeRO-1/2: every rank updated its own shard of the master weights; each shard goes to every
  // rank, the working copy follows, and the gradients the optimizer did not zero are zeroed.
  void share_updated_shards();
  // Every rank's shard of an arena-shaped FP32 buffer, from its owner to every rank (a broadcast a
  // shard: shards split at chunk boundaries are not of equal size, as an all-gather needs).
  void share_shards(float* arena) const;
  // The optimizer state of the whole arena on this rank (gathered from the shards under ZeRO-1):
  // what checkpoints hold, whatever the stage and the number of ranks.
  std::vector<std::pair<std::string, std::vector<float>>> full_optimizer_state() const;
  // Stops the run (a CollectiveError, every rank at the same step; a checkpoint first with
  // --save) on --max-consecutive-skips skipped steps in a row, or on a non-finite loss where no
  // loss scaler can skip it; looks at every step read back since the last call.
  void check_health();
  int agreed_stop_signal();                   // a stop signal any rank received, agreed by all
  nlohmann::json run_identity() const;        // what a checkpoint must match to be resumed here
  bool evaluates_after(std::int64_t step, std::int64_t last) const;

  TrainConfig config_;
  Backend& backend_;
  Communicator& comm_;
  FaultInjector faults_;
  std::string data_identity_;         // what the training data is, by content (not by path)
  std::string eval_split_;            // "test" or "val"
  std::map<std::string, std::string> model_metadata_;  // model.safetensors' __metadata__: config, vocabulary
  DType dtype_;
  ParamArena params_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<TrainingBatches> batches_;
  std::unique_ptr<EvalBatches> eval_;
  std::unique_ptr<StepState> steps_;  // the step's state on the device: count, LR, loss scale, skip flag
  std::unique_ptr<LossScaler> scaler_;
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<Reducer> reducer_;  // data parallelism; null in a world of one
  std::unique_ptr<Graph> graph_;      // --cuda-graph: the captured step
  std::int64_t steps_per_epoch_ = 0, total_steps_ = 0, rows_per_step_ = 0;
  std::int64_t steps_done_ = 0;       // optimizer steps queued so far, skipped ones included
  std::int64_t start_step_ = 0;       // where this run began (the resumed step, or 0)
  std::int64_t checked_through_ = 0;  // check_health has looked at every step up to here
  std::unique_ptr<StepLog> log_;
  std::vector<ArenaShard> shards_;       // ZeRO-1/2: every rank's shard, by rank (empty without sharding)
  MemoryAccount memory_;
  std::size_t memory_base_ = 0;          // allocator bytes in use before the trainer allocated anything
  bool measuring_step_ = false;          // the step being queued is the one the account measures
  std::size_t step_base_ = 0;            // allocator bytes in use when that step began
};

}  // namespace ht
