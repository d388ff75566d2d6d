// FP8's per-tensor scaling (kernels/fp8_scaling.h): Transformer Engine's formula, its guards, the
// delayed recipe's amax history, and what a scaled cast keeps of a tensor; and the cast kernel
// (kernels/fp8_cast.h) on the emulator against its reference.
#include "engine/backend.h"
#include "engine/fp8_state.h"
#include "kernels/fp8_cast.h"
#include "kernels/fp8_gemm.h"
#include "kernels/fp8_scaling.h"
#include "tests/helpers.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

using namespace ht;

TEST_CASE("fp8 scaling: scale = (fp8_max / amax) / 2^margin, and a zero or non-finite amax keeps the previous scale",
          "[fp8]") {
  CHECK(fp8_scale(4.0f, kE4M3Max, 0, 1.0f) == 112.0f);
  CHECK(fp8_scale(4.0f, kE4M3Max, 1, 1.0f) == 56.0f);
  CHECK(fp8_scale(57344.0f, kE5M2Max, 0, 3.0f) == 1.0f);
  CHECK(fp8_scale(0.0f, kE4M3Max, 0, 7.0f) == 7.0f);
  CHECK(fp8_scale(INFINITY, kE4M3Max, 0, 7.0f) == 7.0f);
  CHECK(fp8_scale(NAN, kE4M3Max, 0, 7.0f) == 7.0f);
  CHECK(fp8_scale(1e-45f, kE4M3Max, 0, 7.0f) == 7.0f);  // 448 / 1e-45 overflows fp32
  // The scaled tensor's amax lands on the format's largest value, so nothing saturates.
  for (float amax : {1e-3f, 0.37f, 5.0f, 3000.0f}) {
    const float s = fp8_scale(amax, kE4M3Max, 0, 1.0f);
    CHECK(e4m3_bits_to_f32(fp8_quantize(amax, s, kE4M3)) == kE4M3Max);
    CHECK(e4m3_bits_to_f32(fp8_quantize(-amax, s, kE4M3)) == -kE4M3Max);
  }
}

TEST_CASE("fp8 scaling: the delayed recipe's history is a ring of the last len steps, its amax their largest", "[fp8]") {
  std::vector<float> history(4, 0.0f);
  const float amaxes[] = {1.0f, 8.0f, 2.0f, 3.0f, 4.0f, 5.0f, 0.5f};
  std::vector<float> seen;
  for (std::int64_t step = 0; step < 7; ++step) {
    record_amax(history.data(), 4, step, amaxes[step]);
    seen.push_back(history_amax(history.data(), 4));
  }
  // 8 stays for 4 steps (steps 1..4), then falls out of the window.
  CHECK(seen == std::vector<float>{1, 8, 8, 8, 8, 5, 5});
}

TEST_CASE("fp8 scaling: a scaled E4M3 cast keeps a tensor to within half a unit in the last place of its magnitude", "[fp8]") {
  std::vector<float> x;
  for (int i = -500; i <= 500; ++i) x.push_back(0.01f * static_cast<float>(i) * std::sin(static_cast<float>(i)));
  float amax = 0;
  for (float v : x) amax = std::max(amax, std::fabs(v));
  const float s = fp8_scale(amax, kE4M3Max, 0, 1.0f);
  for (float v : x) {
    const float back = e4m3_bits_to_f32(fp8_quantize(v, s, kE4M3)) / s;
    // E4M3 carries 3 mantissa bits: a normal value rounds to within 2^-4 of itself, relatively;
    // one in E4M3's subnormal range to within half its unit, 2^-10 / s.
    CHECK(std::fabs(back - v) <= std::max(std::fabs(v) / 16.0f, std::ldexp(1.0f, -10) / s) * 1.0001f);
  }
}

TEST_CASE("fp8 cast: the kernel's codes, transposed codes and amax equal the reference's bit for bit (E4M3, E5M2, ragged "
          "tiles, an amax folded into what was there)", "[fp8][kernels]") {
  const std::unique_ptr<Backend> cpu = make_backend(DeviceChoice::cpu);
  const std::unique_ptr<Backend> gpu = make_backend(DeviceChoice::simt);
  for (const auto& [rows, cols] : {std::pair<std::int64_t, std::int64_t>{64, 96}, {37, 70}, {1, 5}}) {
    for (const Fp8Kind kind : {Fp8Kind::e4m3, Fp8Kind::e5m2}) {
      std::vector<std::uint16_t> x(static_cast<std::size_t>(rows * cols));
      for (std::size_t i = 0; i < x.size(); ++i)
        x[i] = f32_to_bf16_bits(std::ldexp(std::sin(static_cast<float>(i) * 0.37f), static_cast<int>(i % 23) - 11));
      x[x.size() / 2] = f32_to_bf16_bits(-3000.0f);  // the amax, and a saturation once scaled
      const float scale = kind == Fp8Kind::e4m3 ? 0.25f : 32.0f, previous_amax = 5.0f;
      auto run = [&](Backend& b) {
        const Tensor d_x = b.empty(Shape{rows, cols}, DType::bf16), d_scale = b.empty(Shape{1}, DType::f32);
        const Tensor out = b.zeros(Shape{rows, cols}, DType::u8), out_t = b.zeros(Shape{cols, rows}, DType::u8);
        const Tensor amax = b.empty(Shape{1}, DType::f32), amax_only = b.zeros(Shape{1}, DType::f32);
        const Tensor saturated = b.empty(Shape{1}, DType::i32);
        const std::int32_t previous_saturated = 2;
        b.upload(d_x.data(), x.data(), x.size() * 2);
        b.upload(d_scale.data(), &scale, 4);
        b.upload(amax.data(), &previous_amax, 4);
        b.upload(saturated.data(), &previous_saturated, 4);
        b.fp8_cast({.x = d_x.data(), .rows = rows, .cols = cols, .scale = d_scale.data_as<float>(), .kind = kind,
                    .out = out.data_as<std::uint8_t>(), .out_t = out_t.data_as<std::uint8_t>(), .amax = amax.data_as<float>(),
                    .saturated = saturated.data_as<std::uint32_t>()});
        // Without out: the amax alone (no scale is read, no saturation counted)
        b.fp8_cast({.x = d_x.data(), .rows = rows, .cols = cols, .kind = kind, .amax = amax_only.data_as<float>(),
                    .saturated = saturated.data_as<std::uint32_t>()});
        return std::tuple{download<std::uint8_t>(b, out), download<std::uint8_t>(b, out_t), download<float>(b, amax)[0],
                          download<std::int32_t>(b, saturated)[0], download<float>(b, amax_only)[0]};
      };
      const auto [want, want_t, want_amax, want_saturated, want_amax_only] = run(*cpu);
      const auto [got, got_t, got_amax, got_saturated, got_amax_only] = run(*gpu);
      std::int32_t beyond = 2;  // the count handed in
      const float midpoint = kind == Fp8Kind::e4m3 ? 464.0f : 61440.0f;  // half a step above the largest
      for (std::uint16_t v : x) beyond += std::fabs(bf16_bits_to_f32(v) * scale) >= midpoint ? 1 : 0;
      CHECK(want_saturated == beyond);
      CHECK(beyond > 2);
      CHECK(got_saturated == want_saturated);
      CHECK(want_amax_only == bf16_bits_to_f32(f32_to_bf16_bits(3000.0f)));
      CHECK(got_amax_only == want_amax_only);
      INFO(rows << "x" << cols << (kind == Fp8Kind::e4m3 ? " E4M3" : " E5M2"));
      CHECK(got == want);
      CHECK(got_t == want_t);
      CHECK(got_amax == want_amax);
      CHECK(want_amax == bf16_bits_to_f32(f32_to_bf16_bits(3000.0f)));  // 3008 in bf16
      CHECK(want[x.size() / 2] == (0x80 | fp8_format(kind).max_code));  // -3008 x 0.25 saturates in E4M3 (x 32 in E5M2)
      CHECK(want_t[static_cast<std::size_t>((x.size() / 2) % static_cast<std::size_t>(cols)) * static_cast<std::size_t>(rows) +
                   (x.size() / 2) / static_cast<std::size_t>(cols)] == want[x.size() / 2]);
    }
  }
}

namespace {

// Codes that spread over a format's range, with zeros, negatives and a NaN-free mix of scales.
std::vector<std::uint8_t> codes(std::int64_t n, Fp8Kind kind, unsigned seed) {
  std::vector<std::uint8_t> c(static_cast<std::size_t>(n));
  std::uint32_t s = seed * 2654435761u + 1;
  for (auto& v : c) {
    s = s * 1664525u + 1013904223u;
    std::uint8_t code = static_cast<std::uint8_t>(s >> 24);
    if ((code & 0x7f) > fp8_format(kind).max_code) code = static_cast<std::uint8_t>(code & 0x87);  // no NaN or infinity
    v = code;
  }
  return c;
}

}  // namespace

TEST_CASE("fp8 gemm: the kernel equals the reference bit for bit, every epilogue, E4M3 and E5M2 operands, ragged tiles",
          "[fp8][kernels]") {
  const std::unique_ptr<Backend> cpu = make_backend(DeviceChoice::cpu);
  const std::unique_ptr<Backend> gpu = make_backend(DeviceChoice::simt);
  struct Case {
    std::int64_t M, N, K;
    Fp8Kind a_kind;
    Epilogue epilogue;
    float beta;
    Activation act;
  };
  const Case cases[] = {{37, 45, 70, Fp8Kind::e4m3, Epilogue::bias_act, 0, Activation::gelu},
                        {64, 32, 96, Fp8Kind::e5m2, Epilogue::store_f32, 1, Activation::none},
                        {33, 40, 31, Fp8Kind::e5m2, Epilogue::cast, 0, Activation::none},
                        {20, 66, 40, Fp8Kind::e5m2, Epilogue::cast_act_grad, 0, Activation::relu},
                        {1, 1, 1, Fp8Kind::e4m3, Epilogue::store_f32, 0, Activation::none}};
  for (const Case& k : cases) {
    const std::vector<std::uint8_t> a = codes(k.M * k.K, k.a_kind, 1), b = codes(k.N * k.K, Fp8Kind::e4m3, 2);
    std::vector<float> c0(static_cast<std::size_t>(k.M * k.N));
    std::vector<std::uint16_t> bias(static_cast<std::size_t>(k.N)), saved(c0.size());
    for (std::size_t i = 0; i < c0.size(); ++i) {
      c0[i] = std::sin(static_cast<float>(i));
      saved[i] = f32_to_bf16_bits(std::cos(static_cast<float>(i)));
    }
    for (std::size_t i = 0; i < bias.size(); ++i) bias[i] = f32_to_bf16_bits(0.1f * static_cast<float>(i) - 1.0f);
    const float inv[2] = {1.0f / 448.0f, 3.0f};
    auto run = [&](Backend& be) {
      const Tensor da = be.empty(Shape{k.M, k.K}, DType::u8), db = be.empty(Shape{k.N, k.K}, DType::u8);
      const Tensor c = be.empty(Shape{k.M, k.N}, DType::f32), out = be.zeros(Shape{k.M, k.N}, DType::bf16);
      const Tensor pre = be.zeros(Shape{k.M, k.N}, DType::bf16), dbias = be.empty(Shape{k.N}, DType::bf16);
      const Tensor dsaved = be.empty(Shape{k.M, k.N}, DType::bf16), dinv = be.empty(Shape{2}, DType::f32);
      be.upload(da.data(), a.data(), a.size());
      be.upload(db.data(), b.data(), b.size());
      be.upload(c.data(), c0.data(), c0.size() * 4);
      be.upload(dbias.data(), bias.data(), bias.size() * 2);
      be.upload(dsaved.data(), saved.data(), saved.size() * 2);
      be.upload(dinv.data(), inv, sizeof(inv));
      be.fp8_gemm({.M = k.M, .N = k.N, .K = k.K, .a = da.data_as<std::uint8_t>(), .b = db.data_as<std::uint8_t>(),
                   .a_kind = k.a_kind, .b_kind = Fp8Kind::e4m3, .a_scale_inv = dinv.data_as<float>(),
                   .b_scale_inv = dinv.data_as<float>() + 1, .epilogue = k.epilogue, .c = c.data_as<float>(), .beta = k.beta,
                   .out = out.data(), .pre = k.act == Activation::gelu ? pre.data() : nullptr, .bias = dbias.data(),
                   .saved = dsaved.data(), .act = k.act});
      return std::tuple{download<float>(be, c), download<std::uint16_t>(be, out), download<std::uint16_t>(be, pre)};
    };
    const auto [want_c, want_out, want_pre] = run(*cpu);
    const auto [got_c, got_out, got_pre] = run(*gpu);
    INFO(k.M << "x" << k.N << "x" << k.K << " epilogue " << static_cast<int>(k.epilogue));
    CHECK(std::memcmp(got_c.data(), want_c.data(), want_c.size() * 4) == 0);
    CHECK(got_out == want_out);
    CHECK(got_pre == want_pre);
    if (k.epilogue == Epilogue::store_f32) {  // the definition, at one element, from the codes themselves
      const std::int64_t m = k.M / 2, n = k.N / 3;
      float acc = 0;
      for (std::int64_t j = 0; j < k.K; ++j)
        acc += fp8_bits_to_f32(a[static_cast<std::size_t>(m * k.K + j)], fp8_format(k.a_kind)) *
               e4m3_bits_to_f32(b[static_cast<std::size_t>(n * k.K + j)]);
      const float v = acc * (inv[0] * inv[1]);
      CHECK(want_c[static_cast<std::size_t>(m * k.N + n)] == (k.beta == 0 ? v : v + c0[static_cast<std::size_t>(m * k.N + n)]));
    }
  }
}

TEST_CASE("fp8 gemm on Hopper: the wgmma GEMM's FP8 form (k32, TMA, the stage ring across tiles) equals the reference bit for "
          "bit", "[.][hopper][gemm]") {
  // On an emulated sm_90 the backend takes the wgmma GEMM for every FP8 product whose K is a
  // multiple of 16 (kernels/gemm_wgmma.cu). K = 272: two 128-element K steps and a 16-element
  // tail; M = 200 and N = 300: partial tiles in both; 9 tiles over the emulator's SMs.
  const std::unique_ptr<Backend> cpu = make_backend(DeviceChoice::cpu);
  const std::unique_ptr<Backend> gpu = make_backend(DeviceChoice::simt);
  REQUIRE(gpu->compute_capability() == 90);
  for (const Fp8Kind a_kind : {Fp8Kind::e4m3, Fp8Kind::e5m2}) {
    for (const Epilogue epilogue : {Epilogue::bias_act, Epilogue::store_f32}) {
      const std::int64_t M = 200, N = 300, K = 272;
      const std::vector<std::uint8_t> a = codes(M * K, a_kind, 3), b = codes(N * K, Fp8Kind::e4m3, 4);
      std::vector<std::uint16_t> bias(static_cast<std::size_t>(N));
      for (std::size_t i = 0; i < bias.size(); ++i) bias[i] = f32_to_bf16_bits(0.01f * static_cast<float>(i));
      std::vector<float> c0(static_cast<std::size_t>(M * N), 0.5f);
      const float inv[2] = {0.125f, 1.0f / 3.0f};
      auto run = [&](Backend& be) {
        const Tensor da = be.empty(Shape{M, K}, DType::u8), db = be.empty(Shape{N, K}, DType::u8);
        const Tensor out = be.zeros(Shape{M, N}, DType::bf16), c = be.empty(Shape{M, N}, DType::f32);
        const Tensor dbias = be.empty(Shape{N}, DType::bf16), dinv = be.empty(Shape{2}, DType::f32);
        be.upload(da.data(), a.data(), a.size());
        be.upload(db.data(), b.data(), b.size());
        be.upload(dbias.data(), bias.data(), bias.size() * 2);
        be.upload(c.data(), c0.data(), c0.size() * 4);
        be.upload(dinv.data(), inv, sizeof(inv));
        be.fp8_gemm({.M = M, .N = N, .K = K, .a = da.data_as<std::uint8_t>(), .b = db.data_as<std::uint8_t>(), .a_kind = a_kind,
                     .b_kind = Fp8Kind::e4m3, .a_scale_inv = dinv.data_as<float>(), .b_scale_inv = dinv.data_as<float>() + 1,
                     .epilogue = epilogue, .c = c.data_as<float>(), .beta = 1.0f, .out = out.data(), .bias = dbias.data(),
                     .act = Activation::relu});
        return std::pair{download<std::uint16_t>(be, out), download<float>(be, c)};
      };
      const auto [want_out, want_c] = run(*cpu);
      const auto [got_out, got_c] = run(*gpu);
      INFO((a_kind == Fp8Kind::e4m3 ? "E4M3" : "E5M2") << " epilogue " << static_cast<int>(epilogue));
      CHECK(got_out == want_out);
      CHECK(std::memcmp(got_c.data(), want_c.data(), want_c.size() * 4) == 0);
    }
  }
}

TEST_CASE("fp8 update: the delayed recipe's scales come from the history, the current recipe's from the tensor's amax, and "
          "end_step rings the amaxes in - the kernel equals the reference", "[fp8][kernels]") {
  const std::unique_ptr<Backend> cpu = make_backend(DeviceChoice::cpu);
  const std::unique_ptr<Backend> gpu = make_backend(DeviceChoice::simt);
  auto run = [](Backend& b) {
    auto get = [&b](const float* p) {
      std::vector<float> v(6);
      b.download(v.data(), p, 24);
      return v;
    };
    Fp8State fp8(b, {.recipe = Fp8Recipe::delayed, .amax_history = 3, .margin = 1}, {0, 2}, 4);  // 2 layers, 6 tensors
    const Fp8Tensors& t = fp8.tensors();
    const Tensor state = b.buffer(sizeof(DeviceStepState));
    std::vector<std::vector<float>> scales;
    const float amaxes[3][6] = {{1, 2, 4, 0, 8, 16}, {0.5f, 64, 2, 0, 1, 1}, {0.25f, 1, 1, 3, 1, 1}};
    for (int step = 0; step < 3; ++step) {
      DeviceStepState s;
      s.steps_taken = step;
      b.upload(state.data(), &s, sizeof(s));
      b.upload(t.amax, amaxes[step], sizeof(amaxes[step]));
      fp8.end_step(state.data_as<DeviceStepState>());
      fp8.begin_step();
      scales.push_back(get(t.scale));
    }
    // the current recipe's update of slot 4 from a current amax of 7
    const float seven = 7;
    b.upload(t.current_amax + 4, &seven, 4);
    b.fp8_update({.tensors = t, .what = Fp8Update::from_current, .margin = 0, .slot = 4});
    scales.push_back(get(t.scale));
    scales.push_back(get(t.scale_inv));
    scales.push_back(get(t.amax));
    return scales;
  };
  const auto want = run(*cpu);
  CHECK(run(*gpu) == want);
  // after step 1 (amaxes 1, 2, 4, 0, 8, 16), margin 1: E4M3 448/amax/2, E5M2 57344/amax/2, the zero amax keeps 1
  CHECK(want[0] == std::vector<float>{224, 112, 57344.0f / 8, 1, 28, 57344.0f / 32});
  // after step 2 the history holds both steps: its max
  CHECK(want[1] == std::vector<float>{224, 3.5f, 57344.0f / 8, 1, 28, 57344.0f / 32});
  // from_current sets slot 4 (E4M3) from 7 with margin 0: 64; its amax joins the step's
  CHECK(want[3][4] == 64.0f);
  CHECK(want[4][4] == 1.0f / 64.0f);
  CHECK(want[5][4] == 7.0f);
}

TEST_CASE("fp8 gemm on a GPU: the tensor cores' FP8 sums (Hopper's, under HALFTAPE_FP8_WGMMA=1) within their accumulation "
          "width of the reference", "[.][fp8-gpu]") {
  // Hopper adds FP8 products in a format narrower than FP32 (about 14 bits: DeepSeek-V3's
  // report), so a GPU is held to 2^-10 of the sum of the products' magnitudes, not to the bit.
  const std::unique_ptr<Backend> cpu = make_backend(DeviceChoice::cpu);
  for (DeviceChoice d : test::gpu_devices()) {
    if (d != DeviceChoice::cuda) continue;
    const std::unique_ptr<Backend> gpu = make_backend(d);
    for (const Fp8Kind a_kind : {Fp8Kind::e4m3, Fp8Kind::e5m2}) {
      const std::int64_t M = 300, N = 260, K = 1040;
      const std::vector<std::uint8_t> a = codes(M * K, a_kind, 5), b = codes(N * K, Fp8Kind::e4m3, 6);
      const float inv[2] = {0.25f, 0.5f};
      auto run = [&](Backend& be) {
        const Tensor da = be.empty(Shape{M, K}, DType::u8), db = be.empty(Shape{N, K}, DType::u8);
        const Tensor c = be.zeros(Shape{M, N}, DType::f32), dinv = be.empty(Shape{2}, DType::f32);
        be.upload(da.data(), a.data(), a.size());
        be.upload(db.data(), b.data(), b.size());
        be.upload(dinv.data(), inv, sizeof(inv));
        be.fp8_gemm({.M = M, .N = N, .K = K, .a = da.data_as<std::uint8_t>(), .b = db.data_as<std::uint8_t>(), .a_kind = a_kind,
                     .b_kind = Fp8Kind::e4m3, .a_scale_inv = dinv.data_as<float>(), .b_scale_inv = dinv.data_as<float>() + 1,
                     .c = c.data_as<float>()});
        return download<float>(be, c);
      };
      const std::vector<float> want = run(*cpu), got = run(*gpu);
      INFO(gpu->description() << (a_kind == Fp8Kind::e4m3 ? " E4M3" : " E5M2"));
      std::int64_t bad = 0;
      for (std::int64_t m = 0; m < M; ++m)
        for (std::int64_t n = 0; n < N; ++n) {
          double magnitude = 0;
          for (std::int64_t k = 0; k < K; ++k)
            magnitude += std::fabs(static_cast<double>(fp8_bits_to_f32(a[static_cast<std::size_t>(m * K + k)], fp8_format(a_kind))) *
                                   e4m3_bits_to_f32(b[static_cast<std::size_t>(n * K + k)]));
          const std::size_t i = static_cast<std::size_t>(m * N + n);
          bad += std::fabs(static_cast<double>(got[i]) - want[i]) > 0x1p-10 * magnitude * inv[0] * inv[1] ? 1 : 0;
        }
      CHECK(bad == 0);
    }
  }
}
