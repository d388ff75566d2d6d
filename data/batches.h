// The data a training run reads, on the device: the training split as each step's
// micro-batches, and the evaluation split as batches. Two kinds (data/dataset.h):
//   samples - each epoch a DistributedSampler order of the samples, uploaded once; a gather
//             kernel finds the step's rows from the step counter on the device;
//   text    - windows of T + 1 tokens, at seeded random offsets or (no shuffle) contiguous as
//             llm.c's loader, read on the host from the split (in memory, or mapped token files
//             of any size) and copied to the device each step; evaluation on the first
//             non-overlapping windows of the validation text.
// prepare_step is the host's part of a step, queued before the step's work; a micro-batch call
// then takes the same arguments every step, so a step is capturable as a graph.
#pragma once

#include "data/dataset.h"
#include "data/sampler.h"
#include "engine/backend.h"
#include "engine/task.h"

#include <memory>

namespace ht {

struct BatchConfig {
  std::int64_t batch_size = 1;       // samples or sequences per micro-batch, per rank
  std::int64_t accum_steps = 1;
  std::int64_t sequence_length = 0;  // text: T, the model's block size
  std::int64_t eval_batch_size = 1000;
  std::int64_t eval_windows = 2048;  // text: how many validation windows evaluation reads
  int rank = 0, world_size = 1;
  std::uint64_t seed = 0;
  bool shuffle = true;
};

class TrainingBatches {
 public:
  virtual ~TrainingBatches() = default;
  virtual std::int64_t rows_per_micro_batch() const = 0;  // rows of logits (samples, or B·T positions)
  virtual std::int64_t steps_per_epoch() const = 0;        // optimizer steps in one pass over this rank's share
  virtual std::string unit() const = 0;                    // what a row is: "samples", "tokens"
  // The host's part of step `step` (1-based; the device's steps_done + 1): samples - a new
  // order once per epoch; text - the step's windows, read and queued for the device.
  virtual void prepare_step(std::int64_t step) = 0;
  // Micro-batch `micro` of the step the device's cursor is at (prepared by prepare_step).
  virtual Batch micro_batch(std::int64_t micro, const DeviceStepState* cursor, DType dtype) = 0;
};

class EvalBatches {
 public:
  virtual ~EvalBatches() = default;
  virtual std::string describe() const = 0;  // what is evaluated: "the 10000 test samples", ...
  virtual std::int64_t total_rows() const = 0;  // over every rank: the divisor of the summed losses
  virtual std::int64_t batches() const = 0;     // this rank's
  virtual Batch batch(std::int64_t i, DType dtype) = 0;
};

// Throw naming the flag when the data does not fit the batch (--batch-size larger than a
// rank's share, --block-size longer than the text, ...).
std::unique_ptr<TrainingBatches> make_training_batches(Backend& backend, const DataSplit& data, const BatchConfig& config);
std::unique_ptr<EvalBatches> make_eval_batches(Backend& backend, const DataSplit& data, const BatchConfig& config);

// Host int32 values uploaded to the device (an i32 tensor).
Tensor upload_i32(Backend& backend, const std::vector<std::int32_t>& values);

}  // namespace ht
