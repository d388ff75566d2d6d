// The SIMT emulator, device side: what a CUDA kernel can use, for the host compiler.
//
// kernels/*.cu include this (through kernels/gpu.h) when built with HT_SIMT. Each block runs
// on one CPU thread, its GPU threads as fibers that switch at every barrier and warp
// collective, so the same kernel source runs here and under nvcc. What is not emulated is not
// declared: a kernel that uses it does not compile for the emulator (loud, early).
//
// Deviations from CUDA a kernel author must know (docs/emulator.md has the full list):
//   - dynamic shared memory is declared with HT_DYNAMIC_SHARED(type, name);
//   - static __shared__ arrays become function-local thread_local statics (one copy per
//     emulator worker thread, reused by every block it runs);
//   - lanes are not in lockstep: warp-synchronous code without __syncwarp or a *_sync
//     collective is a bug here as on Volta and later GPUs.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <vector_types.h>

// The CUDA headers define these as attributes the host compiler ignores; give them meaning.
#undef __host__
#undef __device__
#undef __global__
#undef __shared__
#undef __constant__
#undef __launch_bounds__
#undef __grid_constant__
#define __host__
#define __device__
#define __global__
#define __shared__ static thread_local
#define __constant__ static
#define __launch_bounds__(...)
#define __grid_constant__

#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

// The built-in variables, set by the scheduler before it resumes a thread's fiber.
extern __thread uint3 threadIdx;  // __thread: plain TLS, no C++ init wrapper (UBSan misreads those)
extern __thread uint3 blockIdx;
extern __thread uint3 blockDim;  // uint3 where CUDA has dim3: trivial, as __thread requires
extern __thread uint3 gridDim;
constexpr int warpSize = 32;

namespace ht::emu {

enum class Collective : int {
  syncwarp, shfl, shfl_up, shfl_down, shfl_xor, ballot, any, all, match,
  // tensor-core data movement and math (kernels/ptx.cuh), one kind per variant
  mma_f16, mma_bf16, ldmatrix_x1, ldmatrix_x2, ldmatrix_x4, ldmatrix_x1_trans, ldmatrix_x2_trans, ldmatrix_x4_trans,
};

// Up to 64 bytes per lane, in and out of a computing warp collective.
constexpr std::size_t kLaneBytes = 64;
struct alignas(16) LaneData {
  std::byte bytes[kLaneBytes];
};
using WarpCompute = void (*)(const LaneData* in, LaneData* out, unsigned mask);

// Every lane of `mask` contributes `in` (at most 64 bytes); when the last one arrives,
// `compute` turns all 32 contributions into 32 results; returns the caller's result.
const LaneData& warp_compute(Collective kind, unsigned mask, const void* in, std::size_t bytes, WarpCompute compute);

// mma.sync.m16n8k16 (f32 accumulators, f16 or bf16 inputs) and ldmatrix (simt/tensor_core.cpp).
void mma_m16n8k16(bool bf16, float d[4], const std::uint32_t a[4], const std::uint32_t b[2], const float c[4]);
void ldmatrix(int count, bool trans, std::uint32_t* regs, const void* row_address);

// cp.async: a copy queued by the calling thread, done when a cp_async_wait covers its group.
void cp_async(void* dst, const void* src, int bytes, int src_bytes);
void cp_async_commit();
void cp_async_wait(int newest_groups_left_pending);

// Barriers and warp collectives, implemented by the scheduler (simt/scheduler.cpp).
void block_barrier();
int block_barrier_reduce(int predicate, int op);  // op: 0 count, 1 and, 2 or
// Every lane in `mask` contributes `value`; returns the 32 contributions once all have.
const std::uint64_t* warp_collective(Collective kind, unsigned mask, std::uint64_t value);
unsigned lane_id();
unsigned active_lanes();  // lanes of the caller's warp that have not exited
void* dynamic_shared_memory();
[[noreturn]] void kernel_error(const char* what);

template <class T> std::uint64_t to_bits(T v) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "warp collectives move at most 8 bytes");
  std::uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  return bits;
}
template <class T> T from_bits(std::uint64_t bits) {
  T v;
  std::memcpy(&v, &bits, sizeof(T));
  return v;
}

// The source lane of a shuffle (PTX shfl.sync semantics), or the caller itself when the source
// falls outside its width-segment.
unsigned shuffle_source(Collective kind, unsigned lane, int arg, int width);

}  // namespace ht::emu

// ---- barriers ------------------------------------------------------------------------------
inline void __syncthreads() { ht::emu::block_barrier(); }
inline int __syncthreads_count(int p) { return ht::emu::block_barrier_reduce(p, 0); }
inline int __syncthreads_and(int p) { return ht::emu::block_barrier_reduce(p, 1); }
inline int __syncthreads_or(int p) { return ht::emu::block_barrier_reduce(p, 2); }
inline void __syncwarp(unsigned mask = 0xffffffffu) { ht::emu::warp_collective(ht::emu::Collective::syncwarp, mask, 0); }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline unsigned __activemask() { return ht::emu::active_lanes(); }

// ---- warp shuffles and votes ---------------------------------------------------------------
namespace ht::emu {
template <class T> T shuffle(Collective kind, unsigned mask, T var, int arg, int width) {
  if (width <= 0 || width > 32 || (width & (width - 1)))
    kernel_error("__shfl*_sync: width must be a power of two in [1, 32]");
  const std::uint64_t* all = warp_collective(kind, mask, to_bits(var));
  const unsigned src = shuffle_source(kind, lane_id(), arg, width);
  if (!(mask >> src & 1u)) kernel_error("__shfl*_sync: the source lane is not in the mask");
  return from_bits<T>(all[src]);
}
}  // namespace ht::emu

template <class T> T __shfl_sync(unsigned mask, T var, int src, int width = 32) {
  return ht::emu::shuffle(ht::emu::Collective::shfl, mask, var, src, width);
}
template <class T> T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = 32) {
  return ht::emu::shuffle(ht::emu::Collective::shfl_up, mask, var, static_cast<int>(delta), width);
}
template <class T> T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = 32) {
  return ht::emu::shuffle(ht::emu::Collective::shfl_down, mask, var, static_cast<int>(delta), width);
}
template <class T> T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = 32) {
  return ht::emu::shuffle(ht::emu::Collective::shfl_xor, mask, var, lane_mask, width);
}
inline unsigned __ballot_sync(unsigned mask, int pred) {
  const std::uint64_t* all = ht::emu::warp_collective(ht::emu::Collective::ballot, mask, pred != 0);
  unsigned bits = 0;
  for (unsigned l = 0; l < 32; ++l)
    if ((mask >> l & 1u) && all[l]) bits |= 1u << l;
  return bits;
}
inline int __any_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) != 0; }
inline int __all_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) == mask; }

// ---- atomics (blocks run on several CPU threads at once, so these are real atomics) ---------
template <class T> T atomicAdd(T* address, T val) {
  std::atomic_ref<T> a(*address);
  if constexpr (std::is_floating_point_v<T>) {
    T old = a.load();
    while (!a.compare_exchange_weak(old, old + val)) {}
    return old;
  } else {
    return a.fetch_add(val);
  }
}
template <class T> T atomicSub(T* address, T val) { return std::atomic_ref<T>(*address).fetch_sub(val); }
template <class T> T atomicExch(T* address, T val) { return std::atomic_ref<T>(*address).exchange(val); }
template <class T> T atomicOr(T* address, T val) { return std::atomic_ref<T>(*address).fetch_or(val); }
template <class T> T atomicAnd(T* address, T val) { return std::atomic_ref<T>(*address).fetch_and(val); }
template <class T> T atomicCAS(T* address, T compare, T val) {
  std::atomic_ref<T>(*address).compare_exchange_strong(compare, val);
  return compare;
}
template <class T> T atomicMax(T* address, T val) {
  std::atomic_ref<T> a(*address);
  T old = a.load();
  while (old < val && !a.compare_exchange_weak(old, val)) {}
  return old;
}
template <class T> T atomicMin(T* address, T val) {
  std::atomic_ref<T> a(*address);
  T old = a.load();
  while (val < old && !a.compare_exchange_weak(old, val)) {}
  return old;
}

// ---- intrinsics ----------------------------------------------------------------------------
template <class T> T __ldg(const T* p) { return *p; }
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }
inline float __int_as_float(int x) { return std::bit_cast<float>(x); }
inline int __float_as_int(float x) { return std::bit_cast<int>(x); }
inline float __uint_as_float(unsigned x) { return std::bit_cast<float>(x); }
inline unsigned __float_as_uint(float x) { return std::bit_cast<unsigned>(x); }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __clz(unsigned x) { return x ? __builtin_clz(x) : 32; }
inline int __ffs(unsigned x) { return __builtin_ffs(static_cast<int>(x)); }

// Dynamic shared memory: `extern __shared__ T name[]` cannot be expressed for the host compiler.
#define HT_DYNAMIC_SHARED(type, name) type* name = static_cast<type*>(::ht::emu::dynamic_shared_memory())
