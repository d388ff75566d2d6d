#include "cli/train_flags.h"

#include "cli/commands.h"
#include "comm/communicator.h"
#include "engine/backend.h"
#include "ground/error.h"
#include "models/registry.h"

#include <fmt/core.h>

#include <charconv>
#include <cmath>
#include <limits>

namespace ht::cli {

namespace {

// "must be in [MIN, MAX], got X": a finite number in range (NaN and inf are refused, and
// CLI11's own range messages print DBL_MAX). CLI11 names the flag in front of the message.
CLI::Validator number_in(double min, double max) {
  return CLI::Validator(
      [min, max](std::string& value) -> std::string {
        double v = 0;
        try {
          std::size_t used = 0;
          v = std::stod(value, &used);
          if (used != value.size()) return fmt::format("'{}' is not a number", value);
        } catch (const std::exception&) {
          return fmt::format("'{}' is not a number", value);
        }
        if (!std::isfinite(v)) return fmt::format("must be a finite number, got {}", value);
        if (v < min || v > max) return fmt::format("must be in [{}, {}], got {}", min, max, value);
        return "";
      },
      fmt::format("in [{}, {}]", min, max));
}
CLI::Validator at_least(double min) { return number_in(min, std::numeric_limits<double>::max()); }
const CLI::Validator kNonNegative = at_least(0);
// Counts (steps, epochs, sizes): far below where any derived product could overflow 64 bits.
constexpr double kMaxCount = 1e12;
const CLI::Validator kCount = number_in(1, kMaxCount);
const CLI::Validator kCountOrZero = number_in(0, kMaxCount);
const CLI::Validator kNonEmpty(
    [](std::string& value) { return value.empty() ? std::string("must not be empty") : std::string(); }, "non-empty");

// Parses a --loss-scale value that is not "dynamic": a positive number whose inverse is finite.
float parse_static_scale(const std::string& text) {
  std::size_t used = 0;
  float value = 0;
  try {
    value = std::stof(text, &used);
  } catch (const std::out_of_range&) {
    fail(fmt::format("--loss-scale: '{}' is outside fp32's range (a loss scale must be at least {})", text, kMinLossScale));
  } catch (const std::exception&) {
    used = 0;
  }
  HT_CHECK(used == text.size() && value > 0 && std::isfinite(value), "--loss-scale: '{}' is neither 'dynamic' nor a positive number",
           text);
  HT_CHECK(std::isfinite(1.0f / value), "--loss-scale: {} is too small: unscaling multiplies by 1/scale, which overflows fp32 "
           "(use at least {})", text, kMinLossScale);
  return value;
}

}  // namespace

TrainConfig to_config(const TrainFlags& f) {
  TrainConfig c = f.config;
  auto given = [&](const char* flag) { return f.given.count(flag) > 0; };
  c.device = parse_device(f.device);
  c.gemm = parse_gemm_impl(f.gemm);
  if (f.precision == "fp8") {
    c.precision = Precision::fp8;
  } else {
    const std::optional<DType> dt = parse_dtype(f.precision);
    c.precision = *dt == DType::f32 ? Precision::fp32 : (*dt == DType::f16 ? Precision::fp16 : Precision::bf16);
  }
  for (const char* fp8_only : {"--fp8-recipe", "--fp8-amax-history", "--fp8-margin", "--fp8-layers"})
    HT_CHECK(c.precision == Precision::fp8 || !given(fp8_only), "{} is a setting of --precision fp8 (this run is {})", fp8_only,
             f.precision);
  c.fp8.recipe = f.fp8_recipe == "current" ? Fp8Recipe::current : Fp8Recipe::delayed;
  c.fp8_all_layers = f.fp8_layers == "all";
  if (f.steps >= 0) c.steps = f.steps;
  if (f.stop_after >= 0) c.stop_after = f.stop_after;
  c.shuffle = !f.no_shuffle;
  c.progress_bar = !f.no_progress;
  c.optimizer.kind = f.optimizer == "sgd" ? OptimizerKind::sgd : OptimizerKind::adamw;
  // A setting of the other optimizer is a mistake, not something to ignore.
  for (const char* sgd_only : {"--momentum", "--nesterov"})
    HT_CHECK(c.optimizer.kind == OptimizerKind::sgd || !given(sgd_only), "{} is a setting of --optimizer sgd; this run uses adamw",
             sgd_only);
  for (const char* adamw_only : {"--beta1", "--beta2"})
    HT_CHECK(c.optimizer.kind == OptimizerKind::adamw || !given(adamw_only), "{} is a setting of --optimizer adamw; this run "
             "uses sgd", adamw_only);
  for (const ModelFlag& m : model_only_flags())
    HT_CHECK(c.model.kind == m.model || !given(m.flag.c_str()), "{} is a setting of --model {}; this run uses --model {}", m.flag,
             m.model, c.model.kind);
  c.optimizer.sgd.momentum = f.momentum;
  c.optimizer.sgd.nesterov = f.nesterov ? 1 : 0;
  if (f.weight_decay >= 0) {
    c.optimizer.sgd.weight_decay = f.weight_decay;
    c.optimizer.adamw.weight_decay = f.weight_decay;
  }
  c.schedule.kind = f.schedule == "cosine" ? LrSchedule::cosine : LrSchedule::constant;
  c.schedule.base_lr = f.lr;
  HT_CHECK(c.schedule.min_lr <= c.schedule.base_lr, "--min-lr {} is above --lr {}", c.schedule.min_lr, f.lr);
  if (f.loss_scale != "dynamic") {
    HT_CHECK(c.precision == Precision::fp16, "--loss-scale {}: loss scaling is for --precision fp16 (this run is {}, whose "
             "gradients do not underflow)", f.loss_scale, f.precision);
    const float value = parse_static_scale(f.loss_scale);
    c.scaler.dynamic = 0;
    c.scaler.init_scale = value;
    c.scaler.min_scale = std::min(c.scaler.min_scale, value);
  }
  for (const char* scaling_only : {"--init-scale", "--min-scale", "--growth-interval", "--hysteresis"})
    HT_CHECK(c.precision == Precision::fp16 || !given(scaling_only), "{} is a loss-scaling setting, for --precision fp16 "
             "(this run is {})", scaling_only, f.precision);
  if (!f.inject_overflow.empty()) c.inject_overflow = parse_overflow_injections(f.inject_overflow);
  for (auto [spec, kind] : {std::pair{&f.inject_crash, FaultInjection::crash}, std::pair{&f.inject_hang, FaultInjection::hang}}) {
    if (spec->empty()) continue;
    for (const OverflowInjection& at : parse_overflow_injections(*spec)) {
      HT_CHECK(at.rank >= 0, "--inject-{}: give STEP:RANK", kind == FaultInjection::crash ? "crash" : "hang");
      c.inject_faults.push_back({kind, at.step, at.rank});
    }
  }
  if (f.inject_crash_in_save > 0) {
    FaultInjection fault{FaultInjection::crash_in_save, f.inject_crash_in_save, 0};
    fault.save_point = parse_save_point(f.inject_crash_in_save_at);
    c.inject_faults.push_back(fault);
  }
  c.bucket_bytes = static_cast<std::int64_t>(f.bucket_mb * (1 << 20));
  c.first_bucket_bytes = static_cast<std::int64_t>(f.first_bucket_mb * (1 << 20));
  c.allreduce_dtype = *parse_dtype(f.allreduce_dtype);
  HT_CHECK(!f.dry_run || c.save_dir.empty(), "--dry-run saves nothing: leave out --save");
  try {
    c.validate();
  } catch (const Error& e) {  // a value the --preset or the model's recipe chose: say so
    std::string message = e.what();
    std::vector<std::string> chosen;
    for (const std::string& r : f.from_recipe)
      if (message.find(r) != std::string::npos) chosen.push_back(r);
    if (!chosen.empty())
      message += fmt::format(" ({} from {})", fmt::join(chosen, ", "),
                             c.model.preset.empty() ? fmt::format("--model {}'s recipe", c.model.kind) : "--preset " + c.model.preset);
    fail(message);
  }
  return c;
}

void add_train_flags(CLI::App* t, TrainFlags& f) {
  // Every option records its default, so that ranks compare an omitted flag as its value.
  t->option_defaults()->always_capture_default();
  t->parse_complete_callback([t, &f] {
    f.given.clear();
    f.from_recipe.clear();
    for (const CLI::Option* opt : t->get_options())
      if (opt->count()) f.given.insert(opt->get_name());
    // The --preset's shape, then the chosen model's recipe, for every flag of them the command
    // line left out; through CLI11, so each value is checked and stored as if it had been given.
    std::vector<RecipeFlag> defaults = preset_flags(f.config.model.preset);
    for (const RecipeFlag& r : recipe_flags(f.config.model.kind)) defaults.push_back(r);
    for (const RecipeFlag& r : defaults) {
      if (f.given.count(r.flag) || (!r.unless.empty() && f.given.count(r.unless))) continue;
      CLI::Option* opt = t->get_option(r.flag);
      opt->add_result(r.value);
      opt->run_callback();
      f.from_recipe.push_back(r.flag + " " + r.value);
    }
  });
  TrainConfig& c = f.config;
  add_device_option(*t, f.device);
  t->add_option("--precision", f.precision, "fp32 | fp16 (with loss scaling) | bf16 | fp8 (bf16, the linear layers' products "
                "in FP8: E4M3 forward, E5M2 gradients)")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16", "fp8"}));
  t->add_option("--fp8-recipe", f.fp8_recipe, "fp8 scaling: delayed (scales from the amax history) | current (from each "
                "tensor's own amax)")->check(CLI::IsMember({"delayed", "current"}));
  t->add_option("--fp8-amax-history", c.fp8.amax_history, "fp8 delayed scaling: steps of amax history")
      ->check(number_in(1, 1 << 20));
  t->add_option("--fp8-margin", c.fp8.margin, "fp8: scales divided by 2^margin")->check(number_in(0, 64));
  t->add_option("--fp8-layers", f.fp8_layers, "fp8: inner (the model's first and last layers stay bf16) | all")
      ->check(CLI::IsMember({"inner", "all"}));
  t->add_option("--gemm", f.gemm, "GPU linear layers: native (tensor cores, fused epilogues) | tiled | cublas")
      ->check(CLI::IsMember({"native", "tiled", "cublas", "cublas-unfused"}));
  add_model_flags(t, c.model);
  t->add_option("--data", c.data, "fashion-mnist | idx:DIR | synthetic | shakespeare | text:FILE (UTF-8) | tokens:DIR (train.bin, val.bin) | tokens:TRAIN[,VAL] (token files or globs of shards)")->check(kNonEmpty);
  t->add_option("--vocab-size", c.vocab_size, "tokens:DIR: the ids' vocabulary, when not GPT-2's 50257 (the files do not say)")
      ->check(number_in(1, 65536))->default_str("");
  t->add_option("--synthetic-samples", c.synthetic.train_samples, "training samples of --data synthetic")
      ->check(number_in(1, 1 << 30));
  t->add_option("--synthetic-features", c.synthetic.features, "features of --data synthetic")->check(number_in(1, 1 << 24));
  t->add_option("--epochs", c.epochs, "passes over the training set")->check(kCount);
  t->add_option("--steps", f.steps, "stop after N optimizer steps (overrides --epochs; 0: init, eval, save)")
      ->check(kCountOrZero)->default_str("");
  t->add_option("--batch-size", c.batch_size, "samples per micro-batch, per rank")->check(number_in(1, 1 << 30));
  t->add_option("--accum-steps", c.accum_steps, "micro-batches per optimizer step")->check(number_in(1, 1 << 20));
  t->add_option("--optimizer", f.optimizer, "sgd | adamw")->check(CLI::IsMember({"sgd", "adamw"}));
  t->add_option("--lr", f.lr, "peak learning rate")->check(number_in(1e-30, 1e30));
  t->add_option("--momentum", f.momentum, "SGD momentum (--optimizer sgd)")->check(number_in(0, 0.9999));
  t->add_option("--beta1", c.optimizer.adamw.beta1, "AdamW's beta1")->check(number_in(0, 0.9999));
  t->add_option("--beta2", c.optimizer.adamw.beta2, "AdamW's beta2")->check(number_in(0, 0.999999));
  t->add_flag("--nesterov", f.nesterov, "SGD Nesterov momentum (--optimizer sgd)");
  t->add_option("--weight-decay", f.weight_decay, "L2 (sgd) or decoupled (adamw) weight decay [sgd 0, adamw 0.01]")
      ->check(number_in(0, 1e6))->default_str("");
  t->add_option("--schedule", f.schedule, "constant | cosine (after --warmup-steps linear warmup)")
      ->check(CLI::IsMember({"constant", "cosine"}));
  t->add_option("--warmup-steps", c.schedule.warmup_steps, "linear LR warmup steps")->check(kCountOrZero);
  t->add_option("--min-lr", c.schedule.min_lr, "the cosine schedule's floor")->check(number_in(0, 1e30));
  t->add_option("--clip-grad-norm", c.clip_grad_norm, "clip the global gradient norm to this (0: off)")->check(number_in(0, 1e30));
  t->add_option("--loss-scale", f.loss_scale, "dynamic | a static scale (fp16 only)");
  t->add_option("--init-scale", c.scaler.init_scale, "initial dynamic loss scale")->check(number_in(kMinLossScale, 1e38));
  t->add_option("--growth-interval", c.scaler.growth_interval, "finite steps before the scale grows")->check(number_in(1, 1e9));
  t->add_option("--hysteresis", c.scaler.hysteresis, "overflows tolerated before the scale backs off")->check(number_in(1, 1e9));
  t->add_option("--min-scale", c.scaler.min_scale, "the scale never backs off below this")->check(number_in(kMinLossScale, 1e38));
  t->add_option("--seed", c.seed, "seed of the initial weights and the data order");
  t->add_option("--log-every", c.log_every, "log (and read back from the device) every N steps")->check(number_in(1, 1e6));
  t->add_option("--eval-every", c.eval_every, "evaluate every N steps (0: after every epoch), and at the end")->check(kCountOrZero);
  t->add_option("--eval-batch-size", c.eval_batch_size, "samples or windows per evaluation batch")->check(number_in(1, 1 << 24));
  t->add_option("--eval-windows", c.eval_windows, "text: evaluate on the first N non-overlapping windows of the validation text")
      ->check(number_in(1, 1e9));
  t->add_flag("--no-progress", f.no_progress, "no progress bar even on a terminal");
  t->add_flag("--dry-run", f.dry_run, "measure this configuration's memory by kind (one step, nothing saved or evaluated) and stop");
  t->add_option("--metrics", c.metrics_path, "write JSON Lines metrics to FILE")->check(kNonEmpty);
  t->add_option("--save", c.save_dir, "write checkpoints (safetensors) under DIR")->check(kNonEmpty);
  t->add_option("--save-every", c.save_every, "also checkpoint every N steps")->check(kCountOrZero);
  t->add_option("--keep", c.keep, "checkpoints to keep under --save (0: all)")->check(number_in(0, 1e6));
  t->add_flag("--overwrite", c.overwrite, "allow --save into a directory that holds another run's checkpoints (they are "
              "rotated away as this run saves)");
  t->add_option("--resume", c.resume, "continue from a checkpoint directory, or the latest under a --save DIR")->check(kNonEmpty);
  t->add_option("--stop-after", f.stop_after, "end this run after step N (saving with --save); --steps still sets the schedule")
      ->check(kCountOrZero)->default_str("");
  t->add_option("--max-consecutive-skips", c.max_consecutive_skips,
                "stop (saving a checkpoint) after this many skipped (overflowing) steps in a row")
      ->check(number_in(1, 1e9));
  t->add_flag("--no-shuffle", f.no_shuffle, "keep the data in file order");
  t->add_flag("--cuda-graph", c.cuda_graph, "capture one training step as a CUDA graph and replay it (cuda, simt)");
  t->add_option("--inject-overflow", f.inject_overflow, "STEP[:RANK][,...]: poison that step's gradients with inf");
  t->add_option("--comm", f.comm, "data-parallel transport: auto (nccl on cuda, else mpi) | mpi | nccl")
      ->check(CLI::IsMember({"auto", "mpi", "nccl"}));
  t->add_option("--comm-timeout", f.comm_timeout, "seconds a collective may take before the job is aborted")
      ->check(number_in(0.001, 1e7));
  t->add_option("--dropout", c.dropout, "gpt: dropout probability in training, as nanoGPT: after the embeddings, on the "
                "attention probabilities (inside the fused attention) and after each block's two projections")
      ->check(number_in(0, 0.95));
  t->add_option("--zero", c.zero, "ZeRO stage under mpirun: 0 (each rank holds everything) | 1 (the optimizer state sharded "
                "over the ranks, each updating its shard) | 2 (the gradients sharded too)")
      ->check(CLI::Range(0, 2));
  t->add_option("--bucket-mb", f.bucket_mb, "allreduce bucket size (MiB)")->check(number_in(0.001, 1e6));
  t->add_option("--first-bucket-mb", f.first_bucket_mb, "size of the first (last layer's) bucket (MiB)")
      ->check(number_in(0.001, 1e6));
  t->add_option("--allreduce-dtype", f.allreduce_dtype, "gradient traffic: fp32 | fp16 | bf16 (compressed)")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  t->add_option("--inject-crash", f.inject_crash, "STEP:RANK[,...]: that rank kills itself at that step (fault tests)")
      ->group("Fault injection");
  t->add_option("--inject-hang", f.inject_hang, "STEP:RANK[,...]: that rank stops answering at that step (fault tests)")
      ->group("Fault injection");
  t->add_option("--inject-crash-in-save", f.inject_crash_in_save, "STEP: die (SIGKILL) half-way through that step's checkpoint")
      ->check(kCountOrZero)->group("Fault injection");
  t->add_option("--inject-crash-in-save-at", f.inject_crash_in_save_at,
                "where in the save: files (after the second file) | replace (old copy moved aside) | rotate (an old "
                "checkpoint moved to the trash)")
      ->check(CLI::IsMember({"files", "replace", "rotate"}))->group("Fault injection");
}

}  // namespace ht::cli
