// The GPT's kernels - embedding, LayerNorm, causal attention - forward and backward: the CPU
// reference against independent FP64 math, and every GPU executor (the emulator; a GPU when
// present) against the reference, at sizes that hit the edges (one row, rows that are not a
// multiple of a tile, several sort chunks, head sizes that are not a multiple of 8 or 16).
#include "kernels/attention.h"
#include "kernels/dropout.h"
#include "kernels/embedding.h"
#include "kernels/layernorm.h"
#include "tests/device_helpers.h"
#include "tests/fp64_reference.h"
#include "tests/helpers.h"

#include <algorithm>

using namespace ht;
using namespace ht::test;

namespace {

const DType kTypes[] = {DType::f32, DType::f16, DType::bf16};

int mantissa_bits(DType t) { return t == DType::f16 ? 10 : (t == DType::bf16 ? 7 : 23); }

// max |a - b| <= atol + rtol·|b| everywhere (worst_error <= 1); the report names the worst.
void check_within(const std::vector<float>& got, const std::vector<double>& want, double atol, double rtol, const char* what) {
  REQUIRE(got.size() == want.size());
  std::size_t worst_at = 0;
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double e = std::isfinite(got[i]) ? std::fabs(got[i] - want[i]) / (atol + rtol * std::fabs(want[i])) : INFINITY;
    if (e > worst) worst = e, worst_at = i;
  }
  INFO(what << ": worst at " << worst_at << ": got " << got[worst_at] << ", want " << want[worst_at] << " (atol " << atol
            << ", rtol " << rtol << ")");
  CHECK(worst <= 1.0);
}

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

}  // namespace

TEST_CASE("kernel embedding: forward and backward bit-exact against the reference, which matches FP64", "[kernels][gpt]") {
  struct Size { std::int64_t B, T, C, V; };
  for (Size s : {Size{3, 5, 7, 11}, Size{2, 700, 300, 3000}}) {  // the second: two sort chunks, three scan chunks
    INFO("B " << s.B << " T " << s.T << " C " << s.C << " V " << s.V);
    const std::int64_t rows = s.B * s.T;
    std::vector<std::int32_t> tokens(static_cast<std::size_t>(rows));
    Rng rng(7);
    for (auto& t : tokens) t = static_cast<std::int32_t>(rng.below(s.V < 20 ? s.V : 40) * (s.V < 20 ? 1 : s.V / 40));  // repeats
    const std::vector<float> wte = random_floats(static_cast<std::size_t>(s.V * s.C), 1), wpe = random_floats(static_cast<std::size_t>(s.T * s.C), 2);
    const std::vector<float> dout = random_floats(static_cast<std::size_t>(rows * s.C), 3);
    const std::vector<float> dwte0 = random_floats(wte.size(), 4), dwpe0 = random_floats(wpe.size(), 5);

    std::vector<float> out(static_cast<std::size_t>(rows * s.C)), dwte = dwte0, dwpe = dwpe0;
    std::vector<std::int32_t> scratch(static_cast<std::size_t>(embedding_scratch_ints(rows, s.V)));
    embedding_ref({tokens.data(), rows, s.T, s.C, wte.data(), wpe.data(), out.data(), s.V});
    embedding_backward_ref({tokens.data(), rows, s.T, s.C, s.V, dout.data(), dwte.data(), dwpe.data(), scratch.data()});
    // The reference against FP64: the forward exactly, the sums to FP32 accumulation's bound.
    check_within(out, fp64::embedding(tokens, to_double(wte), to_double(wpe), s.T, s.C), 0, 1e-7, "forward vs FP64");
    std::vector<double> want_dwte = to_double(dwte0), want_dwpe = to_double(dwpe0);
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < s.C; ++c) {
        want_dwte[static_cast<std::size_t>(tokens[static_cast<std::size_t>(r)] * s.C + c)] += dout[static_cast<std::size_t>(r * s.C + c)];
        want_dwpe[static_cast<std::size_t>((r % s.T) * s.C + c)] += dout[static_cast<std::size_t>(r * s.C + c)];
      }
    check_within(dwte, want_dwte, 1e-5, 1e-5, "dwte vs FP64");
    check_within(dwpe, want_dwpe, 1e-5, 1e-5, "dwpe vs FP64");

    for (auto& gpu : gpu_backends()) {
      INFO(device_name(gpu->device()));
      const auto d_tokens = put(*gpu, tokens);
      const auto d_wte = put(*gpu, wte), d_wpe = put(*gpu, wpe), d_dout = put(*gpu, dout);
      auto d_out = put_zeros<float>(*gpu, out.size());
      auto d_dwte = put(*gpu, dwte0), d_dwpe = put(*gpu, dwpe0);
      auto d_scratch = put_zeros<std::int32_t>(*gpu, scratch.size());
      gpu->embedding({d_tokens.get(), rows, s.T, s.C, d_wte.get(), d_wpe.get(), d_out.get(), s.V});
      gpu->embedding_backward({d_tokens.get(), rows, s.T, s.C, s.V, d_dout.get(), d_dwte.get(), d_dwpe.get(), d_scratch.get()});
      CHECK(get(*gpu, d_out) == out);
      // The same order of additions: the same bits (a GPU's FP32 additions round as the CPU's).
      CHECK(get(*gpu, d_dwte) == dwte);
      CHECK(get(*gpu, d_dwpe) == dwpe);
    }
  }
}

TEST_CASE("kernel embedding: an id outside the vocabulary is never an index - a NaN row, no gradient, refused by the reference",
          "[kernels][gpt]") {
  const std::int64_t B = 2, T = 3, C = 5, V = 7, rows = B * T;
  const std::vector<std::int32_t> tokens = {1, -1, 3, 7, 65535, 1};  // rows 1, 3 and 4 are bad
  const std::vector<std::int32_t> good = {1, 0, 3, 0, 0, 1};        // the same rows, the bad ones set to 0
  const std::vector<float> wte = random_floats(static_cast<std::size_t>(V * C), 1), wpe = random_floats(static_cast<std::size_t>(T * C), 2);
  const std::vector<float> dout = random_floats(static_cast<std::size_t>(rows * C), 3);
  std::vector<float> out(static_cast<std::size_t>(rows * C));
  std::vector<std::int32_t> scratch(static_cast<std::size_t>(embedding_scratch_ints(rows, V)));
  CHECK_THROWS_WITH(embedding_ref({tokens.data(), rows, T, C, wte.data(), wpe.data(), out.data(), V}),
                    Catch::Contains("the token of row 1 is -1, outside the 7 ids"));
  // What the kernels must give: the good rows' embeddings, and the gradient of the good rows alone.
  embedding_ref({good.data(), rows, T, C, wte.data(), wpe.data(), out.data(), V});
  std::vector<float> masked = dout;
  for (std::int64_t r : {1, 3, 4})
    for (std::int64_t c = 0; c < C; ++c) masked[static_cast<std::size_t>(r * C + c)] = 0;
  std::vector<float> want_dwte(wte.size()), dwpe(wpe.size());
  embedding_backward_ref({good.data(), rows, T, C, V, masked.data(), want_dwte.data(), dwpe.data(), scratch.data()});
  for (auto& gpu : gpu_backends()) {
    INFO(device_name(gpu->device()));
    const auto d_tokens = put(*gpu, tokens);
    const auto d_wte = put(*gpu, wte), d_wpe = put(*gpu, wpe), d_dout = put(*gpu, dout);
    auto d_out = put_zeros<float>(*gpu, out.size());
    auto d_dwte = put_zeros<float>(*gpu, wte.size()), d_dwpe = put_zeros<float>(*gpu, wpe.size());
    auto d_scratch = put_zeros<std::int32_t>(*gpu, scratch.size());
    gpu->embedding({d_tokens.get(), rows, T, C, d_wte.get(), d_wpe.get(), d_out.get(), V});
    gpu->embedding_backward({d_tokens.get(), rows, T, C, V, d_dout.get(), d_dwte.get(), d_dwpe.get(), d_scratch.get()});
    const std::vector<float> got = get(*gpu, d_out), dwte = get(*gpu, d_dwte);
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < C; ++c) {
        const std::size_t i = static_cast<std::size_t>(r * C + c);
        if (r == 1 || r == 3 || r == 4) CHECK(std::isnan(got[i]));
        else CHECK(got[i] == out[i]);
      }
    CHECK(dwte == want_dwte);  // the bad rows add nothing anywhere (token 0, which stood in for them, took zeros)
  }
}

TEST_CASE("kernel layernorm: forward and backward, every dtype, against FP64 and the reference", "[kernels][gpt]") {
  for (DType t : kTypes)
    // 1300 x 70 takes 2 row slices for dweight and dbias, the second shorter (kernels/column_sums.cuh)
    for (auto [rows, C] : {std::pair<std::int64_t, std::int64_t>{1, 1}, {5, 33}, {67, 256}, {3, 1000}, {1300, 70}})
      for (float beta : {0.0f, 1.0f}) {
        INFO(dtype_name(t) << " rows " << rows << " C " << C << " beta " << beta);
        const auto n = static_cast<std::size_t>(rows * C);
        std::vector<float> x = random_floats(n, 11, -2, 3);
        const std::vector<float> w = random_floats(static_cast<std::size_t>(C), 12, 0.5f, 1.5f),
                                 b = random_floats(static_cast<std::size_t>(C), 13, -0.5f, 0.5f);
        const auto dout = bytes_of(t, random_floats(n, 14));
        const std::vector<float> dx0 = random_floats(n, 15), dw0 = random_floats(static_cast<std::size_t>(C), 16),
                                 db0 = random_floats(static_cast<std::size_t>(C), 17);
        std::vector<std::uint8_t> out(n * dtype_size(t));
        std::vector<float> mean(static_cast<std::size_t>(rows)), rstd(static_cast<std::size_t>(rows)), dx = dx0, dw = dw0, db = db0;
        layernorm_ref({x.data(), w.data(), b.data(), out.data(), t, mean.data(), rstd.data(), rows, C});
        layernorm_backward_ref({x.data(), w.data(), mean.data(), rstd.data(), dout.data(), t, dx.data(), beta, dw.data(), db.data(), rows, C});
        // Forward against FP64: within an ulp of the output dtype (and FP32 statistics).
        const double eps = std::ldexp(1.0, -mantissa_bits(t));
        check_within(widen(t, out), fp64::layernorm(to_double(x), to_double(w), to_double(b), rows, C), 1e-5 + 2 * eps, 2 * eps,
                     "forward vs FP64");
        for (auto& gpu : gpu_backends()) {
          INFO(device_name(gpu->device()));
          const auto d_x = put(*gpu, x), d_w = put(*gpu, w), d_b = put(*gpu, b);
          const auto d_dout = put(*gpu, dout);
          auto d_out = put_zeros<std::uint8_t>(*gpu, out.size());
          auto d_mean = put_zeros<float>(*gpu, mean.size()), d_rstd = put_zeros<float>(*gpu, rstd.size());
          auto d_dx = put(*gpu, dx0), d_dw = put(*gpu, dw0), d_db = put(*gpu, db0);
          gpu->layernorm({d_x.get(), d_w.get(), d_b.get(), d_out.get(), t, d_mean.get(), d_rstd.get(), rows, C});
          gpu->layernorm_backward({d_x.get(), d_w.get(), d_mean.get(), d_rstd.get(), d_dout.get(), t, d_dx.get(), beta, d_dw.get(),
                                   d_db.get(), rows, C});
          // The kernel sums in another order: the statistics agree to FP32 rounding, the output
          // to an ulp of its dtype.
          check_within(widen(t, get(*gpu, d_out)), to_double(widen(t, out)), 1e-5, 2 * eps, "forward vs reference");
          check_within(get(*gpu, d_mean), to_double(mean), 1e-5, 1e-5, "mean");
          check_within(get(*gpu, d_rstd), to_double(rstd), 0, 1e-5, "rstd");
          check_within(get(*gpu, d_dx), to_double(dx), 1e-4, 1e-4, "dx");
          check_within(get(*gpu, d_dw), to_double(dw), 1e-4 * std::sqrt(static_cast<double>(rows)), 1e-5, "dweight");
          check_within(get(*gpu, d_db), to_double(db), 1e-4 * std::sqrt(static_cast<double>(rows)), 1e-5, "dbias");
        }
      }
}

TEST_CASE("kernel attention: forward and backward, every dtype, head sizes 8 to 128, ragged T, dropout, against FP64", "[kernels][gpt]") {
  struct Size { std::int64_t B, T, H, D; float dropout = 0; };
  DeviceStepState steps;  // the mask's step: steps done + 1 = 8
  steps.steps_taken = 6;
  steps.steps_skipped = 1;
  for (DType t : kTypes)
    for (Size s : {Size{2, 1, 1, 16}, Size{1, 17, 2, 32}, Size{2, 65, 2, 40}, Size{1, 130, 1, 64}, Size{1, 64, 1, 128}, Size{1, 130, 1, 128},
                   Size{1, 33, 3, 8}, Size{2, 65, 2, 40, 0.3f}, Size{1, 130, 1, 128, 0.2f}, Size{1, 33, 3, 8, 0.5f}}) {
      INFO(dtype_name(t) << " B " << s.B << " T " << s.T << " H " << s.H << " D " << s.D << " dropout " << s.dropout);
      const std::int64_t C = s.H * s.D, rows = s.B * s.T;
      const float scale = 1.0f / std::sqrt(static_cast<float>(s.D));
      // Values up to 2: scores of a few units, so softmax is peaked on some rows and flat on others.
      const auto qkv = bytes_of(t, random_floats(static_cast<std::size_t>(rows * 3 * C), 21, -2, 2));
      const auto dout = bytes_of(t, random_floats(static_cast<std::size_t>(rows * C), 22));
      const std::vector<double> qkv64 = to_double(widen(t, qkv)), dout64 = to_double(widen(t, dout));
      // Dropout: the header's mask, drawn here from attention_keeps as every executor draws it.
      const DropoutKey key{.seed = 99, .site = 7, .micro = 3};
      std::int64_t dropped = 0;
      const fp64::AttentionKeep keep = [&](std::int64_t bh, std::int64_t i, std::int64_t j) {
        const bool kept = attention_keeps({s.dropout, key, nullptr}, 8, bh, s.T, i, j);
        dropped += kept ? 0 : 1;
        return kept ? 1.0 / (1.0 - static_cast<double>(static_cast<float>(s.dropout))) : 0.0;
      };
      const std::vector<double> want_out = fp64::attention(qkv64, s.B, s.T, s.H, s.D, s.dropout > 0 ? keep : fp64::AttentionKeep{});
      const std::vector<double> want_dqkv =
          fp64::attention_backward(qkv64, dout64, s.B, s.T, s.H, s.D, s.dropout > 0 ? keep : fp64::AttentionKeep{});
      if (s.dropout > 0) CHECK(dropped > 0);
      const AttentionDropout dropout{.p = s.dropout, .key = key};
      // The reference, and each executor, against FP64: FP32 accumulation, and (16-bit types) the
      // roundings of the header (P and dS to the dtype, the outputs).
      const double eps = std::ldexp(1.0, -mantissa_bits(t));
      const double out_atol = 4 * eps * max_abs(want_out) + 1e-6, grad_atol = 8 * eps * max_abs(want_dqkv) + 1e-5;
      auto check = [&](Backend& b) {
        INFO(device_name(b.device()));
        const auto d_qkv = put(b, qkv), d_dout = put(b, dout);
        auto d_out = put_zeros<std::uint8_t>(b, static_cast<std::size_t>(rows * C) * dtype_size(t));
        auto d_lse = put_zeros<float>(b, static_cast<std::size_t>(s.B * s.H * s.T));
        auto d_delta = put_zeros<float>(b, static_cast<std::size_t>(s.B * s.H * s.T));
        auto d_dqkv = put_zeros<std::uint8_t>(b, qkv.size());
        const auto d_steps = put(b, std::vector<DeviceStepState>{steps});
        AttentionDropout drop = dropout;
        drop.state = d_steps.get();
        b.attention({d_qkv.get(), d_out.get(), d_lse.get(), t, s.B, s.T, s.H, s.D, scale, drop});
        b.attention_backward({d_qkv.get(), d_out.get(), d_dout.get(), d_lse.get(), d_delta.get(), d_dqkv.get(), t, s.B, s.T, s.H,
                              s.D, scale, drop});
        const std::vector<float> out = widen(t, get(b, d_out)), dqkv = widen(t, get(b, d_dqkv));
        check_within(out, want_out, out_atol, 2 * eps, "out vs FP64");
        check_within(dqkv, want_dqkv, grad_atol, 4 * eps, "dqkv vs FP64");
        return std::tuple{out, get(b, d_lse), dqkv};
      };
      auto cpu = make_cpu_backend();
      const auto [ref_out, ref_lse, ref_dqkv] = check(*cpu);
      for (auto& gpu : gpu_backends()) {
        const auto [out, lse, dqkv] = check(*gpu);
        check_within(lse, to_double(ref_lse), 1e-5, 1e-5, "lse vs reference");
        if (t == DType::f32) {  // no roundings between: the executors agree to FP32 accumulation order
          check_within(out, to_double(ref_out), 1e-5, 1e-5, "out vs reference");
          check_within(dqkv, to_double(ref_dqkv), 1e-4, 1e-4, "dqkv vs reference");
        }
      }
    }
}

TEST_CASE("kernel dropout: the same Philox mask on every executor, 1-p of the elements kept and scaled, a new mask per step, site and micro-batch", "[kernels][gpt]") {
  constexpr std::int64_t n = 100003;
  constexpr float p = 0.2f;
  const std::vector<float> x = random_floats(static_cast<std::size_t>(n), 31, 0.5f, 1.5f);  // never 0: zeros are the dropped
  for (DType t : kTypes) {
    INFO(dtype_name(t));
    const auto in = bytes_of(t, x);
    auto run_ref = [&](DropoutKey key, std::int64_t steps_before, float prob) {
      DeviceStepState s;
      s.steps_taken = steps_before;
      std::vector<std::uint8_t> out(in.size());
      dropout_ref({.in = in.data(), .out = out.data(), .dtype = t, .n = n, .p = prob, .key = key, .state = &s});
      return widen(t, out);
    };
    const DropoutKey key{.seed = 77, .site = 3, .micro = 1};
    const std::vector<float> ref = run_ref(key, 4, p);
    const auto kept = std::count_if(ref.begin(), ref.end(), [](float v) { return v != 0.0f; });
    CHECK(std::fabs(static_cast<double>(kept) / n - (1.0 - p)) < 0.01);
    const std::vector<float> want = widen(t, bytes_of(t, [&] {  // kept elements: x × 1/(1 - p), rounded once
      std::vector<float> w(x.size());
      for (std::size_t i = 0; i < x.size(); ++i) w[i] = widen(t, bytes_of(t, {x[i]}))[0] * (1.0f / (1.0f - p));
      return w;
    }()));
    std::int64_t scaled_right = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) scaled_right += ref[i] == 0.0f || ref[i] == want[i];
    CHECK(scaled_right == n);
    // Another step, site or micro-batch: another mask; p = 0 keeps all of it unchanged.
    CHECK(run_ref(key, 5, p) != ref);
    CHECK(run_ref({.seed = 77, .site = 4, .micro = 1}, 4, p) != ref);
    CHECK(run_ref({.seed = 77, .site = 3, .micro = 2}, 4, p) != ref);
    CHECK(run_ref(key, 4, 0.0f) == widen(t, in));
    for (auto& gpu : gpu_backends()) {
      INFO(device_name(gpu->device()));
      DeviceStepState s;
      s.steps_taken = 4;
      const auto d_state = put(*gpu, std::vector<std::uint8_t>(reinterpret_cast<const std::uint8_t*>(&s),
                                                                reinterpret_cast<const std::uint8_t*>(&s) + sizeof(s)));
      const auto d_in = put(*gpu, in);
      auto d_out = put_zeros<std::uint8_t>(*gpu, in.size());
      gpu->dropout({.in = d_in.get(), .out = d_out.get(), .dtype = t, .n = n, .p = p, .key = key,
                    .state = reinterpret_cast<const DeviceStepState*>(d_state.get())});
      CHECK(widen(t, get(*gpu, d_out)) == ref);  // bit for bit
    }
  }
}
