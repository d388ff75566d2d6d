// Bulk conversions (ground/convert.h): the scalar loops, an x86 F16C/AVX2 path, and the choice
// between them, made once from what the CPU reports.
#include "ground/convert.h"

#include "ground/dtype.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define HT_CONVERT_X86 1
#else
#define HT_CONVERT_X86 0
#endif

namespace ht {

namespace scalar_convert {

void widen_f16(const std::uint16_t* src, float* dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = f16_bits_to_f32_wide(src[i]);
}
void widen_bf16(const std::uint16_t* src, float* dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = bf16_bits_to_f32(src[i]);
}
void narrow_f16(const float* src, std::uint16_t* dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = f32_to_f16_bits_wide(src[i]);
}
void narrow_bf16(const float* src, std::uint16_t* dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = f32_to_bf16_bits(src[i]);
}
void round_f16(float* x, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) x[i] = f16_bits_to_f32_wide(f32_to_f16_bits_wide(x[i]));
}
void round_bf16(float* x, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) x[i] = bf16_bits_to_f32(f32_to_bf16_bits(x[i]));
}

}  // namespace scalar_convert

#if HT_CONVERT_X86
namespace {

#define HT_F16C __attribute__((target("avx2,f16c")))

// fp16 NaN patterns (|h| > inf) become the canonical 0x7fff.
HT_F16C inline __m128i canonical_nan_f16(__m128i h) {
  const __m128i is_nan = _mm_cmpgt_epi16(_mm_and_si128(h, _mm_set1_epi16(0x7fff)), _mm_set1_epi16(0x7c00));
  return _mm_blendv_epi8(h, _mm_set1_epi16(0x7fff), is_nan);
}
// fp32 NaNs become the canonical 0x7fffffff (what f16_bits_to_f32 widens an fp16 NaN to).
HT_F16C inline __m256 canonical_nan_f32(__m256 f) {
  const __m256i bits = _mm256_castps_si256(f);
  const __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(bits, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
  return _mm256_castsi256_ps(_mm256_blendv_epi8(bits, _mm256_set1_epi32(0x7fffffff), is_nan));
}
HT_F16C inline __m128i to_f16(__m256 x) {
  return canonical_nan_f16(_mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
HT_F16C inline __m256 from_f16(__m128i h) { return canonical_nan_f32(_mm256_cvtph_ps(h)); }
// f32_to_bf16_bits in eight 32-bit lanes (the same wrapping integer arithmetic), packed to 16 bits.
HT_F16C inline __m128i to_bf16(__m256 x) {
  const __m256i bits = _mm256_castps_si256(x);
  const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
  __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(bits, _mm256_set1_epi32(0x7fff)), odd), 16);
  const __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(bits, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
  rounded = _mm256_blendv_epi8(rounded, _mm256_set1_epi32(0x7fff), is_nan);
  const __m256i packed = _mm256_packus_epi32(rounded, rounded);  // (each 128-bit half packs its own four)
  return _mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0x08));
}
HT_F16C inline __m256 from_bf16(__m128i h) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)); }

inline __m128i load8(const std::uint16_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
inline void store8(std::uint16_t* p, __m128i v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v); }

HT_F16C void widen_f16_x86(const std::uint16_t* src, float* dst, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, from_f16(load8(src + i)));
  scalar_convert::widen_f16(src + i, dst + i, n - i);
}
HT_F16C void widen_bf16_x86(const std::uint16_t* src, float* dst, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, from_bf16(load8(src + i)));
  scalar_convert::widen_bf16(src + i, dst + i, n - i);
}
HT_F16C void narrow_f16_x86(const float* src, std::uint16_t* dst, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) store8(dst + i, to_f16(_mm256_loadu_ps(src + i)));
  scalar_convert::narrow_f16(src + i, dst + i, n - i);
}
HT_F16C void narrow_bf16_x86(const float* src, std::uint16_t* dst, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) store8(dst + i, to_bf16(_mm256_loadu_ps(src + i)));
  scalar_convert::narrow_bf16(src + i, dst + i, n - i);
}
HT_F16C void round_f16_x86(float* x, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, from_f16(to_f16(_mm256_loadu_ps(x + i))));
  scalar_convert::round_f16(x + i, n - i);
}
HT_F16C void round_bf16_x86(float* x, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, from_bf16(to_bf16(_mm256_loadu_ps(x + i))));
  scalar_convert::round_bf16(x + i, n - i);
}

bool cpu_has_f16c() {
  static const bool has = __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx2");
  return has;
}

}  // namespace

#define HT_PICK(name, ...) (cpu_has_f16c() ? name##_x86(__VA_ARGS__) : scalar_convert::name(__VA_ARGS__))
const char* bulk_convert_isa() { return cpu_has_f16c() ? "f16c+avx2" : "scalar"; }
#else
#define HT_PICK(name, ...) scalar_convert::name(__VA_ARGS__)
const char* bulk_convert_isa() { return "scalar"; }
#endif

void widen_f16(const std::uint16_t* src, float* dst, std::size_t n) { HT_PICK(widen_f16, src, dst, n); }
void widen_bf16(const std::uint16_t* src, float* dst, std::size_t n) { HT_PICK(widen_bf16, src, dst, n); }
void narrow_f16(const float* src, std::uint16_t* dst, std::size_t n) { HT_PICK(narrow_f16, src, dst, n); }
void narrow_bf16(const float* src, std::uint16_t* dst, std::size_t n) { HT_PICK(narrow_bf16, src, dst, n); }
void round_f16(float* x, std::size_t n) { HT_PICK(round_f16, x, n); }
void round_bf16(float* x, std::size_t n) { HT_PICK(round_bf16, x, n); }

}  // namespace ht
