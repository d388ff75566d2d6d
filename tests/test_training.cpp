// The training loop end to end on the CPU backend: gradient accumulation, overflow handling,
// the metrics file; and (tagged [slow]) the Fashion-MNIST acceptance runs.
#include "tests/helpers.h"
#include "tests/train_helpers.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

using namespace ht;
using namespace ht::test;

namespace {

// max |Δa - Δb| / max |Δa|, Δ = the change in the weights over the run.
double relative_update_difference(const TrainRun& a, const TrainRun& b) {
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < a.master.size(); ++i) {
    const double da = a.master[i] - a.initial[i], db = b.master[i] - b.initial[i];
    diff = std::max(diff, std::fabs(da - db));
    scale = std::max(scale, std::fabs(da));
  }
  return diff / scale;
}

std::vector<std::int64_t> skipped_steps(const TrainSummary& s) {
  std::vector<std::int64_t> out;
  for (const StepSummary& st : s.steps)
    if (st.record.skipped) out.push_back(st.step);
  return out;
}

}  // namespace

TEST_CASE("k micro-batches of B/k give the same update as one batch of B (fp32)", "[training]") {
  for (OptimizerKind kind : {OptimizerKind::sgd, OptimizerKind::adamw}) {
    TrainConfig one = small_config();
    one.optimizer.kind = kind;
    one.optimizer.sgd.momentum = 0.9f;
    one.batch_size = 64;
    one.steps = 3;
    TrainConfig four = one;
    four.batch_size = 16;
    four.accum_steps = 4;
    const TrainRun a = train_in_process(one), b = train_in_process(four);
    INFO(optimizer_name(kind));
    CHECK(relative_update_difference(a, b) <= 1e-5);
    for (std::size_t i = 0; i < a.summary.steps.size(); ++i)
      CHECK(b.summary.steps[i].record.loss == Approx(a.summary.steps[i].record.loss).epsilon(1e-5));
  }
}

TEST_CASE("flag --inject-overflow skips exactly the named steps and backs the scale off each time", "[training][overflow]") {
  TrainConfig c = small_config(Precision::fp16);
  c.steps = 10;
  c.inject_overflow = parse_overflow_injections("3,7");
  const TrainRun run = train_in_process(c);
  CHECK(skipped_steps(run.summary) == std::vector<std::int64_t>{3, 7});
  const auto& s = run.summary.steps;
  CHECK(s[2].record.loss_scale == 65536);
  CHECK(s[3].record.loss_scale == 32768);
  CHECK(s[7].record.loss_scale == 16384);
  CHECK(run.log.find("step 3: skipped, non-finite gradients in layers.0.weight") != std::string::npos);
  CHECK(run.log.find("step 7: skipped") != std::string::npos);
  // A skipped step does not advance the schedule: the LR of step 4 is that of step 3.
  c.schedule.kind = LrSchedule::cosine;
  const TrainRun cosine = train_in_process(c);
  CHECK(cosine.summary.steps[3].record.lr == cosine.summary.steps[2].record.lr);
  CHECK(cosine.summary.steps[2].record.lr < cosine.summary.steps[1].record.lr);
}

TEST_CASE("flag --init-scale 2^24 overflows on purpose: skips, backs off, logs each skip, and still converges", "[training][overflow]") {
  TrainConfig c = small_config(Precision::fp16);
  c.scaler.init_scale = 16777216.0f;
  c.steps = 60;
  c.log_every = 8;
  const TrainRun run = train_in_process(c);
  const std::vector<std::int64_t> skipped = skipped_steps(run.summary);
  REQUIRE(!skipped.empty());
  for (std::size_t i = 0; i < skipped.size(); ++i) {
    CHECK(skipped[i] == static_cast<std::int64_t>(i) + 1);  // the first steps, until the scale fits
    CHECK(run.summary.steps[i].record.loss_scale == std::ldexp(16777216.0f, -static_cast<int>(i)));
    CHECK(run.log.find(fmt::format("step {}: skipped", skipped[i])) != std::string::npos);
  }
  const auto& first_taken = run.summary.steps[skipped.size()].record;
  CHECK(first_taken.skipped == 0);
  CHECK(first_taken.loss_scale == std::ldexp(16777216.0f, -static_cast<int>(skipped.size())));
  CHECK(run.summary.steps.back().record.loss < 0.5 * run.summary.steps.front().record.loss);
  CHECK(run.summary.evals.back().accuracy > 0.8);
}

TEST_CASE("fp32 and bf16 use no loss scaling", "[training]") {
  for (Precision p : {Precision::fp32, Precision::bf16}) {
    const TrainRun run = train_in_process(small_config(p));
    for (const StepSummary& s : run.summary.steps) CHECK(s.record.loss_scale == 1.0f);
  }
}

TEST_CASE("flag --metrics writes the memory account, one JSON record per step and one per evaluation", "[training]") {
  TrainConfig c = small_config(Precision::fp16);
  c.steps = 5;
  c.metrics_path = unique_temp_path("halftape-metrics").string();
  c.inject_overflow = parse_overflow_injections("2");
  train_in_process(c);
  std::ifstream in(c.metrics_path);
  std::vector<nlohmann::json> records;
  for (std::string line; std::getline(in, line);) records.push_back(nlohmann::json::parse(line));
  std::filesystem::remove(c.metrics_path);
  REQUIRE(records.size() == 7);
  // First the memory account, written when the first step is queued (train/memory_account.h).
  REQUIRE(records[0].contains("memory"));
  CHECK(records[0]["event"] == "memory");
  for (const char* key : {"parameters", "master_bytes", "gradient_bytes", "optimizer_bytes", "activation_bytes", "peak_bytes"})
    CHECK(records[0]["memory"].contains(key));
  records.erase(records.begin());
  for (int i = 0; i < 5; ++i) {
    const auto& r = records[static_cast<std::size_t>(i)];
    for (const char* key : {"step", "epoch", "loss", "loss_scale", "grad_norm", "skipped", "lr", "samples_per_s"})
      CHECK(r.contains(key));
    CHECK(r["step"] == i + 1);
    CHECK(r["skipped"] == (i == 1));
  }
  CHECK(records[1]["loss_scale"] == 65536.0);
  CHECK(records[2]["loss_scale"] == 32768.0);
  const auto& eval = records.back();
  CHECK(eval["event"] == "eval");
  CHECK(eval["test_accuracy"].get<double>() >= 0.0);
  CHECK(eval["test_accuracy"].get<double>() <= 1.0);
}

TEST_CASE("flag --steps 0 initialises and evaluates without training", "[training]") {
  TrainConfig c = small_config();
  c.steps = 0;
  const TrainRun run = train_in_process(c);
  CHECK(run.summary.steps.empty());
  REQUIRE(run.summary.evals.size() == 1);
  CHECK(run.master == run.initial);
}

TEST_CASE("Fashion-MNIST, default recipe: fp16 reaches 87% and tracks fp32", "[training][slow]") {
  TrainConfig c;  // the defaults of `halftape train`
  c.device = DeviceChoice::cpu;
  c.progress_bar = false;
  c.log_every = 500;
  c.precision = Precision::fp16;
  const TrainRun half = train_in_process(c);
  c.precision = Precision::fp32;
  const TrainRun full = train_in_process(c);
  const double acc16 = half.summary.evals.back().accuracy, acc32 = full.summary.evals.back().accuracy;
  WARN("fp16 test accuracy " << 100 * acc16 << "%, fp32 " << 100 * acc32 << "%");
  CHECK(acc16 >= 0.87);
  CHECK(std::fabs(acc16 - acc32) <= 0.005);
  REQUIRE(half.summary.evals.size() == full.summary.evals.size());
  for (std::size_t e = 0; e < half.summary.evals.size(); ++e) {
    const double l16 = half.summary.evals[e].train_loss, l32 = full.summary.evals[e].train_loss;
    INFO("epoch " << e + 1 << ": fp16 " << l16 << ", fp32 " << l32);
    CHECK(std::fabs(l16 - l32) <= 0.02 * l32);
  }
}
