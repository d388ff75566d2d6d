// Element access for the CPU reference kernels: the storage type of each DType and exact
// widening / rounding helpers, plus a switch from a runtime DType to a compile-time type.
#pragma once

#include "ground/dtype.h"
#include "ground/error.h"

#include <type_traits>

namespace ht::cpu {

inline float load(float v) { return v; }
// fp16 widening by table: 256 KiB, exact (built from f16_bits_to_f32), several times faster
// than the bit manipulation in the GEMM operand widening and the element-wise kernels.
extern const float* const f16_to_f32_table;
inline float load(f16 v) { return f16_to_f32_table[v.bits]; }
inline float load(bf16 v) { return static_cast<float>(v); }

template <class T> T store(float v);
template <> inline float store<float>(float v) { return v; }
template <> inline f16 store<f16>(float v) { return f16::from(v); }
template <> inline bf16 store<bf16>(float v) { return bf16::from(v); }

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
