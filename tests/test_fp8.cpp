// FP8's per-tensor scaling (kernels/fp8_scaling.h): Transformer Engine's formula, its guards, the
// delayed recipe's amax history, and what a scaled cast keeps of a tensor.
#include "kernels/fp8_scaling.h"

#include <catch2/catch.hpp>

#include <cmath>
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
