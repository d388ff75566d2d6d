// StepLog: how per-step numbers get from the device to the log without stalling the step.
//
// Each optimizer step writes a StepRecord (and its per-tensor overflow flags) into a ring on
// the device. Every log_every steps the finished slots are copied asynchronously into pinned
// host memory; they are read once their copy has completed, usually at the next log point, so
// the host never waits on the step it just queued. Rank 0 then prints the human log (fmt) and
// writes one JSON Lines record per step to --metrics; every write is checked (a full disk is an
// error, not a silently truncated file).
#pragma once

#include "engine/backend.h"
#include "ground/clock.h"
#include "kernels/step_state.h"

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace ht {

struct StepSummary {
  std::int64_t step = 0;   // 1-based optimizer step, skipped steps included
  std::int64_t epoch = 0;  // 1-based
  StepRecord record;
  double rows_per_s = 0;   // samples or tokens per second, over all ranks
  std::vector<std::string> nonfinite_tensors;  // names, when the step was skipped
};

struct EvalSummary {
  std::int64_t epoch = 0;
  std::int64_t step = 0;
  double train_loss = 0;    // mean over the steps since the previous evaluation (this rank)
  double loss = 0;          // on the evaluation split
  double accuracy = 0;      // fraction in [0, 1] (a language model: of next tokens)
  std::string split;        // "test" or "val": the metrics say test_loss or val_loss
  std::int64_t train_steps = 0;  // the steps train_loss averages: 0 when none ran since (--steps 0, a resume at its end)
};

struct StepLogConfig {
  std::int64_t log_every = 50;
  std::int64_t readback_every = 50;         // a divisor of log_every: how often records are copied back
  std::int64_t total_steps = 0;
  std::int64_t steps_per_epoch = 1;
  std::int64_t rows_per_step = 0;           // over all ranks
  std::string row_unit = "samples";         // "samples" or "tokens": the log's rate
  std::vector<std::string> param_names;
  std::ostream* human = nullptr;            // nullptr on ranks other than 0
  std::string metrics_path;                 // empty: none (always empty on ranks other than 0)
  bool append_metrics = false;              // a resumed run adds to the file
  bool progress_bar = false;
};

class MetricsFile;

class StepLog {
 public:
  StepLog(Backend& backend, StepLogConfig config);
  ~StepLog();

  // The device rings the step kernels write: step s goes to slot (s - 1) % ring_slots().
  StepRecord* record_ring() const { return records_.data_as<StepRecord>(); }
  std::int32_t* nonfinite_ring() const { return flags_.data_as<std::int32_t>(); }  // (slots, params)
  std::int32_t ring_slots() const { return static_cast<std::int32_t>(ring_); }
  void start_after(std::int64_t step);                       // a resumed run: the next step is step + 1
  void step_queued(std::int64_t step, std::int64_t epoch);   // the step's kernels are queued
  void drain();                                              // wait for and log every queued step
  void eval(const EvalSummary& e);                           // drains first

  const std::vector<StepSummary>& history() const { return history_; }
  const StepSummary* summary_of(std::int64_t step) const;    // once read back; else nullptr
  // The last step whose record every rank has certainly read back by now: the same on every rank
  // after the same calls (step_queued, drain), whatever the device's timing. Decisions taken on
  // records up to here (stop on endless overflows) are taken by all ranks at the same step.
  std::int64_t settled_through() const { return settled_through_; }
  double mean_loss(std::int64_t after_step, std::int64_t through_step) const;  // of the finite losses read back
  std::int64_t skipped_total() const { return skipped_total_; }
  std::int32_t last_consecutive_skips() const { return last_consecutive_skips_; }
  void message(const std::string& line);  // a line for the human log (rank 0)
  void metrics_record(const std::string& json_line);  // a line of --metrics (rank 0; none without --metrics)

 private:
  struct Pending {
    std::int64_t first_step, last_step;
    std::unique_ptr<Event> copied;
  };
  void enqueue_copy(std::int64_t last_step);
  StepRecord* record_slot(std::int64_t step) const;
  std::int32_t* nonfinite_slot(std::int64_t step) const;
  void process(Pending& p);
  void clear_progress();

  Backend& backend_;
  StepLogConfig config_;
  std::int64_t ring_;                  // slots
  std::size_t flags_per_step_;
  Tensor records_, flags_;             // device rings
  Backend::PinnedPtr host_records_memory_, host_flags_memory_;  // pinned mirrors of the rings
  StepRecord* host_records_ = nullptr;
  std::int32_t* host_flags_ = nullptr;
  std::deque<Pending> pending_;
  std::map<std::int64_t, std::int64_t> epoch_of_step_;
  std::int64_t queued_through_ = 0, copied_through_ = 0, settled_through_ = 0;
  std::vector<StepSummary> history_;
  std::int64_t skipped_total_ = 0;
  std::int32_t last_consecutive_skips_ = 0;
  std::unique_ptr<MetricsFile> metrics_;
  double start_time_, last_log_time_;
  std::int64_t last_log_step_ = 0;
  bool progress_visible_ = false;
};


}  // namespace ht
