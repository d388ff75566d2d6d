#include "engine/cli/train_flags.h"

#include "comm/communicator.h"
#include "engine/backend.h"
#include "engine/error.h"

#include <fmt/core.h>

#include <cmath>

namespace ht::cli {

namespace {


// "must be at least MIN, got X": CLI11's own range messages print DBL_MAX.
CLI::Validator at_least(double min) {
  return CLI::Validator(
      [min](std::string& value) -> std::string {
        double v = 0;
        try {
          std::size_t used = 0;
          v = std::stod(value, &used);
          if (used != value.size()) return fmt::format("'{}' is not a number", value);
        } catch (const std::exception&) {
          return fmt::format("'{}' is not a number", value);
        }
        return v >= min ? std::string() : fmt::format("must be at least {}, got {}", min, value);
      },
      fmt::format(">= {}", min));
}
const CLI::Validator kPositive = at_least(1);
const CLI::Validator kNonNegative = at_least(0);

}  // namespace

TrainConfig to_config(const TrainFlags& f) {
  TrainConfig c = f.config;
  c.device = parse_device(f.device);
  c.gemm = parse_gemm_impl(f.gemm);
  const std::optional<DType> dt = parse_dtype(f.precision);
  c.precision = *dt == DType::f32 ? Precision::fp32 : (*dt == DType::f16 ? Precision::fp16 : Precision::bf16);
  c.activation = f.activation == "gelu" ? Activation::gelu : Activation::relu;
  c.hidden = f.hidden;
  if (f.steps >= 0) c.steps = f.steps;
  if (f.stop_after >= 0) c.stop_after = f.stop_after;
  c.shuffle = !f.no_shuffle;
  c.progress_bar = !f.no_progress;
  c.optimizer.kind = f.optimizer == "sgd" ? OptimizerKind::sgd : OptimizerKind::adamw;
  c.optimizer.sgd.momentum = f.momentum;
  c.optimizer.sgd.nesterov = f.nesterov ? 1 : 0;
  if (f.weight_decay >= 0) {
    c.optimizer.sgd.weight_decay = f.weight_decay;
    c.optimizer.adamw.weight_decay = f.weight_decay;
  }
  c.schedule.kind = f.schedule == "cosine" ? LrSchedule::cosine : LrSchedule::constant;
  c.schedule.base_lr = f.lr;
  if (f.loss_scale != "dynamic") {
    std::size_t used = 0;
    float value = 0;
    try {
      value = std::stof(f.loss_scale, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    HT_CHECK(used == f.loss_scale.size() && value > 0 && std::isfinite(value),
             "--loss-scale: '{}' is neither 'dynamic' nor a positive number", f.loss_scale);
    c.scaler.dynamic = 0;
    c.scaler.init_scale = value;
    c.scaler.min_scale = std::min(c.scaler.min_scale, value);
  }
  if (!f.inject_overflow.empty()) c.inject_overflow = parse_overflow_injections(f.inject_overflow);
  for (auto [spec, kind] : {std::pair{&f.inject_crash, FaultInjection::crash}, std::pair{&f.inject_hang, FaultInjection::hang}}) {
    if (spec->empty()) continue;
    for (const OverflowInjection& at : parse_overflow_injections(*spec)) {
      HT_CHECK(at.rank >= 0, "--inject-{}: give STEP:RANK", kind == FaultInjection::crash ? "crash" : "hang");
      c.inject_faults.push_back({kind, at.step, at.rank});
    }
  }
  if (f.inject_crash_in_save > 0) c.inject_faults.push_back({FaultInjection::crash_in_save, f.inject_crash_in_save, 0});
  c.bucket_bytes = static_cast<std::int64_t>(f.bucket_mb * (1 << 20));
  c.first_bucket_bytes = static_cast<std::int64_t>(f.first_bucket_mb * (1 << 20));
  c.allreduce_dtype = *parse_dtype(f.allreduce_dtype);
  c.validate();
  return c;
}

void add_train_flags(CLI::App* t, TrainFlags& f) {
  TrainConfig& c = f.config;
  t->add_option("--device", f.device, "cpu | simt | cuda | auto (cuda when a GPU is present, else cpu)")
      ->check(CLI::IsMember({"cpu", "simt", "cuda", "auto"}))
      ->capture_default_str();
  t->add_option("--precision", f.precision, "fp32 | fp16 (with loss scaling) | bf16")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}))
      ->capture_default_str();
  t->add_option("--gemm", f.gemm, "GPU linear layers: native (tensor cores, fused epilogues) | tiled | cublas")
      ->check(CLI::IsMember({"native", "tiled", "cublas", "cublas-unfused"}))->capture_default_str();
  t->add_option("--data", c.data, "fashion-mnist | idx:DIR | synthetic")->capture_default_str();
  t->add_option("--synthetic-samples", c.synthetic.train_samples, "training samples of --data synthetic")
      ->check(kPositive)->capture_default_str();
  t->add_option("--synthetic-features", c.synthetic.features, "features of --data synthetic")
      ->check(kPositive)->capture_default_str();
  t->add_option("--hidden", f.hidden, "hidden layer sizes, comma-separated")->delimiter(',')->capture_default_str();
  t->add_option("--activation", f.activation, "relu | gelu (tanh form)")
      ->check(CLI::IsMember({"relu", "gelu"}))->capture_default_str();
  t->add_option("--epochs", c.epochs, "passes over the training set")->check(kPositive)->capture_default_str();
  t->add_option("--steps", f.steps, "stop after N optimizer steps (overrides --epochs; 0: init, eval, save)")
      ->check(kNonNegative);
  t->add_option("--batch-size", c.batch_size, "samples per micro-batch, per rank")
      ->check(kPositive)->capture_default_str();
  t->add_option("--accum-steps", c.accum_steps, "micro-batches per optimizer step")
      ->check(kPositive)->capture_default_str();
  t->add_option("--optimizer", f.optimizer, "sgd | adamw")->check(CLI::IsMember({"sgd", "adamw"}))->capture_default_str();
  t->add_option("--lr", f.lr, "peak learning rate")->check(CLI::Validator(
      [](std::string& v) { return std::strtod(v.c_str(), nullptr) > 0 ? std::string() : "must be positive, got " + v; }, "> 0"))->capture_default_str();
  t->add_option("--momentum", f.momentum, "SGD momentum")->check(CLI::Range(0.0f, 0.9999f))->capture_default_str();
  t->add_flag("--nesterov", f.nesterov, "SGD Nesterov momentum");
  t->add_option("--weight-decay", f.weight_decay, "L2 (sgd) or decoupled (adamw) weight decay [sgd 0, adamw 0.01]")
      ->check(kNonNegative);
  t->add_option("--schedule", f.schedule, "constant | cosine (after --warmup-steps linear warmup)")
      ->check(CLI::IsMember({"constant", "cosine"}))->capture_default_str();
  t->add_option("--warmup-steps", c.schedule.warmup_steps, "linear LR warmup steps")
      ->check(kNonNegative)->capture_default_str();
  t->add_option("--clip-grad-norm", c.clip_grad_norm, "clip the global gradient norm to this (0: off)")
      ->check(kNonNegative)->capture_default_str();
  t->add_option("--loss-scale", f.loss_scale, "dynamic | a static scale (fp16 only)")->capture_default_str();
  t->add_option("--init-scale", c.scaler.init_scale, "initial dynamic loss scale")
      ->check(kNonNegative)->capture_default_str();
  t->add_option("--growth-interval", c.scaler.growth_interval, "finite steps before the scale grows")
      ->check(kPositive)->capture_default_str();
  t->add_option("--hysteresis", c.scaler.hysteresis, "overflows tolerated before the scale backs off")
      ->check(kPositive)->capture_default_str();
  t->add_option("--min-scale", c.scaler.min_scale, "the scale never backs off below this")
      ->check(kNonNegative)->capture_default_str();
  t->add_option("--seed", c.seed, "seed of the initial weights and the data order")->capture_default_str();
  t->add_option("--log-every", c.log_every, "log (and read back from the device) every N steps")
      ->check(kPositive)->capture_default_str();
  t->add_flag("--no-progress", f.no_progress, "no progress bar even on a terminal");
  t->add_option("--metrics", c.metrics_path, "write JSON Lines metrics to FILE");
  t->add_option("--save", c.save_dir, "write checkpoints (safetensors) under DIR");
  t->add_option("--save-every", c.save_every, "also checkpoint every N steps")->check(kNonNegative);
  t->add_option("--keep", c.keep, "checkpoints to keep under --save (0: all)")->check(kNonNegative)->capture_default_str();
  t->add_option("--resume", c.resume, "continue from a checkpoint directory, or the latest under a --save DIR");
  t->add_option("--stop-after", f.stop_after, "end this run after step N (saving with --save); --steps still sets the schedule")
      ->check(kNonNegative);
  t->add_option("--max-consecutive-skips", c.max_consecutive_skips,
                "stop (saving a checkpoint) after this many overflowing steps in a row at --min-scale")
      ->check(kPositive)->capture_default_str();
  t->add_flag("--no-shuffle", f.no_shuffle, "keep the data in file order");
  t->add_flag("--cuda-graph", c.cuda_graph, "capture one training step as a CUDA graph and replay it (cuda, simt)");
  t->add_option("--inject-overflow", f.inject_overflow, "STEP[:RANK][,...]: poison that step's gradients with inf");
  t->add_option("--comm", f.comm, "data-parallel transport: auto (nccl on cuda, else mpi) | mpi | nccl")
      ->check(CLI::IsMember({"auto", "mpi", "nccl"}))->capture_default_str();
  t->add_option("--comm-timeout", f.comm_timeout, "seconds a collective may take before the job is aborted")
      ->check(CLI::Range(0.001, 1e7))->capture_default_str();
  t->add_option("--bucket-mb", f.bucket_mb, "allreduce bucket size (MiB)")->check(CLI::Range(0.001, 1e6))->capture_default_str();
  t->add_option("--first-bucket-mb", f.first_bucket_mb, "size of the first (last layer's) bucket (MiB)")
      ->check(CLI::Range(0.001, 1e6))->capture_default_str();
  t->add_option("--allreduce-dtype", f.allreduce_dtype, "gradient traffic: fp32 | fp16 | bf16 (compressed)")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}))->capture_default_str();
  t->add_option("--inject-crash", f.inject_crash, "STEP:RANK[,...]: that rank kills itself at that step (fault tests)")
      ->group("Fault injection");
  t->add_option("--inject-hang", f.inject_hang, "STEP:RANK[,...]: that rank stops answering at that step (fault tests)")
      ->group("Fault injection");
  t->add_option("--inject-crash-in-save", f.inject_crash_in_save, "STEP: die (SIGKILL) half-way through that step's checkpoint")
      ->check(kPositive)->group("Fault injection");
}

}  // namespace ht::cli
