#include "data/batches.h"

#include "engine/rng.h"
#include "ground/error.h"

#include <algorithm>
#include <array>

namespace ht {

Tensor upload_i32(Backend& backend, const std::vector<std::int32_t>& values) {
  Tensor t = backend.empty(Shape{std::max<std::int64_t>(1, static_cast<std::int64_t>(values.size()))}, DType::i32);
  if (!values.empty()) backend.upload(t.data(), values.data(), values.size() * sizeof(std::int32_t));
  return t;
}

namespace {

// Samples (u8 features, i32 labels) on the device, and the gather that makes a batch of them.
struct DeviceSamples {
  DeviceSamples(Backend& backend, const Dataset& data)
      : images(backend.empty(Shape{std::max<std::int64_t>(1, data.samples * data.features)}, DType::u8)),
        labels(upload_i32(backend, data.labels)),
        samples(data.samples),
        features(data.features) {
    backend.upload(images.data(), data.images.data(), data.images.size());
  }
  // indices: (rows) i32 on the device, advanced by the cursor as GatherArgs says.
  Batch gather(Backend& backend, const std::int32_t* indices, std::int64_t rows, DType dtype, const DeviceStepState* cursor,
               std::int64_t rows_per_step, std::int64_t steps_per_epoch) const {
    Batch b{backend.empty(Shape{rows, features}, dtype), backend.empty(Shape{rows}, DType::i32), rows};
    backend.gather_batch({images.data_as<std::uint8_t>(), labels.data_as<std::int32_t>(), indices, rows, features, b.input.data(),
                          dtype, b.targets.data_as<std::int32_t>(), cursor, rows_per_step, steps_per_epoch});
    return b;
  }
  Tensor images, labels;
  std::int64_t samples, features;
};

class SampleBatches final : public TrainingBatches {
 public:
  SampleBatches(Backend& backend, const DataSplit& d, const BatchConfig& c)
      : backend_(backend),
        data_(backend, d.train),
        sampler_(d.train.samples, c.rank, c.world_size, c.seed, c.shuffle),
        batch_(c.batch_size),
        rows_per_step_(checked_mul(c.batch_size, c.accum_steps, "--batch-size × --accum-steps")) {
    steps_per_epoch_ = sampler_.shard_size() / rows_per_step_;
    HT_CHECK(steps_per_epoch_ >= 1,
             "--batch-size {} × --accum-steps {} = {} samples per step, but this rank's share of {} has only {}", c.batch_size,
             c.accum_steps, rows_per_step_, d.name, sampler_.shard_size());
  }
  std::int64_t rows_per_micro_batch() const override { return batch_; }
  std::int64_t steps_per_epoch() const override { return steps_per_epoch_; }
  std::string unit() const override { return "samples"; }
  void prepare_step(std::int64_t step) override {
    const std::int64_t epoch = (step - 1) / steps_per_epoch_;
    if (epoch == shard_epoch_) return;
    const std::vector<std::int32_t> shard = sampler_.shard(epoch);
    // The same buffer every epoch: the step's kernels (and a captured CUDA graph) keep their pointer.
    if (shard_.defined()) backend_.upload(shard_.data(), shard.data(), shard.size() * sizeof(std::int32_t));
    else shard_ = upload_i32(backend_, shard);
    shard_epoch_ = epoch;
  }
  Batch micro_batch(std::int64_t micro, const DeviceStepState* cursor, DType dtype) override {
    return data_.gather(backend_, shard_.data_as<std::int32_t>() + micro * batch_, batch_, dtype, cursor, rows_per_step_,
                        steps_per_epoch_);
  }

 private:
  Backend& backend_;
  DeviceSamples data_;
  DistributedSampler sampler_;
  std::int64_t batch_, rows_per_step_, steps_per_epoch_ = 0;
  std::int64_t shard_epoch_ = -1;
  Tensor shard_;
};

// Each rank evaluates every world_size-th test sample; the sums are then added up.
class SampleEval final : public EvalBatches {
 public:
  SampleEval(Backend& backend, const DataSplit& d, const BatchConfig& c)
      : backend_(backend), data_(backend, d.test), batch_(c.eval_batch_size), name_(d.name) {
    std::vector<std::int32_t> mine;
    for (std::int64_t i = c.rank; i < d.test.samples; i += c.world_size) mine.push_back(static_cast<std::int32_t>(i));
    count_ = static_cast<std::int64_t>(mine.size());
    indices_ = upload_i32(backend, mine);
  }
  std::string describe() const override { return fmt::format("the {} test samples of {}", data_.samples, name_); }
  std::int64_t total_rows() const override { return data_.samples; }
  std::int64_t batches() const override { return (count_ + batch_ - 1) / batch_; }
  Batch batch(std::int64_t i, DType dtype) override {
    const std::int64_t rows = std::min(batch_, count_ - i * batch_);
    return data_.gather(backend_, indices_.data_as<std::int32_t>() + i * batch_, rows, dtype, nullptr, 0, 1);
  }

 private:
  Backend& backend_;
  DeviceSamples data_;
  std::int64_t batch_, count_ = 0;
  std::string name_;
  Tensor indices_;
};

// Where the windows of a training micro-batch start in a split of n tokens, B windows of T + 1:
//   contiguous: (k mod ⌊(n − 1) / (B·T)⌋)·B·T + r·T      (llm.c's loader: micro-batch k reads tokens
//               [k·B·T, k·B·T + B·T + 1), wrapping at the end)
//   random:     mix64(seed ^ mix64(k·B + r)) mod (n − T)   (seeded random offsets)
// with k = (steps_done·accum + micro)·world + rank: ranks read disjoint micro-batches, and one
// process with accum·world micro-batches reads the same ones as the world does. A function of
// the step alone, so a resumed run reads exactly the windows the uninterrupted one would have.
struct WindowPlan {
  std::int64_t n_tokens = 0, rows = 0, length = 0;
  bool random = true;
  std::int64_t accum = 1, rank = 0, world = 1;
  std::uint64_t seed = 0;
};

std::int64_t window_start(const WindowPlan& a, std::int64_t steps_done, std::int64_t micro, std::int64_t r) {
  const std::int64_t k = (steps_done * a.accum + micro) * a.world + a.rank;
  if (!a.random) {
    const std::int64_t per_pass = (a.n_tokens - 1) / (a.rows * a.length);
    return (k % per_pass) * a.rows * a.length + r * a.length;
  }
  const std::uint64_t h = mix64(a.seed ^ mix64(static_cast<std::uint64_t>(k * a.rows + r)));
  return static_cast<std::int64_t>(h % static_cast<std::uint64_t>(a.n_tokens - a.length));
}

// Window r (T + 1 tokens from `start`) as a batch's input row r and its targets, one token on.
void split_window(const TokenSequence& tokens, std::int64_t start, std::int64_t r, std::int64_t T, std::int32_t* inputs,
                  std::int32_t* targets) {
  tokens.read(start, T, inputs + r * T);
  tokens.read(start + 1, T, targets + r * T);
}

// Each step, the host reads the step's windows from the split (in memory or mapped) into pinned
// memory and queues one copy to the device: every micro-batch's inputs (B, T) and targets (B·T),
// 8·B·T bytes each. The device tensors stay the same, so a captured step replays over them.
// Two pinned buffers take turns: step s + 1 is read while step s's copy may still be queued.
class WindowBatches final : public TrainingBatches {
 public:
  WindowBatches(Backend& backend, const DataSplit& d, const BatchConfig& c) : backend_(backend), tokens_(d.text.train) {
    const std::int64_t n = tokens_.size(), T = c.sequence_length;
    HT_CHECK(T >= 1, "--block-size must be at least 1, got {}", T);
    HT_CHECK(T + 1 <= n, "--block-size {}: a window of {} tokens is longer than the training text of {} ({})", T, T + 1, n,
             d.name);
    const std::int64_t rows = checked_mul(c.batch_size, T, "--batch-size × --block-size");
    HT_CHECK(c.shuffle || rows + 1 <= n, "--no-shuffle reads contiguous micro-batches of --batch-size × --block-size + 1 = {} "
             "tokens, more than the training text has ({})", rows + 1, n);
    plan_ = WindowPlan{.n_tokens = n,
                       .rows = c.batch_size,
                       .length = T,
                       .random = c.shuffle,
                       .accum = c.accum_steps,
                       .rank = c.rank,
                       .world = c.world_size,
                       .seed = derive_seed(c.seed, /*purpose=*/5)};
    const std::int64_t per_step = checked_mul(checked_mul(rows, c.accum_steps, "tokens per step"), c.world_size, "tokens per step");
    steps_per_epoch_ = std::max<std::int64_t>(1, n / per_step);
    staged_ = backend.empty(Shape{c.accum_steps, 2, rows}, DType::i32);  // per micro-batch: inputs, targets
    for (Backend::PinnedPtr& p : pinned_) p = backend.pinned(staged_.bytes());
  }
  std::int64_t rows_per_micro_batch() const override { return plan_.rows * plan_.length; }
  std::int64_t steps_per_epoch() const override { return steps_per_epoch_; }
  std::string unit() const override { return "tokens"; }
  void prepare_step(std::int64_t step) override {
    const std::size_t slot = static_cast<std::size_t>(step % 2);
    if (copied_[slot]) copied_[slot]->wait();  // the copy that last read this buffer is done
    auto* host = static_cast<std::int32_t*>(pinned_[slot].get());
    const std::int64_t rows = plan_.rows * plan_.length;
    for (std::int64_t micro = 0; micro < plan_.accum; ++micro)
      for (std::int64_t r = 0; r < plan_.rows; ++r)
        split_window(tokens_, window_start(plan_, step - 1, micro, r), r, plan_.length,
                     host + 2 * micro * rows, host + (2 * micro + 1) * rows);
    backend_.upload_async(staged_.data(), host, staged_.bytes());
    copied_[slot] = backend_.record_event();
    staged_step_ = step;
  }
  Batch micro_batch(std::int64_t micro, const DeviceStepState*, DType) override {
    HT_ASSERT(staged_step_ > 0 && micro < plan_.accum);  // prepare_step has queued this step's windows
    const std::int64_t rows = plan_.rows * plan_.length;
    return Batch{staged_.view(2 * micro * rows, Shape{plan_.rows, plan_.length}), staged_.view((2 * micro + 1) * rows, Shape{rows}),
                 rows};
  }

 private:
  Backend& backend_;
  TokenSequence tokens_;
  WindowPlan plan_;
  std::int64_t steps_per_epoch_ = 1, staged_step_ = 0;
  Tensor staged_;  // (accum, 2, B·T) i32 on the device
  std::array<Backend::PinnedPtr, 2> pinned_;
  std::array<std::unique_ptr<Event>, 2> copied_;
};

// The first W non-overlapping windows of the validation text, split between the ranks; each
// batch's windows read from the split and uploaded when it is evaluated.
class WindowEval final : public EvalBatches {
 public:
  WindowEval(Backend& backend, const DataSplit& d, const BatchConfig& c) : backend_(backend), tokens_(d.text.val), batch_(c.eval_batch_size) {
    const std::int64_t n = tokens_.size();
    length_ = c.sequence_length;
    HT_CHECK(length_ + 1 <= n, "--block-size {}: a window of {} tokens is longer than the validation text of {} ({})", length_,
             length_ + 1, n, d.name);
    windows_ = std::min(c.eval_windows, (n - 1) / length_);
    first_ = windows_ * c.rank / c.world_size;
    count_ = windows_ * (c.rank + 1) / c.world_size - first_;
  }
  std::string describe() const override {
    return fmt::format("the first {} non-overlapping windows of {} tokens of the validation text", windows_, length_);
  }
  std::int64_t total_rows() const override { return windows_ * length_; }
  std::int64_t batches() const override { return (count_ + batch_ - 1) / batch_; }
  Batch batch(std::int64_t i, DType) override {
    const std::int64_t rows = std::min(batch_, count_ - i * batch_), T = length_;
    std::vector<std::int32_t> inputs(static_cast<std::size_t>(rows * T)), targets(inputs.size());
    for (std::int64_t r = 0; r < rows; ++r)
      split_window(tokens_, (first_ + i * batch_ + r) * T, r, T, inputs.data(), targets.data());
    Batch b{backend_.empty(Shape{rows, T}, DType::i32), upload_i32(backend_, targets), rows * T};
    upload(backend_, b.input, inputs);
    return b;
  }

 private:
  Backend& backend_;
  TokenSequence tokens_;
  std::int64_t batch_, length_ = 0, windows_ = 0, first_ = 0, count_ = 0;
};

}  // namespace

std::unique_ptr<TrainingBatches> make_training_batches(Backend& backend, const DataSplit& data, const BatchConfig& config) {
  if (data.is_text()) return std::make_unique<WindowBatches>(backend, data, config);
  return std::make_unique<SampleBatches>(backend, data, config);
}

std::unique_ptr<EvalBatches> make_eval_batches(Backend& backend, const DataSplit& data, const BatchConfig& config) {
  if (data.is_text()) return std::make_unique<WindowEval>(backend, data, config);
  return std::make_unique<SampleEval>(backend, data, config);
}

}  // namespace ht
