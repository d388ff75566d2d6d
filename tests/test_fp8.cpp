// FP8's per-tensor scaling (kernels/fp8_scaling.h): Transformer Engine's formula, its guards, the
// delayed recipe's amax history, and what a scaled cast keeps of a tensor; and the cast kernel
// (kernels/fp8_cast.h) on the emulator against its reference.
#include "engine/backend.h"
#include "kernels/fp8_cast.h"
#include "kernels/fp8_scaling.h"

#include <catch2/catch.hpp>

#include <cmath>
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
        const Tensor amax = b.empty(Shape{1}, DType::f32);
        b.upload(d_x.data(), x.data(), x.size() * 2);
        b.upload(d_scale.data(), &scale, 4);
        b.upload(amax.data(), &previous_amax, 4);
        b.fp8_cast({.x = d_x.data(), .rows = rows, .cols = cols, .scale = d_scale.data_as<float>(), .kind = kind,
                    .out = out.data_as<std::uint8_t>(), .out_t = out_t.data_as<std::uint8_t>(), .amax = amax.data_as<float>()});
        return std::tuple{download<std::uint8_t>(b, out), download<std::uint8_t>(b, out_t), download<float>(b, amax)[0]};
      };
      const auto [want, want_t, want_amax] = run(*cpu);
      const auto [got, got_t, got_amax] = run(*gpu);
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
