// The Hopper (sm_90a) instructions the wgmma GEMM uses, as functions: inline PTX under nvcc, the
// SIMT emulator's implementations (simt/hopper.cpp) otherwise - so kernels/gemm_wgmma.cu is one
// source for both, as kernels/ptx.cuh does for mma.sync. Semantics: the PTX ISA's sections on
// mbarrier, cp.async.bulk.tensor and wgmma; simt/hopper.h says what the emulator checks.
#pragma once

#include "kernels/fp8_scaling.h"
#include "kernels/gpu.h"

#include <cstdint>
#include <type_traits>

#if defined(HT_SIMT)
#include "simt/hopper.h"
#else
#include <cuda.h>
#include <cudaTypedefs.h>
#endif

namespace ht::gpu::inline HT_GPU_NS::sm90 {

#if defined(HT_SIMT)

inline std::uint32_t smem(const void* p) { return ht::emu::shared_address(p); }
inline void mbar_init(std::uint64_t* bar, unsigned count) { ht::emu::mbarrier_init(bar, count); }
inline void fence_mbar_init() { ht::emu::fence_mbarrier_init(); }
inline void mbar_expect_tx(std::uint64_t* bar, unsigned bytes) { ht::emu::mbarrier_arrive_expect_tx(bar, bytes); }
inline void mbar_arrive(std::uint64_t* bar) { ht::emu::mbarrier_arrive(bar); }
inline void mbar_wait(std::uint64_t* bar, unsigned parity) {
  while (!ht::emu::mbarrier_try_wait_parity(bar, parity)) {}
}
inline void tma_load_2d(void* dst, const CUtensorMap* map, std::uint64_t* bar, int c0, int c1) {
  const int coords[2] = {c0, c1};
  ht::emu::tma_load(dst, map, bar, coords, 2);
}
inline void fence_proxy_async() { ht::emu::fence_proxy_async(); }
inline void wgmma_fence() { ht::emu::wgmma_fence(); }
inline void wgmma_commit() { ht::emu::wgmma_commit_group(); }
template <int kPending> inline void wgmma_wait() { ht::emu::wgmma_wait_group(kPending); }
template <int N> inline void fence_operands(float (&)[N]) {}  // the emulator runs in source order
template <class T, int N> inline void wgmma_m64nNk16(float (&d)[N / 2], std::uint64_t desc_a, std::uint64_t desc_b) {
  ht::emu::wgmma_mma_async(std::is_same_v<T, __nv_bfloat16>, N, d, desc_a, desc_b, 1, 1, 1, 0, 0);
}
template <Fp8Kind A, Fp8Kind B, int N>
inline void wgmma_m64nNk32(float (&d)[N / 2], std::uint64_t desc_a, std::uint64_t desc_b) {
  ht::emu::wgmma_mma_async_fp8(A == Fp8Kind::e5m2, B == Fp8Kind::e5m2, N, d, desc_a, desc_b, 1);
}
template <bool kIncrease, unsigned kRegisters> inline void setmaxnreg() { ht::emu::setmaxnreg(kIncrease, kRegisters); }

inline CUresult encode_tensor_map(CUtensorMap* map, CUtensorMapDataType type, cuuint32_t rank, void* address,
                                  const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
                                  const cuuint32_t* element_strides, CUtensorMapInterleave interleave,
                                  CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill fill) {
  return ht::emu::encode_tensor_map_tiled(map, type, rank, address, dims, strides, box, element_strides, interleave, swizzle,
                                          l2, fill);
}

#else

__device__ __forceinline__ std::uint32_t smem(const void* p) { return static_cast<std::uint32_t>(__cvta_generic_to_shared(p)); }

__device__ __forceinline__ void mbar_init(std::uint64_t* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem(bar)), "r"(count));
}
__device__ __forceinline__ void fence_mbar_init() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }
__device__ __forceinline__ void mbar_expect_tx(std::uint64_t* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(std::uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem(bar)) : "memory");
}
// Waits until the phase of parity `parity` has completed.
__device__ __forceinline__ void mbar_wait(std::uint64_t* bar, unsigned parity) {
  std::uint32_t done = 0;
  while (!done) {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(smem(bar)), "r"(parity)
        : "memory");
  }
}

// Copies the box at (c0, c1) (innermost first) of the tensor `map` describes into shared memory.
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, std::uint64_t* bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n" ::"r"(
          smem(dst)),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(smem(bar)), "r"(c0), "r"(c1)
      : "memory");
}
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int kPending> __device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}
// Pins the accumulators in place around an asynchronous wgmma batch (as CUTLASS's
// warpgroup_fence_operand): the asm above clobbers memory, not registers, so without this the
// compiler may move a read or write of d[] across wgmma.fence or wgmma.wait_group - reading an
// accumulator the tensor cores have not finished writing. Emits no instruction.
template <int N> __device__ __forceinline__ void fence_operands(float (&d)[N]) {
  HT_UNROLL
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
template <bool kIncrease, unsigned kRegisters> __device__ __forceinline__ void setmaxnreg() {
  if constexpr (kIncrease) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
  else asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
}

// d (64×N per warpgroup, N/2 FP32 a thread) += A(64×16) · B(16×N), both from shared memory:
// wgmma.mma_async m64nNk16 for N = 128 and 256, the accumulators pinned as "+f" operands.
template <class T, int N> void wgmma_m64nNk16(float (&d)[N / 2], std::uint64_t a, std::uint64_t b) = delete;
#define HT_WGMMA_D128 \
      "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
      "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
      "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
      "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
      "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
      "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
      "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define HT_WGMMA_D256 \
      HT_WGMMA_D128, \
      "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
      "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
      "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
      "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), \
      "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), \
      "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), \
      "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
      "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
#define HT_WGMMA_REGS_FIRST64 \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define HT_WGMMA_REGS128 "{" HT_WGMMA_REGS_FIRST64 "}"
#define HT_WGMMA_REGS256 "{" HT_WGMMA_REGS_FIRST64 ", " \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
  "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, " \
  "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
  "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127" "}"
// One specialisation: element type, its PTX name, N, and the operand numbers of the descriptors.
#define HT_WGMMA(TYPE, PTX_TYPE, N, DESC_A, DESC_B)                                                             \
  template <> __device__ __forceinline__ void wgmma_m64nNk16<TYPE, N>(float (&d)[N / 2], std::uint64_t a,       \
                                                                      std::uint64_t b) {                        \
    asm volatile("wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." PTX_TYPE "." PTX_TYPE " " HT_WGMMA_REGS##N \
                 ", %" #DESC_A ", %" #DESC_B ", 1, 1, 1, 0, 0;\n"                                              \
                 : HT_WGMMA_D##N                                                                                \
                 : "l"(a), "l"(b));                                                                             \
  }
HT_WGMMA(__half, "f16", 128, 64, 65)
HT_WGMMA(__nv_bfloat16, "bf16", 128, 64, 65)
HT_WGMMA(__half, "f16", 256, 128, 129)
HT_WGMMA(__nv_bfloat16, "bf16", 256, 128, 129)
#undef HT_WGMMA
// d += A(64×32) · B(32×N) from FP8 codes (k32; FP8 operands are K-major only, so no transpose
// immediates): the kinds of A and B, N 128, the FP8 GEMM's two pairs (E4M3·E4M3 forward,
// E5M2·E4M3 backward).
template <Fp8Kind A, Fp8Kind B, int N> void wgmma_m64nNk32(float (&d)[N / 2], std::uint64_t a, std::uint64_t b) = delete;
#define HT_WGMMA_FP8(A, PTX_A, B, PTX_B, N, DESC_A, DESC_B)                                                        \
  template <> __device__ __forceinline__ void wgmma_m64nNk32<Fp8Kind::A, Fp8Kind::B, N>(                         \
      float (&d)[N / 2], std::uint64_t a, std::uint64_t b) {                                                       \
    asm volatile("wgmma.mma_async.sync.aligned.m64n" #N "k32.f32." PTX_A "." PTX_B " " HT_WGMMA_REGS##N            \
                 ", %" #DESC_A ", %" #DESC_B ", 1, 1, 1;\n"                                                         \
                 : HT_WGMMA_D##N                                                                                   \
                 : "l"(a), "l"(b));                                                                                \
  }
HT_WGMMA_FP8(e4m3, "e4m3", e4m3, "e4m3", 128, 64, 65)
HT_WGMMA_FP8(e5m2, "e5m2", e4m3, "e4m3", 128, 64, 65)
#undef HT_WGMMA_FP8
#undef HT_WGMMA_D128
#undef HT_WGMMA_D256
#undef HT_WGMMA_REGS128
#undef HT_WGMMA_REGS256
#undef HT_WGMMA_REGS_FIRST64

// cuTensorMapEncodeTiled, through the runtime's driver entry point (no -lcuda).
inline CUresult encode_tensor_map(CUtensorMap* map, CUtensorMapDataType type, cuuint32_t rank, void* address,
                                  const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
                                  const cuuint32_t* element_strides, CUtensorMapInterleave interleave,
                                  CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill fill) {
  static const PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult result{};
    const cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &result);
    if (e != cudaSuccess || result != cudaDriverEntryPointSuccess || !f)
      ht::call_failed("cudaGetDriverEntryPointByVersion(cuTensorMapEncodeTiled)", cudaGetErrorString(e), __FILE__, __LINE__);
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
  }();
  return encode(map, type, rank, address, dims, strides, box, element_strides, interleave, swizzle, l2, fill);
}

#endif

}  // namespace ht::gpu::inline HT_GPU_NS::sm90
