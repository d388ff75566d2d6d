// The tensor-core and async-copy instructions the GEMM uses, as functions: inline PTX under
// nvcc, the SIMT emulator's implementations (simt/tensor_core.cpp) otherwise. Shapes and
// fragment layouts are the PTX ISA's; see simt/tensor_core.cpp for them spelled out.
#pragma once

#include "kernels/gpu.h"

#include <cstdint>
#include <type_traits>

namespace ht::gpu::inline HT_GPU_NS {

#if defined(HT_SIMT)

template <class T>
__device__ __forceinline__ void mma_m16n8k16(float d[4], const std::uint32_t a[4], const std::uint32_t b[2], const float c[4]) {
  ht::emu::mma_m16n8k16(std::is_same_v<T, __nv_bfloat16>, d, a, b, c);
}
template <int kCount, bool kTrans> __device__ __forceinline__ void ldmatrix(std::uint32_t* regs, const void* smem_row) {
  ht::emu::ldmatrix(kCount, kTrans, regs, smem_row);
}
// Copies 16 bytes, of which the first src_bytes (0 or 16) come from global memory, the rest 0.
__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem, int src_bytes) {
  ht::emu::cp_async(smem, gmem, 16, src_bytes);
}
__device__ __forceinline__ void cp_async_commit() { ht::emu::cp_async_commit(); }
template <int kPending> __device__ __forceinline__ void cp_async_wait() { ht::emu::cp_async_wait(kPending); }

#else

__device__ __forceinline__ std::uint32_t smem_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

template <class T>
__device__ __forceinline__ void mma_m16n8k16(float d[4], const std::uint32_t a[4], const std::uint32_t b[2], const float c[4]) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
  }
}

template <int kCount, bool kTrans> __device__ __forceinline__ void ldmatrix(std::uint32_t* r, const void* smem_row) {
  const std::uint32_t addr = smem_address(smem_row);
  if constexpr (kCount == 4 && kTrans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
  else if constexpr (kCount == 4)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
  else if constexpr (kCount == 2 && kTrans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(addr));
  else if constexpr (kCount == 2)
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(addr));
  else if constexpr (kTrans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(addr));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(addr));
}

__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_address(smem)), "l"(gmem), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int kPending> __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

#endif

}  // namespace ht::gpu::inline HT_GPU_NS
