// SGD and AdamW against straightforward FP64 transcriptions of torch.optim's algorithms; the
// skip on found_inf; the LR schedule, which skipped steps do not advance.
#include "engine/optimizer.h"
#include "kernels/step_state.h"
#include "tests/helpers.h"

using namespace ht;
using namespace ht::test;

namespace {

struct Rig {
  std::unique_ptr<Backend> backend = make_cpu_backend();
  ParamArena arena;
  Tensor state = backend->buffer(sizeof(DeviceStepState));
  std::vector<float> p0;
  std::int64_t n = 50;

  explicit Rig(DType working) {
    arena.add("p", Shape{n});
    arena.allocate(*backend, working);
    p0 = random_floats(static_cast<std::size_t>(n), 21);
    upload(*backend, arena.master(0), p0);
    arena.refresh_working_copy(*backend);
  }
  void control(float lr, std::int64_t t, float clip, int found_inf) {
    DeviceStepState s;
    s.control.lr = lr;
    s.control.t = t;
    s.control.clip_coef = clip;
    s.control.found_inf = found_inf;
    backend->upload(state.data(), &s, sizeof(s));
  }
  void grads(const std::vector<float>& g) { upload(*backend, arena.grad(0), g); }
  std::vector<float> master() { return values_of(*backend, arena.master(0)); }
};

}  // namespace

TEST_CASE("AdamW matches torch.optim.AdamW (FP64 transcription) over several steps, with clipping", "[optim]") {
  Rig rig(DType::f32);
  OptimizerConfig oc;
  oc.kind = OptimizerKind::adamw;
  oc.adamw = {0.9f, 0.95f, 1e-6f, 0.1f};
  Optimizer opt(*rig.backend, rig.arena, oc);
  std::vector<double> p = to_double(rig.p0), m(p.size()), v(p.size());
  for (std::int64_t t = 1; t <= 4; ++t) {
    const std::vector<float> g = random_floats(p.size(), 100 + static_cast<std::uint64_t>(t));
    const float lr = 0.01f * static_cast<float>(t), clip = 0.5f;
    rig.grads(g);
    rig.control(lr, t, clip, 0);
    opt.step(rig.state.data_as<DeviceStepState>());
    for (std::size_t i = 0; i < p.size(); ++i) {
      const double gi = static_cast<double>(g[i]) * clip;
      p[i] *= 1 - lr * 0.1;
      m[i] = 0.9 * m[i] + 0.1 * gi;
      v[i] = 0.95 * v[i] + 0.05 * gi * gi;
      const double bc1 = 1 - std::pow(0.9, t), bc2 = 1 - std::pow(0.95, t);
      p[i] -= lr / bc1 * m[i] / (std::sqrt(v[i]) / std::sqrt(bc2) + 1e-6);
    }
    CHECK(worst_error(to_double(rig.master()), p, 1e-6, 1e-5) <= 1);
    CHECK(download<float>(*rig.backend, rig.arena.grad(0)) == std::vector<float>(p.size(), 0.0f));
  }
}

TEST_CASE("SGD with momentum (and Nesterov) and L2 weight decay matches torch.optim.SGD", "[optim]") {
  for (int nesterov : {0, 1}) {
    Rig rig(DType::f32);
    OptimizerConfig oc;
    oc.kind = OptimizerKind::sgd;
    oc.sgd = {0.9f, 0.01f, nesterov};
    Optimizer opt(*rig.backend, rig.arena, oc);
    std::vector<double> p = to_double(rig.p0), buf(p.size());
    for (std::int64_t t = 1; t <= 4; ++t) {
      const std::vector<float> g = random_floats(p.size(), 200 + static_cast<std::uint64_t>(t));
      rig.grads(g);
      rig.control(0.1f, t, 1.0f, 0);
      opt.step(rig.state.data_as<DeviceStepState>());
      for (std::size_t i = 0; i < p.size(); ++i) {
        double d = g[i] + 0.01 * p[i];
        buf[i] = t == 1 ? d : 0.9 * buf[i] + d;
        d = nesterov ? d + 0.9 * buf[i] : buf[i];
        p[i] -= 0.1 * d;
      }
      CHECK(worst_error(to_double(rig.master()), p, 1e-6, 1e-5) <= 1);
    }
  }
}

TEST_CASE("found_inf skips the update but still zeroes the gradients", "[optim]") {
  Rig rig(DType::f16);
  Optimizer opt(*rig.backend, rig.arena, OptimizerConfig{});
  rig.grads(random_floats(static_cast<std::size_t>(rig.n), 5));
  rig.control(0.1f, 1, 1.0f, 1);
  const std::vector<float> working_before = values_of(*rig.backend, rig.arena.working(0));
  opt.step(rig.state.data_as<DeviceStepState>());
  CHECK(rig.master() == rig.p0);
  CHECK(values_of(*rig.backend, rig.arena.working(0)) == working_before);
  CHECK(download<float>(*rig.backend, rig.arena.grad(0)) == std::vector<float>(static_cast<std::size_t>(rig.n), 0.0f));
}

TEST_CASE("the optimizer refreshes the low-precision working copy from the FP32 master", "[optim]") {
  Rig rig(DType::bf16);
  Optimizer opt(*rig.backend, rig.arena, OptimizerConfig{});
  rig.grads(random_floats(static_cast<std::size_t>(rig.n), 6));
  rig.control(0.05f, 1, 1.0f, 0);
  opt.step(rig.state.data_as<DeviceStepState>());
  const std::vector<float> master = rig.master();
  const std::vector<float> working = values_of(*rig.backend, rig.arena.working(0));
  CHECK(master != rig.p0);
  for (std::size_t i = 0; i < master.size(); ++i) CHECK(working[i] == round_to(DType::bf16, master[i]));
}

TEST_CASE("LR schedule: linear warmup, then cosine to min_lr - constant stays put", "[optim][schedule]") {
  LrSchedule s;
  s.kind = LrSchedule::cosine;
  s.base_lr = 1.0f;
  s.min_lr = 0.1f;
  s.warmup_steps = 4;
  s.total_steps = 14;
  CHECK(scheduled_lr(s, 0) == Approx(0.25));
  CHECK(scheduled_lr(s, 3) == Approx(1.0));
  CHECK(scheduled_lr(s, 4) == Approx(1.0));
  CHECK(scheduled_lr(s, 9) == Approx(0.55));  // halfway through the cosine
  CHECK(scheduled_lr(s, 14) == Approx(0.1));
  CHECK(scheduled_lr(s, 100) == Approx(0.1));
  s.kind = LrSchedule::constant;
  CHECK(scheduled_lr(s, 1) == Approx(0.5));
  CHECK(scheduled_lr(s, 50) == Approx(1.0));
}
