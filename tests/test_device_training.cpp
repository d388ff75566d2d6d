// `train --device simt` against `--device cpu` (and `--device cuda` when there is a GPU): the
// whole GPU code path - every kernel, the device-side scaler, the step records - must follow
// the reference. Tolerances are derived in docs/numerics.md ("CPU vs GPU").
#include "tests/helpers.h"
#include "tests/train_helpers.h"

#include <nlohmann/json.hpp>

#include <bit>
#include <filesystem>
#include <fstream>

using namespace ht;
using namespace ht::test;

namespace {

TrainConfig device_config(Precision p) {
  TrainConfig c = small_config(p);
  c.steps = 12;
  c.model.mlp.hidden = {48, 24};
  c.model.mlp.activation = Activation::gelu;
  c.accum_steps = 2;
  c.batch_size = 16;
  return c;
}

}  // namespace

TEST_CASE("device training: fp32 losses match the CPU reference to 1e-5", "[device-training]") {
  const TrainConfig c = device_config(Precision::fp32);
  const TrainRun cpu = train_in_process(c, DeviceChoice::cpu);
  for (DeviceChoice d : gpu_devices()) {
    const TrainRun gpu = train_in_process(c, d);
    REQUIRE(gpu.summary.steps.size() == cpu.summary.steps.size());
    for (std::size_t i = 0; i < cpu.summary.steps.size(); ++i)
      CHECK(gpu.summary.steps[i].record.loss == Approx(cpu.summary.steps[i].record.loss).epsilon(1e-5));
    CHECK(gpu.summary.evals.back().loss == Approx(cpu.summary.evals.back().loss).epsilon(1e-5));
  }
}

TEST_CASE("device training: fp16 skips the same steps with the same scales - losses within (2L+1)·2^-11", "[device-training]") {
  TrainConfig c = device_config(Precision::fp16);
  c.scaler.init_scale = 16777216.0f;                 // overflows for the first steps
  c.inject_overflow = parse_overflow_injections("9");
  const double tolerance = (2 * 3 + 1) * 0x1p-11;    // three linear layers
  const TrainRun cpu = train_in_process(c, DeviceChoice::cpu);
  for (DeviceChoice d : gpu_devices()) {
    const TrainRun gpu = train_in_process(c, d);
    REQUIRE(gpu.summary.steps.size() == cpu.summary.steps.size());
    int skipped = 0;
    for (std::size_t i = 0; i < cpu.summary.steps.size(); ++i) {
      const StepRecord &g = gpu.summary.steps[i].record, &r = cpu.summary.steps[i].record;
      INFO("step " << i + 1);
      CHECK(g.skipped == r.skipped);
      CHECK(g.loss_scale == r.loss_scale);
      CHECK(g.loss == Approx(r.loss).epsilon(tolerance));
      skipped += r.skipped;
    }
    CHECK(skipped >= 2);  // the test exercises skipping
  }
}

TEST_CASE("device training: bf16 follows the CPU reference", "[device-training]") {
  const TrainConfig c = device_config(Precision::bf16);
  const double tolerance = (2 * 3 + 1) * 0x1p-8;
  const TrainRun cpu = train_in_process(c, DeviceChoice::cpu);
  for (DeviceChoice d : gpu_devices()) {
    const TrainRun gpu = train_in_process(c, d);
    for (std::size_t i = 0; i < cpu.summary.steps.size(); ++i)
      CHECK(gpu.summary.steps[i].record.loss == Approx(cpu.summary.steps[i].record.loss).epsilon(tolerance));
  }
}

TEST_CASE("device training: --cuda-graph replays the captured step with exactly the eager results", "[device-training][graph]") {
  TrainConfig c = device_config(Precision::fp16);
  c.synthetic.train_samples = 160;  // 5 steps per epoch: the replays cross epochs and evaluations
  c.steps = 16;
  c.scaler.init_scale = 16777216.0f;
  c.inject_overflow = parse_overflow_injections("11");  // an eager step between replays
  for (DeviceChoice d : gpu_devices()) {
    const TrainRun eager = train_in_process(c, d);
    TrainConfig graphed = c;
    graphed.cuda_graph = true;
    const TrainRun replayed = train_in_process(graphed, d);
    REQUIRE(replayed.summary.steps.size() == eager.summary.steps.size());
    for (std::size_t i = 0; i < eager.summary.steps.size(); ++i) {
      const StepRecord &a = eager.summary.steps[i].record, &b = replayed.summary.steps[i].record;
      INFO("step " << i + 1);
      CHECK(b.loss == a.loss);
      CHECK(b.loss_scale == a.loss_scale);
      CHECK(b.skipped == a.skipped);
      CHECK(std::bit_cast<std::uint32_t>(b.grad_norm) == std::bit_cast<std::uint32_t>(a.grad_norm));  // NaN on skips
    }
    CHECK(replayed.master == eager.master);
    CHECK(eager.summary.skipped_steps >= 2);
  }
}

TEST_CASE("device training: --cuda-graph on the CPU backend is refused", "[device-training][graph]") {
  TrainConfig c = small_config();
  c.cuda_graph = true;
  CHECK_THROWS_WITH(train_in_process(c, DeviceChoice::cpu), Catch::Contains("--cuda-graph needs a GPU backend"));
}

TEST_CASE("device training: the gradient norm does not depend on how many SMs the device has", "[device-training]") {
#if HALFTAPE_HAVE_SIMT
  // The emulator's "SM count" is its worker-thread count. A model whose gradient arena has many
  // chunks (the default MLP: 15) gives the norm's partial sums room to be grouped differently;
  // in fp32 a different grouping shows in the norm's last bits within the first steps.
  const std::string base = std::string(HALFTAPE_BINARY) +
                           " train --device simt --precision fp32 --data synthetic --synthetic-samples 256 --batch-size 8 "
                           "--steps 8 --log-every 1 --no-progress --metrics ";
  std::vector<std::string> norms;
  for (int threads : {1, 3}) {
    const std::filesystem::path metrics = unique_temp_path("halftape-norm") += ".jsonl";
    const std::string cmd = fmt::format("HALFTAPE_SIMT_THREADS={} {}{} >/dev/null 2>&1", threads, base, metrics.string());
    REQUIRE(std::system(cmd.c_str()) == 0);
    std::ifstream in(metrics);
    std::string line, all;
    while (std::getline(in, line))
      if (line.find("grad_norm") != std::string::npos) all += nlohmann::json::parse(line)["grad_norm"].dump() + " ";
    norms.push_back(all);
    std::filesystem::remove(metrics);
  }
  INFO("grad norms with 1 and 3 emulated SMs: " << norms[0] << "| " << norms[1]);
  CHECK(!norms[0].empty());
  CHECK(norms[0] == norms[1]);  // bit for bit
#else
  WARN("skipped: this build has no SIMT emulator");
#endif
}

namespace {
// A world of one that counts what is handed to its watchdog.
class WatchCounter final : public Communicator {
 public:
  std::string name() const override { return "counting"; }
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  void allreduce(void*, std::int64_t, CommDType, ReduceOp) override {}
  std::unique_ptr<CommRequest> allreduce_async(void*, std::int64_t, CommDType, ReduceOp) override { return nullptr; }
  void broadcast(void*, std::size_t, int) override {}
  void barrier() override {}
  std::vector<std::string> allgather(const std::string& mine, const std::string&) override { return {mine}; }
  int allreduce_max(int value, const std::string&) override { return value; }
  void watch_queued_work(const std::string& what) override { watched.push_back(what); }
  std::vector<std::string> watched;
};
}  // namespace

TEST_CASE("device training: every replayed CUDA graph is handed to the communicator's watchdog", "[device-training]") {
  for (DeviceChoice d : gpu_devices()) {
    TrainConfig c = device_config(Precision::fp16);
    c.cuda_graph = true;
    c.steps = 7;
    auto backend = make_backend(d);
    WatchCounter comm;
    const DataSplit data = load_data(c.data, c.synthetic);
    Trainer trainer(c, *backend, comm, data, nullptr);
    trainer.run();
    REQUIRE(comm.watched.size() == static_cast<std::size_t>(7 - Trainer::kGraphWarmupSteps));  // steps 3..7
    CHECK(comm.watched.front() == "step 3 (a replayed CUDA graph)");
  }
}
