// Element access for the CPU reference kernels: the storage type of each DType and exact
// widening / rounding helpers, plus a switch from a runtime DType to a compile-time type.
#pragma once

#include "ground/convert.h"
#include "ground/dtype.h"
#include "ground/error.h"

#include <cstring>
#include <type_traits>

namespace ht::cpu {

inline float load(float v) { return v; }
// Branch-free fp16 conversions (ground/dtype.h), bit-identical to the reference ones: loops over
// fp16 data vectorise.
inline float load(f16 v) { return f16_bits_to_f32_wide(v.bits); }
inline float load(bf16 v) { return static_cast<float>(v); }

template <class T> T store(float v);
template <> inline float store<float>(float v) { return v; }
template <> inline f16 store<f16>(float v) { return f16{f32_to_f16_bits_wide(v)}; }  // (vectorises)
template <> inline bf16 store<bf16>(float v) { return bf16::from(v); }

// v rounded to T's precision, as a float (load(store<T>(v))).
template <class T> inline float rounded(float v) { return load(store<T>(v)); }

// Stores v rounded to T at p as a scalar write (of the 16-bit pattern): an aggregate copy of
// the f16/bf16 struct would stop the loop around it from vectorising.
inline void put(float* p, float v) { *p = v; }
inline void put(f16* p, float v) { p->bits = f32_to_f16_bits_wide(v); }
inline void put(bf16* p, float v) { p->bits = f32_to_bf16_bits(v); }

// Whole rows at a time, bit-identical to load/store/rounded element by element: the bulk
// conversions of ground/convert.h (F16C/AVX2 where the CPU has it). The reference kernels widen
// a row into FP32 scratch, compute there, and narrow it back.
inline const std::uint16_t* bits_of(const f16* p) { return reinterpret_cast<const std::uint16_t*>(p); }
inline const std::uint16_t* bits_of(const bf16* p) { return reinterpret_cast<const std::uint16_t*>(p); }
inline std::uint16_t* bits_of(f16* p) { return reinterpret_cast<std::uint16_t*>(p); }
inline std::uint16_t* bits_of(bf16* p) { return reinterpret_cast<std::uint16_t*>(p); }

inline void load_n(const float* src, float* dst, std::int64_t n) { std::memcpy(dst, src, static_cast<std::size_t>(n) * 4); }
inline void load_n(const f16* src, float* dst, std::int64_t n) { widen_f16(bits_of(src), dst, static_cast<std::size_t>(n)); }
inline void load_n(const bf16* src, float* dst, std::int64_t n) { widen_bf16(bits_of(src), dst, static_cast<std::size_t>(n)); }
inline void store_n(const float* src, float* dst, std::int64_t n) {
  if (src != dst) std::memmove(dst, src, static_cast<std::size_t>(n) * 4);
}
inline void store_n(const float* src, f16* dst, std::int64_t n) { narrow_f16(src, bits_of(dst), static_cast<std::size_t>(n)); }
inline void store_n(const float* src, bf16* dst, std::int64_t n) { narrow_bf16(src, bits_of(dst), static_cast<std::size_t>(n)); }
// x[i] = rounded<T>(x[i]) for a row.
template <class T> void round_n(float* x, std::int64_t n) {
  if constexpr (std::is_same_v<T, f16>) round_f16(x, static_cast<std::size_t>(n));
  else if constexpr (std::is_same_v<T, bf16>) round_bf16(x, static_cast<std::size_t>(n));
}

// Elements per FP32 scratch row of the chunked loops: a few KiB, in L1.
constexpr std::int64_t kChunk = 512;

// dst[i] = store<D>(load(src[i])) for n elements, through FP32 scratch when neither is FP32.
template <class S, class D> void convert_n(const S* src, D* dst, std::int64_t n) {
  if constexpr (std::is_same_v<S, float>) {
    store_n(src, dst, n);
  } else if constexpr (std::is_same_v<D, float>) {
    load_n(src, dst, n);
  } else {
    float row[kChunk];
    for (std::int64_t i = 0; i < n; i += kChunk) {
      const std::int64_t m = n - i < kChunk ? n - i : kChunk;
      load_n(src + i, row, m);
      store_n(row, dst + i, m);
    }
  }
}

// Calls f(std::type_identity<T>{}) with T the storage type of `t`.
template <class F> decltype(auto) dispatch(DType t, F&& f) {
  switch (t) {
    case DType::f32: return f(std::type_identity<float>{});
    case DType::f16: return f(std::type_identity<f16>{});
    case DType::bf16: return f(std::type_identity<bf16>{});
    default: break;
  }
  fail(fmt::format("internal error: a float kernel given {}", dtype_name(t)));
}

}  // namespace ht::cpu
