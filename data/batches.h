// The data a training run reads, on the device: the training split as each step's
// micro-batches, and the evaluation split as batches. Two kinds (data/dataset.h):
//   samples - each epoch a DistributedSampler order of the samples, uploaded once; a gather
//             kernel finds the step's rows from the step counter on the device;
//   text    - windows of T + 1 tokens (kernels/windows.h), at seeded random offsets or (no
//             shuffle) contiguous as llm.c's loader; evaluation on the first non-overlapping
//             windows of the validation text.
// A micro-batch call takes the same arguments every step, so a step is capturable as a graph.
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
  virtual void prepare_epoch(std::int64_t epoch) = 0;      // the host's part, once per epoch (0-based)
  // Micro-batch `micro` of the step the device's cursor is at.
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
