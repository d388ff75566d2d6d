// Every op's backward on the tape, against central finite differences of an independent FP64
// forward (tests/fp64_reference.h). The engine runs in fp32 on the CPU backend.
#include "engine/ops.h"
#include "models/mlp.h"
#include "tests/fp64_reference.h"
#include "tests/helpers.h"

#include <algorithm>
#include <functional>

using namespace ht;
using namespace ht::test;

namespace {

constexpr double kAtol = 2e-5, kRtol = 2e-4;  // FP32 backward vs FP64 differences (h = 1e-5)

struct LinearSetup {
  std::int64_t rows = 4, in = 7, out = 5;
  std::unique_ptr<Backend> backend = make_cpu_backend();
  ParamArena arena;
  LinearLayer layer;
  std::vector<float> x, w, b, g;  // g: the gradient seeded at the output

  explicit LinearSetup(Activation act) {
    layer.weight = arena.add("w", Shape{out, in});
    layer.bias = arena.add("b", Shape{out});
    layer.act = act;
    arena.allocate(*backend, DType::f32);
    x = random_floats(static_cast<std::size_t>(rows * in), 1, -1, 1);
    w = random_floats(static_cast<std::size_t>(out * in), 2, -0.6f, 0.6f);
    b = random_floats(static_cast<std::size_t>(out), 3, -0.3f, 0.3f);
    g = random_floats(static_cast<std::size_t>(rows * out), 4, -1, 1);
    upload(*backend, arena.master(layer.weight), w);
    upload(*backend, arena.master(layer.bias), b);
  }

  // Σ g ∘ act(x Wᵀ + b) in FP64.
  double objective(const std::vector<double>& xd, const std::vector<double>& wd, const std::vector<double>& bd) const {
    const fp64::Matrix y = fp64::matmul_nt(xd, wd, rows, out, in);
    double total = 0;
    for (std::int64_t i = 0; i < rows * out; ++i) {
      double z = y[static_cast<std::size_t>(i)] + bd[static_cast<std::size_t>(i % out)];
      z = layer.act == Activation::relu ? fp64::relu(z) : layer.act == Activation::gelu ? fp64::gelu(z) : z;
      total += g[static_cast<std::size_t>(i)] * z;
    }
    return total;
  }
};

}  // namespace

TEST_CASE("linear backward (dx, dW, db) matches FP64 finite differences", "[gradcheck]") {
  for (Activation act : {Activation::none, Activation::relu, Activation::gelu}) {
    INFO("activation " << static_cast<int>(act));
    LinearSetup s(act);
    Tape tape;
    OpContext ctx{*s.backend, s.arena, &tape};
    const Var x = make_var(tensor_from(*s.backend, s.x, Shape{s.rows, s.in}, DType::f32), true);
    const Var y = linear(ctx, x, s.layer);
    y->grad = tensor_from(*s.backend, s.g, Shape{s.rows, s.out}, DType::f32);
    tape.backward();

    const auto xd = to_double(s.x), wd = to_double(s.w), bd = to_double(s.b);
    const auto num_dx = fp64::numerical_gradient([&](const std::vector<double>& v) { return s.objective(v, wd, bd); }, xd);
    const auto num_dw = fp64::numerical_gradient([&](const std::vector<double>& v) { return s.objective(xd, v, bd); }, wd);
    const auto num_db = fp64::numerical_gradient([&](const std::vector<double>& v) { return s.objective(xd, wd, v); }, bd);
    CHECK(worst_error(to_double(values_of(*s.backend, x->grad)), num_dx, kAtol, kRtol) <= 1);
    CHECK(worst_error(to_double(values_of(*s.backend, s.arena.grad(s.layer.weight))), num_dw, kAtol, kRtol) <= 1);
    CHECK(worst_error(to_double(values_of(*s.backend, s.arena.grad(s.layer.bias))), num_db, kAtol, kRtol) <= 1);
  }
}

TEST_CASE("parameter gradients accumulate (+=) across backward passes", "[gradcheck]") {
  LinearSetup s(Activation::gelu);
  std::vector<float> once;
  for (int pass = 0; pass < 2; ++pass) {
    Tape tape;
    OpContext ctx{*s.backend, s.arena, &tape};
    const Var x = make_var(tensor_from(*s.backend, s.x, Shape{s.rows, s.in}, DType::f32));
    const Var y = linear(ctx, x, s.layer);
    y->grad = tensor_from(*s.backend, s.g, Shape{s.rows, s.out}, DType::f32);
    tape.backward();
    if (pass == 0) once = values_of(*s.backend, s.arena.grad(s.layer.weight));
  }
  const std::vector<float> twice = values_of(*s.backend, s.arena.grad(s.layer.weight));
  for (std::size_t i = 0; i < once.size(); ++i) CHECK(twice[i] == Approx(2 * once[i]).epsilon(1e-6));
}

TEST_CASE("softmax cross-entropy gradient matches FP64 finite differences", "[gradcheck]") {
  const std::int64_t rows = 5, classes = 7;
  auto backend = make_cpu_backend();
  ParamArena arena;
  arena.allocate(*backend, DType::f32);
  const std::vector<float> z = random_floats(static_cast<std::size_t>(rows * classes), 5, -3, 3);
  const std::vector<std::int32_t> labels = {0, 6, 3, 3, 1};
  const Tensor labels_dev = backend->buffer(labels.size() * 4);
  backend->upload(labels_dev.data(), labels.data(), labels.size() * 4);
  const Tensor loss = backend->zeros(Shape{1}, DType::f32);

  Tape tape;
  OpContext ctx{*backend, arena, &tape};
  const Var logits = make_var(tensor_from(*backend, z, Shape{rows, classes}, DType::f32), true);
  cross_entropy(ctx, logits, {labels_dev.data_as<std::int32_t>(), nullptr, static_cast<float>(rows), loss.data_as<float>(),
                              1.0f / static_cast<float>(rows), nullptr});
  tape.backward();

  const auto zd = to_double(z);
  CHECK(values_of(*backend, loss)[0] == Approx(fp64::cross_entropy(zd, labels, rows, classes)).epsilon(1e-6));
  const auto num = fp64::numerical_gradient([&](const std::vector<double>& v) { return fp64::cross_entropy(v, labels, rows, classes); }, zd);
  CHECK(worst_error(to_double(values_of(*backend, logits->grad)), num, 1e-6, 1e-4) <= 1);
}

TEST_CASE("a whole MLP's parameter gradients match FP64 finite differences", "[gradcheck]") {
  auto backend = make_cpu_backend();
  ParamArena arena;
  struct {
    std::int64_t inputs = 6;
    std::vector<std::int64_t> hidden = {5, 4};
    std::int64_t classes = 3;
  } config;
  Mlp mlp(MlpSpec{config.hidden, Activation::gelu}, config.inputs, config.classes, arena);
  arena.allocate(*backend, DType::f32);
  mlp.initialize(arena, *backend, 9);
  const std::int64_t rows = 3;
  const std::vector<float> x = random_floats(static_cast<std::size_t>(rows * config.inputs), 6, 0, 1);
  const std::vector<std::int32_t> labels = {2, 0, 1};
  const Tensor labels_dev = backend->buffer(12);
  backend->upload(labels_dev.data(), labels.data(), 12);

  Tape tape;
  OpContext ctx{*backend, arena, &tape};
  const Var logits = mlp.forward(ctx, tensor_from(*backend, x, Shape{rows, config.inputs}, DType::f32));
  cross_entropy(ctx, logits, {labels_dev.data_as<std::int32_t>(), nullptr, static_cast<float>(rows), nullptr, 1, nullptr});
  tape.backward();

  // FP64 loss as a function of the whole (padded) master arena.
  const std::vector<float> master = values_of(*backend, arena.master());
  auto loss = [&](const std::vector<double>& p) {
    std::vector<double> h = to_double(x);
    std::int64_t in = config.inputs;
    for (std::size_t layer = 0; layer < 3; ++layer) {
      const ParamInfo& w = arena.params()[2 * layer];
      const ParamInfo& b = arena.params()[2 * layer + 1];
      const std::int64_t out = w.shape[0];
      const std::vector<double> wd(p.begin() + w.offset, p.begin() + w.offset + out * in);
      fp64::Matrix y = fp64::matmul_nt(h, wd, rows, out, in);
      for (std::int64_t i = 0; i < rows * out; ++i) {
        y[static_cast<std::size_t>(i)] += p[static_cast<std::size_t>(b.offset + i % out)];
        if (layer < 2) y[static_cast<std::size_t>(i)] = fp64::gelu(y[static_cast<std::size_t>(i)]);
      }
      h = y;
      in = out;
    }
    return fp64::cross_entropy(h, labels, rows, config.classes);
  };
  const auto num = fp64::numerical_gradient(loss, to_double(master));
  CHECK(worst_error(to_double(values_of(*backend, arena.grads())), num, kAtol, kRtol) <= 1);
}

TEST_CASE("fp16 linear rounds where the policy says: pre = round(acc + b), out = round(act(pre))", "[gradcheck][precision]") {
  LinearSetup s(Activation::gelu);
  // Re-allocate the same layer with an fp16 working copy.
  ParamArena half_arena;
  LinearLayer layer{half_arena.add("w", Shape{s.out, s.in}), half_arena.add("b", Shape{s.out}), Activation::gelu};
  half_arena.allocate(*s.backend, DType::f16);
  upload(*s.backend, half_arena.master(layer.weight), s.w);
  upload(*s.backend, half_arena.master(layer.bias), s.b);
  half_arena.refresh_working_copy(*s.backend);

  OpContext ctx{*s.backend, half_arena, nullptr};
  const Var x = make_var(tensor_from(*s.backend, s.x, Shape{s.rows, s.in}, DType::f16));
  const Var y = linear(ctx, x, layer);
  REQUIRE(y->value.dtype() == DType::f16);
  const std::vector<float> got = values_of(*s.backend, y->value);
  const std::vector<float> x16 = values_of(*s.backend, x->value);
  const std::vector<float> w16 = values_of(*s.backend, half_arena.working(layer.weight));
  const std::vector<float> b16 = values_of(*s.backend, half_arena.working(layer.bias));
  const fp64::Matrix acc = fp64::matmul_nt(to_double(x16), to_double(w16), s.rows, s.out, s.in);
  for (std::int64_t i = 0; i < s.rows * s.out; ++i) {
    const float pre = round_to(DType::f16, static_cast<float>(acc[static_cast<std::size_t>(i)]) + b16[static_cast<std::size_t>(i % s.out)]);
    const float expected = round_to(DType::f16, static_cast<float>(fp64::gelu(pre)));
    // One fp16 ulp of slack: the FP32 accumulation order may tip a value across a rounding boundary.
    CHECK(std::fabs(got[static_cast<std::size_t>(i)] - expected) <= std::ldexp(std::fabs(expected), -10) + 0x1p-24f);
  }
}

// ---- A gradient check for any op -----------------------------------------------------------
namespace {

// An op's input: an activation (a Var that gets a gradient) or a parameter (in an FP32 arena).
struct OpInput {
  Shape shape;
  bool parameter = false;
  float lo = -1, hi = 1;
};
using Build = std::function<Var(OpContext&, const std::vector<Var>& activations, const std::vector<int>& params)>;
using Reference = std::function<std::vector<double>(const std::vector<std::vector<double>>& inputs)>;

// Runs `build` in fp32 on the CPU backend, seeds its output gradient with random g, and checks
// every input's gradient - activations from the tape, parameters from the arena - against FP64
// central differences of Σ g ∘ reference(inputs). One call per op (or composition of ops).
void gradcheck_op(const std::vector<OpInput>& inputs, const Build& build, const Reference& reference, double atol = kAtol,
                  double rtol = kRtol) {
  auto backend = make_cpu_backend();
  ParamArena arena;
  std::vector<std::vector<float>> values;
  std::vector<int> params;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    values.push_back(random_floats(static_cast<std::size_t>(inputs[i].shape.numel()), 100 + i, inputs[i].lo, inputs[i].hi));
    if (inputs[i].parameter) params.push_back(arena.add(fmt::format("p{}", i), inputs[i].shape));
  }
  arena.allocate(*backend, DType::f32);
  std::vector<Var> activations;
  for (std::size_t i = 0, p = 0; i < inputs.size(); ++i) {
    if (inputs[i].parameter) upload(*backend, arena.master(params[p++]), values[i]);
    else activations.push_back(make_var(tensor_from(*backend, values[i], inputs[i].shape, DType::f32), true));
  }
  Tape tape;
  OpContext ctx{*backend, arena, &tape};
  const Var y = build(ctx, activations, params);
  const std::vector<float> g = random_floats(static_cast<std::size_t>(y->value.numel()), 99);
  y->grad = tensor_from(*backend, g, y->value.shape(), DType::f32);
  tape.backward();

  std::vector<std::vector<double>> x64;
  for (const auto& v : values) x64.push_back(to_double(v));
  for (std::size_t i = 0, a = 0, p = 0; i < inputs.size(); ++i) {
    INFO("input " << i << (inputs[i].parameter ? " (a parameter)" : " (an activation)"));
    const auto objective = [&](const std::vector<double>& xi) {
      std::vector<std::vector<double>> all = x64;
      all[i] = xi;
      const std::vector<double> out = reference(all);
      double total = 0;
      for (std::size_t k = 0; k < out.size(); ++k) total += g[k] * out[k];
      return total;
    };
    const std::vector<double> numerical = fp64::numerical_gradient(objective, x64[i]);
    std::vector<float> analytic;
    if (inputs[i].parameter) {
      analytic = values_of(*backend, arena.grad(params[p++]));
    } else {
      const Var& v = activations[a++];
      analytic = v->grad.defined() ? values_of(*backend, v->grad) : std::vector<float>(values[i].size(), 0.0f);
    }
    CHECK(worst_error(to_double(analytic), numerical, atol, rtol) <= 1);
  }
}

}  // namespace

TEST_CASE("gradcheck: residual_add (an FP32 stream plus a branch)", "[gradcheck]") {
  gradcheck_op({{Shape{3, 4}}, {Shape{3, 4}}},
               [](OpContext& ctx, const std::vector<Var>& a, const std::vector<int>&) { return residual_add(ctx, a[0], a[1]); },
               [](const auto& in) {
                 std::vector<double> out(in[0].size());
                 for (std::size_t i = 0; i < out.size(); ++i) out[i] = in[0][i] + in[1][i];
                 return out;
               });
}

TEST_CASE("gradcheck: layer_norm (x, weight, bias)", "[gradcheck]") {
  gradcheck_op({{Shape{4, 6}, false, -2, 3}, {Shape{6}, true, 0.5f, 1.5f}, {Shape{6}, true}},
               [](OpContext& ctx, const std::vector<Var>& a, const std::vector<int>& p) {
                 return layer_norm(ctx, a[0], p[0], p[1], DType::f32);
               },
               [](const auto& in) { return fp64::layernorm(in[0], in[1], in[2], 4, 6); });
}

TEST_CASE("gradcheck: embedding (token and position tables)", "[gradcheck]") {
  const std::vector<std::int32_t> tokens = {3, 1, 3, 0, 4, 3, 3, 2};  // B = 2, T = 4; repeats
  gradcheck_op({{Shape{5, 3}, true}, {Shape{4, 3}, true}},
               [&](OpContext& ctx, const std::vector<Var>&, const std::vector<int>& p) {
                 Tensor t = ctx.backend.empty(Shape{2, 4}, DType::i32);
                 ctx.backend.upload(t.data(), tokens.data(), tokens.size() * 4);
                 return embedding(ctx, t, p[0], p[1]);
               },
               [&](const auto& in) { return fp64::embedding(tokens, in[0], in[1], 4, 3); });
}

TEST_CASE("gradcheck: causal_attention (fp32), rows spanning batches and heads", "[gradcheck]") {
  gradcheck_op({{Shape{2 * 5, 3 * 6}, false, -1.5f, 1.5f}},  // B = 2, T = 5, H = 2, D = 3
               [](OpContext& ctx, const std::vector<Var>& a, const std::vector<int>&) { return causal_attention(ctx, a[0], 2, 2); },
               [](const auto& in) { return fp64::attention(in[0], 2, 5, 2, 3); });
}

TEST_CASE("gradcheck: causal_attention with dropout of its probabilities, a fixed mask - the backward regenerates the forward's",
          "[gradcheck]") {
  // The mask the forward drew is read back through the kernel's own output: with v = e_j (value
  // rows of the identity), o_i = r·Σ_j P_ij·z_ij·e_j, so z_ij = (o_i)_j ≠ 0.
  const DeviceStepState step_zero{};
  const DropoutContext drop{.p = 0.4f, .seed = 4321, .micro = 2, .state = &step_zero};
  constexpr std::int64_t B = 2, T = 5, H = 2, D = 5, C = H * D;
  constexpr std::uint32_t site = 9;
  std::vector<double> keep(static_cast<std::size_t>(B * H * T * T), 0.0);  // (b·H + h, i, j): 0 or 1/(1 - p)
  {
    auto backend = make_cpu_backend();
    ParamArena arena;
    arena.allocate(*backend, DType::f32);
    OpContext probe{*backend, arena, nullptr, &drop};
    std::vector<float> qkv(static_cast<std::size_t>(B * T * 3 * C), 0.0f);  // q = k = 0: uniform probabilities
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t t = 0; t < T; ++t)
        for (std::int64_t h = 0; h < H; ++h) qkv[static_cast<std::size_t>((b * T + t) * 3 * C + 2 * C + h * D + t)] = 1.0f;
    const Var in = make_var(tensor_from(*backend, qkv, Shape{B * T, 3 * C}, DType::f32), false);
    const std::vector<float> o = values_of(*backend, causal_attention(probe, in, B, H, site)->value);
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t h = 0; h < H; ++h)
        for (std::int64_t i = 0; i < T; ++i)
          for (std::int64_t j = 0; j <= i; ++j)
            if (o[static_cast<std::size_t>((b * T + i) * C + h * D + j)] != 0.0f)
              keep[static_cast<std::size_t>(((b * H + h) * T + i) * T + j)] = 1.0 / (1.0 - static_cast<double>(drop.p));
  }
  gradcheck_op({{Shape{B * T, 3 * C}, false, -1.5f, 1.5f}},
               [&](OpContext& ctx, const std::vector<Var>& a, const std::vector<int>&) {
                 OpContext with{ctx.backend, ctx.params, ctx.tape, &drop};
                 return causal_attention(with, a[0], B, H, site);
               },
               [&](const auto& in) {
                 return fp64::attention(in[0], B, T, H, D, [&](std::int64_t bh, std::int64_t i, std::int64_t j) {
                   return keep[static_cast<std::size_t>((bh * T + i) * T + j)];
                 });
               });
  std::int64_t causal = 0, dropped = 0;
  for (std::int64_t bh = 0; bh < B * H; ++bh)
    for (std::int64_t i = 0; i < T; ++i)
      for (std::int64_t j = 0; j <= i; ++j) ++causal, dropped += keep[static_cast<std::size_t>((bh * T + i) * T + j)] == 0.0;
  CHECK(dropped > 0);
  CHECK(dropped < causal);
}

TEST_CASE("gradcheck: a value read by two ops sums their gradients (x + linear(layer_norm(x)))", "[gradcheck]") {
  gradcheck_op({{Shape{3, 4}, false, -2, 2}, {Shape{4}, true, 0.5f, 1.5f}, {Shape{4}, true}, {Shape{4, 4}, true}, {Shape{4}, true}},
               [](OpContext& ctx, const std::vector<Var>& a, const std::vector<int>& p) {
                 const Var h = layer_norm(ctx, a[0], p[0], p[1], DType::f32);
                 return residual_add(ctx, a[0], linear(ctx, h, {p[2], p[3], Activation::gelu}));
               },
               [](const auto& in) {
                 const auto h = fp64::layernorm(in[0], in[1], in[2], 3, 4);
                 auto y = fp64::matmul_nt(h, in[3], 3, 4, 4);
                 for (std::size_t i = 0; i < y.size(); ++i) y[i] = in[0][i] + fp64::gelu(y[i] + in[4][i % 4]);
                 return y;
               });
}

TEST_CASE("gradcheck: a tied weight (embedding and output layer) gets both gradients - its hook fires once, after both", "[gradcheck]") {
  const std::vector<std::int32_t> tokens = {1, 0, 2, 1};  // B = 1, T = 4, V = 3, C = 5
  auto build = [&](OpContext& ctx, const std::vector<Var>&, const std::vector<int>& p) {
    Tensor t = ctx.backend.empty(Shape{1, 4}, DType::i32);
    ctx.backend.upload(t.data(), tokens.data(), tokens.size() * 4);
    const Var x = embedding(ctx, t, p[0], p[1]);
    return linear(ctx, x, {p[0], -1, Activation::none});  // logits = x · wteᵀ, no bias
  };
  gradcheck_op({{Shape{3, 5}, true}, {Shape{4, 5}, true}}, build, [&](const auto& in) {
    return fp64::matmul_nt(fp64::embedding(tokens, in[0], in[1], 4, 5), in[0], 4, 3, 5);
  });
  // The hook: once per parameter; for the tied table, only after its second use has added its part.
  auto backend = make_cpu_backend();
  ParamArena arena;
  const std::vector<int> p = {arena.add("wte", Shape{3, 5}), arena.add("wpe", Shape{4, 5})};
  arena.allocate(*backend, DType::f32);
  upload(*backend, arena.master(p[0]), random_floats(15, 1));
  upload(*backend, arena.master(p[1]), random_floats(20, 2));
  Tape tape;
  std::vector<int> fired;
  std::vector<float> wte_grad_when_ready;
  tape.set_grad_ready_hook([&](int i) {
    fired.push_back(i);
    if (i == p[0]) wte_grad_when_ready = values_of(*backend, arena.grad(p[0]));
  });
  OpContext ctx{*backend, arena, &tape};
  const Var y = build(ctx, {}, p);
  y->grad = tensor_from(*backend, random_floats(12, 3), y->value.shape(), DType::f32);
  tape.backward();
  std::sort(fired.begin(), fired.end());
  CHECK(fired == std::vector<int>{p[0], p[1]});
  CHECK(wte_grad_when_ready == values_of(*backend, arena.grad(p[0])));  // final when announced
}

TEST_CASE("gradcheck: dropout with a fixed mask - the backward regenerates the forward's", "[gradcheck]") {
  // y = dropout(layer_norm(x; w, b)): the mask the forward drew (read back by dropping out ones
  // under the same key) is the FP64 reference's, and the backward must apply exactly it.
  std::vector<double> keep;         // 0 or 1/(1 - p), element by element
  const DeviceStepState step_zero{};  // the step the mask is keyed by (the CPU backend reads host memory)
  const DropoutContext drop{.p = 0.3f, .seed = 1234, .micro = 5, .state = &step_zero};
  gradcheck_op({{Shape{4, 6}, false, -2, 2}, {Shape{6}, true, 0.5f, 1.5f}, {Shape{6}, true}},
               [&](OpContext& ctx, const std::vector<Var>& a, const std::vector<int>& p) {
                 OpContext with{ctx.backend, ctx.params, ctx.tape, &drop};
                 const Var y = dropout(with, layer_norm(with, a[0], p[0], p[1], DType::f32), /*site=*/2);
                 OpContext probe{ctx.backend, ctx.params, nullptr, &drop};
                 const Var ones = make_var(tensor_from(ctx.backend, std::vector<float>(24, 1.0f), Shape{4, 6}, DType::f32), false);
                 keep = to_double(values_of(ctx.backend, dropout(probe, ones, 2)->value));
                 return y;
               },
               [&](const auto& in) {
                 auto y = fp64::layernorm(in[0], in[1], in[2], 4, 6);
                 for (std::size_t i = 0; i < y.size(); ++i) y[i] *= keep[i];
                 return y;
               });
  const auto dropped = std::count(keep.begin(), keep.end(), 0.0);
  CHECK(dropped > 0);
  CHECK(dropped < static_cast<long>(keep.size()));
}
