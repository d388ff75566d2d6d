// fp16 / bf16 conversions: every one of the 65,536 bit patterns of each format, every rounding
// boundary between neighbouring values, and random fp32 inputs against an independent
// double-precision reference (and against cuda_fp16.h / cuda_bf16.h when the build has them).
#include "ground/convert.h"
#include "ground/dtype.h"
#include "ground/fp8.h"
#include "engine/rng.h"

#include <catch2/catch.hpp>

#include <bit>
#include <cfenv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#if HALFTAPE_HAVE_SIMT
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#endif

using namespace ht;

namespace {

struct Format {
  int mantissa_bits;  // stored bits
  int min_exponent;   // exponent of the smallest normal
  double max_finite;
  float (*decode)(std::uint16_t);
  std::uint16_t (*encode)(float);
};
const Format kF16{10, -14, 65504.0, f16_bits_to_f32, f32_to_f16_bits};
const Format kBf16{7, -126, 0x1.FEp127, bf16_bits_to_f32, f32_to_bf16_bits};

// The value of a bit pattern from the definition of the format.
double value_of(const Format& f, std::uint16_t bits) {
  const int exponent_bits = 15 - f.mantissa_bits;
  const int bias = (1 << (exponent_bits - 1)) - 1;
  const int sign = bits >> 15;
  const int e = (bits >> f.mantissa_bits) & ((1 << exponent_bits) - 1);
  const int m = bits & ((1 << f.mantissa_bits) - 1);
  double v;
  if (e == (1 << exponent_bits) - 1) v = m ? NAN : INFINITY;
  else if (e == 0) v = std::ldexp(m, 1 - bias - f.mantissa_bits);
  else v = std::ldexp(m + (1 << f.mantissa_bits), e - bias - f.mantissa_bits);
  return sign ? -v : v;
}

// Round-to-nearest-even of x into the format, done in double from the definition.
double reference_round(const Format& f, double x) {
  if (std::isnan(x)) return NAN;
  const double a = std::fabs(x);
  const int e = std::max(std::ilogb(a == 0 ? 1.0 : a), f.min_exponent);
  const double ulp = std::ldexp(1.0, e - f.mantissa_bits);
  const double q = std::nearbyint(a / ulp) * ulp;  // default rounding mode: ties to even
  const double limit = f.max_finite + std::ldexp(1.0, std::ilogb(f.max_finite) - f.mantissa_bits - 1);
  const double r = a >= limit ? INFINITY : q;
  return std::signbit(x) ? -r : r;
}

void check_encode(const Format& f, float x) {
  const std::uint16_t bits = f.encode(x);
  const double expected = reference_round(f, x);
  if (std::isnan(expected)) {
    REQUIRE(bits == canonical_nan16);
    return;
  }
  const double got = value_of(f, bits);
  INFO("x = " << x << " (0x" << std::hex << std::bit_cast<std::uint32_t>(x) << ")");
  REQUIRE(got == expected);
  REQUIRE(std::signbit(got) == std::signbit(x));  // -0 stays -0
}

void exhaustive(const Format& f) {
  REQUIRE(std::fegetround() == FE_TONEAREST);
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const auto bits = static_cast<std::uint16_t>(b);
    const double expected = value_of(f, bits);
    const float decoded = f.decode(bits);
    if (std::isnan(expected)) {
      REQUIRE(std::isnan(decoded));
      REQUIRE(f.encode(decoded) == canonical_nan16);
      continue;
    }
    REQUIRE(static_cast<double>(decoded) == expected);
    REQUIRE(f.encode(decoded) == bits);  // exact round trip, signed zeros and infinities included
    if (std::isinf(expected) || (bits & 0x7fff) == 0x7fff) continue;
    // The boundary to the next larger magnitude: the midpoint, and one fp32 ulp either side.
    const auto next = static_cast<std::uint16_t>(bits + 1);
    const double upper = std::isinf(value_of(f, next)) ? std::copysign(2 * std::fabs(expected) - std::fabs(value_of(f, bits - 1)), expected)
                                                       : value_of(f, next);
    const auto mid = static_cast<float>((expected + upper) / 2);  // exact: one more significand bit
    REQUIRE(static_cast<double>(mid) == (expected + upper) / 2);
    check_encode(f, mid);
    check_encode(f, std::nextafter(mid, 0.0f));
    check_encode(f, std::nextafter(mid, std::copysign(INFINITY, mid)));
  }
}

}  // namespace

TEST_CASE("fp16: all 65536 patterns decode exactly, round-trip, and round to nearest even at every boundary", "[dtype]") {
  exhaustive(kF16);
}

TEST_CASE("bf16: all 65536 patterns decode exactly, round-trip, and round to nearest even at every boundary", "[dtype]") {
  exhaustive(kBf16);
}

TEST_CASE("fp16: the branch-free narrowing the CPU kernels use equals the reference, bit for bit (a sweep of 2^32)", "[dtype]") {
  // Every 251st of the 2^32 fp32 patterns (all exponents, signs, NaN payloads), and every pattern
  // near the subnormal, normal and overflow boundaries. (Exhaustively equal when written.)
  auto same = [](std::uint32_t b) {
    const float f = std::bit_cast<float>(b);
    return f32_to_f16_bits_wide(f) == f32_to_f16_bits(f);
  };
  std::uint64_t bad = 0;
  for (std::uint64_t b = 0; b < (std::uint64_t{1} << 32); b += 251) bad += !same(static_cast<std::uint32_t>(b));
  for (std::uint32_t boundary : {0x33000000u, 0x38800000u, 0x477fe000u, 0x477ff000u, 0x7f800000u})
    for (std::uint32_t sign : {0u, 0x80000000u})
      for (std::uint32_t d = 0; d < 1u << 16; ++d) bad += !same((boundary - (1u << 15) + d) | sign);
  CHECK(bad == 0);
}

TEST_CASE("fp16: the branch-free widening the CPU kernels use equals the reference on all 65536 patterns, bit for bit", "[dtype]") {
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const auto h = static_cast<std::uint16_t>(b);
    INFO("pattern 0x" << std::hex << b);
    REQUIRE(std::bit_cast<std::uint32_t>(f16_bits_to_f32_wide(h)) == std::bit_cast<std::uint32_t>(f16_bits_to_f32(h)));
  }
}

// The bulk conversions the CPU kernels use (F16C/AVX2 where the CPU has it) against the scalar
// loops: every fp16/bf16 pattern widened, every one of the 2^32 fp32 patterns narrowed and
// rounded, through unaligned pointers and lengths that leave a scalar tail.
TEST_CASE("fp16/bf16: the bulk conversions equal the scalar ones on every pattern, bit for bit", "[dtype]") {
  INFO("bulk conversions: " << bulk_convert_isa());
  constexpr std::size_t kBlock = 1 << 16;
  std::vector<std::uint16_t> half(kBlock + 1), want_half(kBlock + 1);
  std::vector<float> wide(kBlock + 1), want_wide(kBlock + 1);
  std::vector<std::uint32_t> in(kBlock + 1);
  for (std::size_t i = 0; i < kBlock; ++i) half[i + 1] = static_cast<std::uint16_t>(i);
  auto same_floats = [&](std::size_t n) { return std::memcmp(wide.data() + 1, want_wide.data() + 1, n * 4) == 0; };
  auto same_halves = [&](std::size_t n) { return std::memcmp(half.data() + 1, want_half.data() + 1, n * 2) == 0; };
  widen_f16(half.data() + 1, wide.data() + 1, kBlock);
  scalar_convert::widen_f16(half.data() + 1, want_wide.data() + 1, kBlock);
  REQUIRE(same_floats(kBlock));
  widen_bf16(half.data() + 1, wide.data() + 1, kBlock);
  scalar_convert::widen_bf16(half.data() + 1, want_wide.data() + 1, kBlock);
  REQUIRE(same_floats(kBlock));
  std::uint64_t bad = 0;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // The sanitizer builds (-O1, instrumented: about 10x slower) take every 16th block of 65536
  // patterns; the main build takes all of them.
  constexpr std::uint64_t kStride = 16 * kBlock;
  WARN("sanitizer build: narrowing checked on every 16th block of 65536 fp32 patterns (all of them in the main build)");
#else
  constexpr std::uint64_t kStride = kBlock;
#endif
  for (std::uint64_t base = 0; base < (std::uint64_t{1} << 32); base += kStride) {
    for (std::size_t i = 0; i < kBlock; ++i) in[i + 1] = static_cast<std::uint32_t>(base + i);
    const float* x = reinterpret_cast<const float*>(in.data() + 1);
    const std::size_t n = kBlock;
    narrow_f16(x, half.data() + 1, n);
    scalar_convert::narrow_f16(x, want_half.data() + 1, n);
    bad += !same_halves(n);
    narrow_bf16(x, half.data() + 1, n);
    scalar_convert::narrow_bf16(x, want_half.data() + 1, n);
    bad += !same_halves(n);
    std::memcpy(wide.data() + 1, x, n * 4);
    std::memcpy(want_wide.data() + 1, x, n * 4);
    round_f16(wide.data() + 1, n);
    scalar_convert::round_f16(want_wide.data() + 1, n);
    bad += !same_floats(n);
    std::memcpy(wide.data() + 1, x, n * 4);
    std::memcpy(want_wide.data() + 1, x, n * 4);
    round_bf16(wide.data() + 1, n);
    scalar_convert::round_bf16(want_wide.data() + 1, n);
    bad += !same_floats(n);
  }
  // Every length up to 40 (the scalar tails after the 8-wide steps), on random patterns.
  Rng rng(3);
  for (std::size_t n = 0; n <= 40; ++n)
    for (int trial = 0; trial < 200; ++trial) {
      for (std::size_t i = 0; i < n; ++i) in[i + 1] = static_cast<std::uint32_t>(rng.next());
      const float* x = reinterpret_cast<const float*>(in.data() + 1);
      narrow_f16(x, half.data() + 1, n);
      scalar_convert::narrow_f16(x, want_half.data() + 1, n);
      bad += !same_halves(n);
      narrow_bf16(x, half.data() + 1, n);
      scalar_convert::narrow_bf16(x, want_half.data() + 1, n);
      bad += !same_halves(n);
      widen_f16(half.data() + 1, wide.data() + 1, n);
      scalar_convert::widen_f16(half.data() + 1, want_wide.data() + 1, n);
      bad += !same_floats(n);
    }
  CHECK(bad == 0);
}

TEST_CASE("fp16/bf16: random fp32 inputs match the double-precision reference", "[dtype]") {
  Rng rng(7);
  for (int i = 0; i < 200000; ++i) {
    const auto x = std::bit_cast<float>(static_cast<std::uint32_t>(rng.next()));
    check_encode(kF16, x);
    check_encode(kBf16, x);
  }
  // Named cases: overflow, the largest finite values, subnormals, underflow to signed zero.
  REQUIRE(f32_to_f16_bits(65504.0f) == 0x7bff);
  REQUIRE(f32_to_f16_bits(65519.996f) == 0x7bff);
  REQUIRE(f32_to_f16_bits(65520.0f) == 0x7c00);
  REQUIRE(f32_to_f16_bits(-1e9f) == 0xfc00);
  REQUIRE(f32_to_f16_bits(0x1p-24f) == 0x0001);
  REQUIRE(f32_to_f16_bits(0x1p-25f) == 0x0000);        // tie to even: zero
  REQUIRE(f32_to_f16_bits(0x1.8p-25f) == 0x0001);
  REQUIRE(f32_to_f16_bits(-0x1p-30f) == 0x8000);
  REQUIRE(f32_to_bf16_bits(3.4e38f) == 0x7f80);         // rounds past the largest bf16
  REQUIRE(f32_to_bf16_bits(0x1p-149f) == 0x0000);       // smallest fp32 subnormal: tie to even
  REQUIRE(f32_to_bf16_bits(std::bit_cast<float>(0x00010000u)) == 0x0001);
  REQUIRE(round_to(DType::f16, 1.0f + 0x1p-11f) == 1.0f);
  REQUIRE(std::bit_cast<std::uint32_t>(f16_bits_to_f32(0x7c01)) == 0x7fffffffu);  // canonical, as cuda_fp16.h
  REQUIRE(std::bit_cast<std::uint32_t>(bf16_bits_to_f32(0x7f81)) == 0x7f810000u);  // payload kept, as cuda_bf16.h
  REQUIRE(round_to(DType::f32, 1.0f + 0x1p-11f) == 1.0f + 0x1p-11f);
}

#if HALFTAPE_HAVE_SIMT
TEST_CASE("fp16/bf16: the CPU conversions equal cuda_fp16.h and cuda_bf16.h bit for bit", "[dtype]") {
  auto half_bits = [](__half h) { std::uint16_t b; std::memcpy(&b, &h, 2); return b; };
  auto bf_bits = [](__nv_bfloat16 h) { std::uint16_t b; std::memcpy(&b, &h, 2); return b; };
  Rng rng(11);
  for (int i = 0; i < 200000; ++i) {
    const auto x = std::bit_cast<float>(static_cast<std::uint32_t>(rng.next()));
    REQUIRE(f32_to_f16_bits(x) == half_bits(__float2half_rn(x)));
    REQUIRE(f32_to_bf16_bits(x) == bf_bits(__float2bfloat16_rn(x)));
  }
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const auto bits = static_cast<std::uint16_t>(b);
    __half_raw hr;
    hr.x = bits;
    __nv_bfloat16_raw br;
    br.x = bits;
    const __half h = hr;
    const __nv_bfloat16 bf = br;
    REQUIRE(std::bit_cast<std::uint32_t>(f16_bits_to_f32(bits)) == std::bit_cast<std::uint32_t>(__half2float(h)));
    REQUIRE(std::bit_cast<std::uint32_t>(bf16_bits_to_f32(bits)) == std::bit_cast<std::uint32_t>(__bfloat162float(bf)));
  }
}
#else
TEST_CASE("fp16/bf16: comparison with cuda_fp16.h", "[dtype]") {
  WARN("skipped: this build has no CUDA headers, so there is no cuda_fp16.h to compare against");
}
#endif

// ---- FP8 (ground/fp8.h) ------------------------------------------------------------------------

namespace {

// Every fp32 input at which the rounding to `f` can change: each finite code's value, the
// midpoints between neighbouring codes and the fp32 numbers either side of each, beyond the
// largest finite value, the infinities, NaN, zeros - and their negatives.
std::vector<float> fp8_boundaries(Fp8Format f) {
  std::vector<float> values;
  for (int c = 0; c <= f.max_code; ++c) {
    const float v = fp8_bits_to_f32(static_cast<std::uint8_t>(c), f);
    values.push_back(v);
    const float next = c < f.max_code ? fp8_bits_to_f32(static_cast<std::uint8_t>(c + 1), f)
                                      : 2 * v - fp8_bits_to_f32(static_cast<std::uint8_t>(c - 1), f);  // the next step up
    const float mid = (v + next) / 2;  // exact: a few bits more than the format
    for (float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY), std::nextafter(v, INFINITY),
                    std::nextafter(v, 0.0f)})
      values.push_back(x);
  }
  for (float x : {1e6f, 3.0e38f, INFINITY, NAN, 0.0f, 1e-30f, std::numeric_limits<float>::denorm_min()}) values.push_back(x);
  const std::size_t n = values.size();
  for (std::size_t i = 0; i < n; ++i) values.push_back(-values[i]);
  return values;
}

bool is_nan_code(std::uint8_t c, Fp8Format f) { return std::isnan(fp8_bits_to_f32(c, f)); }

}  // namespace

TEST_CASE("fp8: every E4M3 and E5M2 code widens exactly and narrows back to itself, and the formats' constants", "[dtype]") {
  for (const Fp8Format f : {kE4M3, kE5M2}) {
    for (int c = 0; c < 256; ++c) {
      const auto code = static_cast<std::uint8_t>(c);
      const float v = fp8_bits_to_f32(code, f);
      INFO("code 0x" << std::hex << c);
      if (std::isnan(v)) {
        CHECK((f32_to_fp8_bits(v, f) & 0x7f) == 0x7f);  // NaN stays NaN
      } else if (std::isinf(v)) {
        CHECK(f32_to_fp8_bits(v, f) == ((code & 0x80) | f.max_code));  // saturates
      } else {
        CHECK(f32_to_fp8_bits(v, f) == code);
      }
    }
  }
  CHECK(e4m3_bits_to_f32(0x7e) == 448.0f);
  CHECK(e4m3_bits_to_f32(0x08) == 0.015625f);          // 2^-6, the smallest normal
  CHECK(e4m3_bits_to_f32(0x01) == 0.001953125f);       // 2^-9, the smallest subnormal
  CHECK(std::isnan(e4m3_bits_to_f32(0x7f)));
  CHECK(std::isnan(e4m3_bits_to_f32(0xff)));
  CHECK(e5m2_bits_to_f32(0x7b) == 57344.0f);
  CHECK(std::isinf(e5m2_bits_to_f32(0x7c)));
  CHECK(e5m2_bits_to_f32(0x01) == 1.52587890625e-05f);  // 2^-16
  CHECK(f32_to_e4m3_bits(1e9f) == 0x7e);
  CHECK(f32_to_e4m3_bits(-INFINITY) == 0xfe);
  CHECK(f32_to_e5m2_bits(INFINITY) == 0x7b);
  CHECK(f32_to_e4m3_bits(-0.0f) == 0x80);
}

TEST_CASE("fp8: narrowing rounds to nearest even at every boundary (a double-precision reference)", "[dtype]") {
  for (const Fp8Format f : {kE4M3, kE5M2}) {
    // The finite magnitudes, in order, and the reference rule: the nearest; on a tie the even code.
    std::vector<double> finite;
    for (int c = 0; c <= f.max_code; ++c) finite.push_back(fp8_bits_to_f32(static_cast<std::uint8_t>(c), f));
    for (const float x : fp8_boundaries(f)) {
      if (std::isnan(x)) continue;
      const double a = std::fabs(static_cast<double>(x));
      int best = f.max_code;
      if (a <= finite.back()) {
        best = 0;
        for (int c = 1; c <= f.max_code; ++c) {
          const double d = std::fabs(a - finite[static_cast<std::size_t>(c)]), b = std::fabs(a - finite[static_cast<std::size_t>(best)]);
          if (d < b || (d == b && c % 2 == 0)) best = c;
        }
      }
      const auto want = static_cast<std::uint8_t>((std::signbit(x) ? 0x80 : 0) | best);
      INFO("x = " << x << " (" << (f.mantissa_bits == 3 ? "E4M3" : "E5M2") << ")");
      CHECK(static_cast<int>(f32_to_fp8_bits(x, f)) == static_cast<int>(want));
    }
  }
}

#if HALFTAPE_HAVE_SIMT
TEST_CASE("fp8: the conversions equal cuda_fp8.h's (round to nearest even, __NV_SATFINITE) bit for bit", "[dtype]") {
  const std::pair<Fp8Format, __nv_fp8_interpretation_t> formats[] = {{kE4M3, __NV_E4M3}, {kE5M2, __NV_E5M2}};
  for (const auto& [f, kind] : formats) {
    auto cuda = [kind = kind](float x) { return static_cast<std::uint8_t>(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, kind)); };
    for (const float x : fp8_boundaries(f)) {
      INFO("x = " << x);
      if (std::isnan(x)) CHECK(is_nan_code(cuda(x), f) == is_nan_code(f32_to_fp8_bits(x, f), f));
      else CHECK(static_cast<int>(f32_to_fp8_bits(x, f)) == static_cast<int>(cuda(x)));
    }
    Rng rng(23);
    for (int i = 0; i < 1000000; ++i) {
      const auto x = std::bit_cast<float>(static_cast<std::uint32_t>(rng.next()));
      if (std::isnan(x)) continue;
      REQUIRE(static_cast<int>(f32_to_fp8_bits(x, f)) == static_cast<int>(cuda(x)));
    }
    for (int c = 0; c < 256; ++c) {  // widening, through cuda_fp8.h's exact fp8 -> half
      const __half_raw h = __nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(c), kind);
      const float want = f16_bits_to_f32(h.x), got = fp8_bits_to_f32(static_cast<std::uint8_t>(c), f);
      INFO("code " << c);
      CHECK(((std::isnan(want) && std::isnan(got)) || want == got));
    }
  }
}
#else
TEST_CASE("fp8: comparison with cuda_fp8.h", "[dtype]") {
  WARN("skipped: this build has no CUDA headers, so there is no cuda_fp8.h to compare against");
}
#endif

// Run by tests/fp8_oracle.py, which writes ml_dtypes' answers to HT_FP8_ORACLE: for E4M3 then
// E5M2, n, n fp32 inputs, their n expected codes, and the 256 codes' values.
TEST_CASE("fp8: the conversions equal ml_dtypes' (with saturation) on every boundary and a million random inputs",
          "[dtype][fp8-oracle]") {
  const char* path = std::getenv("HT_FP8_ORACLE");
  if (!path) {
    WARN("skipped: needs the oracle's cases; tests/fp8_oracle.py (a ctest of its own) runs this with them");
    return;
  }
  std::FILE* file = std::fopen(path, "rb");
  REQUIRE(file != nullptr);
  for (const Fp8Format f : {kE4M3, kE5M2}) {
    std::int32_t n = 0;
    REQUIRE(std::fread(&n, sizeof(n), 1, file) == 1);
    std::vector<float> x(static_cast<std::size_t>(n)), values(256);
    std::vector<std::uint8_t> want(static_cast<std::size_t>(n));
    REQUIRE(std::fread(x.data(), sizeof(float), x.size(), file) == x.size());
    REQUIRE(std::fread(want.data(), 1, want.size(), file) == want.size());
    REQUIRE(std::fread(values.data(), sizeof(float), 256, file) == 256);
    std::int64_t checked = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const std::uint8_t got = f32_to_fp8_bits(x[i], f);
      INFO("x = " << x[i] << " (bits 0x" << std::hex << std::bit_cast<std::uint32_t>(x[i]) << ")");
      if (std::isnan(x[i])) REQUIRE(is_nan_code(got, f));
      else REQUIRE(static_cast<int>(got) == static_cast<int>(want[i]));
      ++checked;
    }
    for (int c = 0; c < 256; ++c) {
      const float got = fp8_bits_to_f32(static_cast<std::uint8_t>(c), f), v = values[static_cast<std::size_t>(c)];
      INFO("code " << c);
      REQUIRE(((std::isnan(got) && std::isnan(v)) || got == v));
    }
    CHECK(checked > (1 << 20));
  }
  std::fclose(file);
}
