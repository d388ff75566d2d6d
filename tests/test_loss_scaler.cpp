// The loss scaler: GradScaler's update rule step by step (table-driven), the options beyond
// PyTorch, the fused unscale/check/norm pass, and the unscale -> step -> update state machine.
#include "engine/loss_scaler.h"
#include "kernels/step_state.h"
#include "tests/helpers.h"

using namespace ht;
using namespace ht::test;

namespace {

struct Expect {
  bool overflow;
  float scale;  // after the update
  int tracker;
};

void run_table(const LossScalerConfig& config, float initial, const std::vector<Expect>& table) {
  ScalerState s = initial_scaler_state(config, true);
  s.scale = initial;
  for (std::size_t i = 0; i < table.size(); ++i) {
    INFO("step " << i + 1 << (table[i].overflow ? " (overflow)" : ""));
    update_loss_scale(s, table[i].overflow, config);
    CHECK(s.scale == table[i].scale);
    CHECK(s.growth_tracker == table[i].tracker);
  }
}

}  // namespace

TEST_CASE("dynamic scaling follows torch.amp.GradScaler step by step", "[scaler]") {
  LossScalerConfig c;  // PyTorch's defaults, but a short interval so growth shows
  c.growth_interval = 3;
  c.min_scale = 1e-30f;
  REQUIRE(LossScalerConfig{}.init_scale == 65536.0f);
  REQUIRE(LossScalerConfig{}.growth_factor == 2.0f);
  REQUIRE(LossScalerConfig{}.backoff_factor == 0.5f);
  REQUIRE(LossScalerConfig{}.growth_interval == 2000);
  REQUIRE(LossScalerConfig{}.hysteresis == 1);
  run_table(c, 65536, {
      {false, 65536, 1}, {false, 65536, 2}, {false, 131072, 0},   // grows at the interval
      {true, 65536, 0},                                           // overflow: backoff, tracker reset
      {false, 65536, 1}, {true, 32768, 0}, {true, 16384, 0},      // consecutive overflows keep halving
      {false, 16384, 1}, {false, 16384, 2}, {false, 32768, 0},
      {false, 32768, 1},
  });
}

TEST_CASE("growth that would overflow fp32 leaves the scale alone but resets the tracker", "[scaler]") {
  LossScalerConfig c;
  c.growth_interval = 2;
  c.max_scale = INFINITY;
  run_table(c, 0x1p127f, {{false, 0x1p127f, 1}, {false, 0x1p127f, 0}, {false, 0x1p127f, 1}});
}

TEST_CASE("hysteresis backs off only after H overflows, and refills on growth", "[scaler]") {
  LossScalerConfig c;
  c.growth_interval = 2;
  c.hysteresis = 2;
  run_table(c, 1024, {
      {true, 1024, 0},   // first overflow tolerated
      {true, 512, 0},    // second: back off, budget refilled
      {true, 512, 0},    // tolerated again
      {false, 512, 1}, {false, 1024, 0},  // growth refills the budget
      {true, 1024, 0}, {true, 512, 0},
  });
}

TEST_CASE("min_scale floors the backoff and max_scale caps growth", "[scaler]") {
  LossScalerConfig c;
  c.growth_interval = 1;
  c.min_scale = 4;
  c.max_scale = 16;
  run_table(c, 8, {{true, 4, 0}, {true, 4, 0}, {false, 8, 0}, {false, 16, 0}, {false, 16, 0}});
}

TEST_CASE("a static scale never changes, but overflows are still counted", "[scaler]") {
  LossScalerConfig c;
  c.dynamic = 0;
  ScalerState s = initial_scaler_state(c, true);
  s.scale = 128;
  for (bool overflow : {true, true, false, true}) update_loss_scale(s, overflow, c);
  CHECK(s.scale == 128);
  CHECK(s.consecutive_skips == 1);
}

namespace {

// A two-tensor arena with the given gradients, and a scaler at `scale`.
struct ScalerRig {
  std::unique_ptr<Backend> backend = make_cpu_backend();
  ParamArena arena;
  std::unique_ptr<StepState> steps;
  std::unique_ptr<LossScaler> scaler;
  Tensor log = backend->buffer(2 * sizeof(std::int32_t));
  Tensor record = backend->buffer(sizeof(StepRecord));

  ScalerRig(std::int64_t n0, std::int64_t n1, float scale) {
    arena.add("a", Shape{n0});
    arena.add("b", Shape{n1});
    arena.allocate(*backend, DType::f32);
    LossScalerConfig c;
    c.init_scale = scale;
    steps = std::make_unique<StepState>(*backend, LrSchedule{});
    scaler = std::make_unique<LossScaler>(*backend, arena, *steps, c, true);
  }
  void set_grads(int tensor, const std::vector<float>& g) { upload(*backend, arena.grad(tensor), g); }
  std::vector<std::int32_t> flags() { return download<std::int32_t>(*backend, log); }
};

}  // namespace

TEST_CASE("unscale: one read-only pass finds inf/NaN per tensor at any position, computes the norm, leaves the arena scaled", "[scaler]") {
  const std::int64_t n0 = 200000, n1 = 37;  // n0 spans several chunks
  for (const std::int64_t pos : {std::int64_t{0}, n0 / 2, n0 - 1}) {
    for (const float poison : {INFINITY, -INFINITY, NAN}) {
      INFO("poison at " << pos << " = " << poison);
      ScalerRig rig(n0, n1, 1024);
      std::vector<float> g0(static_cast<std::size_t>(n0), 2048.0f);
      g0[static_cast<std::size_t>(pos)] = poison;
      rig.set_grads(0, g0);
      rig.set_grads(1, std::vector<float>(static_cast<std::size_t>(n1), 1024.0f));
      rig.scaler->unscale(0, rig.log.data_as<std::int32_t>(), 1);
      const DeviceStepState s = rig.steps->read();
      CHECK(s.control.found_inf == 1);
      CHECK(rig.flags() == std::vector<std::int32_t>{1, 0});
      const std::vector<float> g = download<float>(*rig.backend, rig.arena.grad(1));
      CHECK(g[0] == 1024.0f);  // the optimizer unscales as it reads
    }
  }
  ScalerRig rig(n0, n1, 4);
  rig.set_grads(0, std::vector<float>(static_cast<std::size_t>(n0), 4.0f));  // unscaled: 1
  rig.set_grads(1, std::vector<float>(static_cast<std::size_t>(n1), 8.0f));  // unscaled: 2
  rig.scaler->unscale(1.0f, rig.log.data_as<std::int32_t>(), 1);
  const DeviceStepState s = rig.steps->read();
  const double norm = std::sqrt(static_cast<double>(n0) + 4.0 * static_cast<double>(n1));
  CHECK(s.control.found_inf == 0);
  CHECK(s.control.grad_norm == Approx(norm).epsilon(1e-6));
  CHECK(s.control.clip_coef == Approx(1.0 / (norm + 1e-6)).epsilon(1e-6));
  CHECK(rig.flags() == std::vector<std::int32_t>{0, 0});
}

TEST_CASE("unscale on an empty parameter list is clean", "[scaler]") {
  auto backend = make_cpu_backend();
  ParamArena arena;
  arena.allocate(*backend, DType::f32);
  StepState steps(*backend, LrSchedule{});
  LossScaler scaler(*backend, arena, steps, LossScalerConfig{}, true);
  scaler.unscale(0, nullptr, 1);
  CHECK(steps.read().control.found_inf == 0);
  CHECK(steps.read().control.grad_norm == 0);
}

TEST_CASE("the scaler's state machine rejects unscaling or stepping twice, as PyTorch does", "[scaler]") {
  ScalerRig rig(4, 4, 8);
  OptimizerConfig oc;
  Optimizer opt(*rig.backend, rig.arena, oc);
  auto* log = rig.log.data_as<std::int32_t>();
  auto* record = rig.record.data_as<StepRecord>();
  CHECK_THROWS_WITH(rig.scaler->step(opt), Catch::Contains("unscale() first"));
  CHECK_THROWS_WITH(rig.scaler->update(record, 1), Catch::Contains("before step()"));
  rig.scaler->unscale(0, log, 1);
  CHECK_THROWS_WITH(rig.scaler->unscale(0, log, 1), Catch::Contains("unscale() has already been called"));
  rig.scaler->step(opt);
  CHECK_THROWS_WITH(rig.scaler->step(opt), Catch::Contains("step() has already been called"));
  rig.scaler->update(record, 1);
  rig.scaler->unscale(0, log, 1);  // a new step may begin
}

TEST_CASE("update writes the step record: the scale backward used, the norm, the skip", "[scaler]") {
  ScalerRig rig(3, 3, 256);
  OptimizerConfig oc;
  Optimizer opt(*rig.backend, rig.arena, oc);
  rig.set_grads(1, {1.0f, INFINITY, 0.0f});
  rig.scaler->unscale(0, rig.log.data_as<std::int32_t>(), 1);
  rig.scaler->step(opt);
  rig.scaler->update(rig.record.data_as<StepRecord>(), 1);
  const StepRecord r = download<StepRecord>(*rig.backend, rig.record)[0];
  CHECK(r.skipped == 1);
  CHECK(r.loss_scale == 256);
  CHECK(r.consecutive_skips == 1);
  const DeviceStepState s = rig.steps->read();
  CHECK(s.scaler.scale == 128);
  CHECK(s.steps_skipped == 1);
  CHECK(s.steps_taken == 0);
  CHECK(download<float>(*rig.backend, rig.arena.grads()) == std::vector<float>(static_cast<std::size_t>(rig.arena.size()), 0.0f));
}
