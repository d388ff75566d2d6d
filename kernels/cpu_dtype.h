// Element access for the CPU reference kernels: the storage type of each DType and exact
// widening / rounding helpers, plus a switch from a runtime DType to a compile-time type.
#pragma once

#include "ground/dtype.h"
#include "ground/error.h"

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
