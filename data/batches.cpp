#include "data/batches.h"

#include "engine/rng.h"
#include "ground/error.h"

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
  void prepare_epoch(std::int64_t epoch) override {
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

// Windows of a token split: B sequences of T tokens, inputs (B, T) and targets (B·T).
Batch window_batch(Backend& backend, const WindowArgs& where) {
  Batch b{backend.empty(Shape{where.rows, where.length}, DType::i32), backend.empty(Shape{where.rows * where.length}, DType::i32),
          where.rows * where.length};
  WindowArgs a = where;
  a.inputs = b.input.data_as<std::int32_t>();
  a.targets = b.targets.data_as<std::int32_t>();
  backend.gather_windows(a);
  return b;
}

class WindowBatches final : public TrainingBatches {
 public:
  WindowBatches(Backend& backend, const DataSplit& d, const BatchConfig& c)
      : backend_(backend), tokens_(upload_i32(backend, d.text.train)) {
    const auto n = static_cast<std::int64_t>(d.text.train.size());
    const std::int64_t T = c.sequence_length;
    HT_CHECK(T >= 1, "--block-size must be at least 1, got {}", T);
    HT_CHECK(T + 1 <= n, "--block-size {}: a window of {} tokens is longer than the training text of {} ({})", T, T + 1, n,
             d.name);
    const std::int64_t rows = checked_mul(c.batch_size, T, "--batch-size × --block-size");
    HT_CHECK(c.shuffle || rows + 1 <= n, "--no-shuffle reads contiguous micro-batches of --batch-size × --block-size + 1 = {} "
             "tokens, more than the training text has ({})", rows + 1, n);
    args_ = WindowArgs{.tokens = tokens_.data_as<std::int32_t>(),
                       .n_tokens = n,
                       .rows = c.batch_size,
                       .length = T,
                       .mode = c.shuffle ? WindowArgs::random : WindowArgs::contiguous,
                       .accum = c.accum_steps,
                       .rank = c.rank,
                       .world = c.world_size,
                       .seed = derive_seed(c.seed, /*purpose=*/5)};
    const std::int64_t per_step = checked_mul(checked_mul(rows, c.accum_steps, "tokens per step"), c.world_size, "tokens per step");
    steps_per_epoch_ = std::max<std::int64_t>(1, n / per_step);
  }
  std::int64_t rows_per_micro_batch() const override { return args_.rows * args_.length; }
  std::int64_t steps_per_epoch() const override { return steps_per_epoch_; }
  std::string unit() const override { return "tokens"; }
  void prepare_epoch(std::int64_t) override {}
  Batch micro_batch(std::int64_t micro, const DeviceStepState* cursor, DType) override {
    WindowArgs a = args_;
    a.micro = micro;
    a.cursor = cursor;
    return window_batch(backend_, a);
  }

 private:
  Backend& backend_;
  Tensor tokens_;
  WindowArgs args_;
  std::int64_t steps_per_epoch_ = 1;
};

// The first W non-overlapping windows of the validation text, split between the ranks.
class WindowEval final : public EvalBatches {
 public:
  WindowEval(Backend& backend, const DataSplit& d, const BatchConfig& c)
      : backend_(backend), tokens_(upload_i32(backend, d.text.val)), batch_(c.eval_batch_size) {
    const auto n = static_cast<std::int64_t>(d.text.val.size());
    length_ = c.sequence_length;
    HT_CHECK(length_ + 1 <= n, "--block-size {}: a window of {} tokens is longer than the validation text of {} ({})", length_,
             length_ + 1, n, d.name);
    windows_ = std::min(c.eval_windows, (n - 1) / length_);
    first_ = windows_ * c.rank / c.world_size;
    count_ = windows_ * (c.rank + 1) / c.world_size - first_;
    n_tokens_ = n;
  }
  std::string describe() const override {
    return fmt::format("the first {} non-overlapping windows of {} tokens of the validation text", windows_, length_);
  }
  std::int64_t total_rows() const override { return windows_ * length_; }
  std::int64_t batches() const override { return (count_ + batch_ - 1) / batch_; }
  Batch batch(std::int64_t i, DType) override {
    return window_batch(backend_, WindowArgs{.tokens = tokens_.data_as<std::int32_t>(),
                                             .n_tokens = n_tokens_,
                                             .rows = std::min(batch_, count_ - i * batch_),
                                             .length = length_,
                                             .mode = WindowArgs::fixed,
                                             .first = first_ + i * batch_});
  }

 private:
  Backend& backend_;
  Tensor tokens_;
  std::int64_t batch_, length_ = 0, windows_ = 0, first_ = 0, count_ = 0, n_tokens_ = 0;
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
