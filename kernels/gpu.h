// The one header every GPU source includes. It makes the same file compile three ways:
//   nvcc                      -> real CUDA, in namespace ht::gpu::cuda_impl;
//   host compiler + HT_SIMT   -> the SIMT emulator (simt/simt.h), in ht::gpu::simt_impl;
//   ... + HT_SIMT_COUNTED     -> the emulator's counting executor (simt/counters.h), in
//                                ht::gpu::simt_counted_impl, every access hooked.
// All link into one binary; the inline namespace keeps their symbols apart while the source
// says ht::gpu:: everywhere.
#pragma once

#if defined(HT_SIMT)
#include "simt/counters.h"
#include "simt/emulator.h"
#include "simt/simt.h"
#if defined(HT_SIMT_COUNTED)
#define HT_GPU_NS simt_counted_impl
#define HT_SIMT_COUNTING true
#else
#define HT_GPU_NS simt_impl
#define HT_SIMT_COUNTING false
#endif
#else
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#define HT_GPU_NS cuda_impl
#define HT_DYNAMIC_SHARED(type, name)                         \
  extern __shared__ __align__(16) unsigned char ht_smem_[];   \
  type* name = reinterpret_cast<type*>(ht_smem_)
#endif

#include "ground/dtype.h"
#include "ground/kernel_name.h"

// Full unrolling, where register arrays must stay in registers (indexed only by constants);
// HT_NO_UNROLL where one iteration's registers at a time must do (a loop of heavy, independent
// work that the compiler would otherwise interleave, and spill).
#if defined(__CUDACC__)
#define HT_UNROLL _Pragma("unroll")
#define HT_NO_UNROLL _Pragma("unroll 1")
#else
#define HT_UNROLL _Pragma("GCC unroll 64")
#define HT_NO_UNROLL _Pragma("GCC unroll 1")
#endif

#include <atomic>
#include <mutex>
#include <type_traits>
#include <utility>

namespace ht {
// Formats "CALL failed: ERROR (FILE:LINE)" and throws ht::Error (ground/error.h; declared here
// too so that nvcc-compiled kernels need not see fmt).
[[noreturn]] void call_failed(const char* call, const char* error, const char* file, int line);
}  // namespace ht

namespace ht::gpu::inline HT_GPU_NS {

// Temporary device memory in stream order, from the backend's caching allocator: memory a
// launcher takes here stays valid for all the work it queues before giving it back (the stream
// runs that work first; under graph capture the backend keeps it for the graph).
struct ScratchAllocator {
  void* context = nullptr;
  void* (*allocate)(void* context, std::size_t bytes) = nullptr;
  void (*release)(void* context, void* ptr) = nullptr;
};

// What a launcher needs to know about where it runs.
struct Stream {
  cudaStream_t handle = nullptr;
  int sm_count = 1;  // for sizing grid-stride grids
  bool fp8_wgmma = false;  // the FP8 GEMM may run on the Hopper GEMM (engine/gpu/gpu_backend.cpp says when)
  ScratchAllocator scratch;
};

// `count` floats of the stream's scratch memory, given back when this goes out of scope.
class ScratchFloats {
 public:
  ScratchFloats(const Stream& s, std::int64_t count) : scratch_(s.scratch) {
    if (count == 0) return;
    if (!scratch_.allocate) ht::call_failed("ScratchFloats", "this stream has no scratch allocator", __FILE__, __LINE__);
    data_ = static_cast<float*>(scratch_.allocate(scratch_.context, static_cast<std::size_t>(count) * sizeof(float)));
  }
  ~ScratchFloats() {
    if (data_) scratch_.release(scratch_.context, data_);
  }
  ScratchFloats(const ScratchFloats&) = delete;
  ScratchFloats& operator=(const ScratchFloats&) = delete;
  float* data() const { return data_; }

 private:
  ScratchAllocator scratch_;
  float* data_ = nullptr;
};

struct LaunchConfig {
  dim3 grid;
  dim3 block;
  std::size_t shared_bytes = 0;
};

// Something that watches every launch: `profile --measure` brackets each with CUDA events
// (engine/gpu/launch_timer.h). None unless one is set; one at a time, per executor.
struct LaunchObserver {
  virtual ~LaunchObserver() = default;
  virtual void before(const char* kernel, const Stream& stream) = 0;  // just before the launch is queued
  virtual void after(const Stream& stream) = 0;                       // just after
};
inline std::atomic<LaunchObserver*>& launch_observer() {
  static std::atomic<LaunchObserver*> observer{nullptr};
  return observer;
}

// The only way kernels are launched, so a call site reads the same for both executors.
// (Defined where kernels are compiled: nvcc, or the host compiler for the emulator.)
#if defined(HT_SIMT) || defined(__CUDACC__)
template <class... Params, class... Args>
void launch_kernel(const char* name, void (*kernel)(Params...), const LaunchConfig& cfg, const Stream& stream,
                   Args&&... args) {
  LaunchObserver* const observer = launch_observer().load(std::memory_order_acquire);
  if (observer) observer->before(name, stream);
#if defined(HT_SIMT)
  ht::emu::reach_stream(stream.handle);  // stream order: host work the stream held back comes first
  ht::emu::launch(name, reinterpret_cast<const void*>(kernel), cfg.grid, cfg.block, cfg.shared_bytes,
                  [kernel, params = std::tuple<Params...>(std::forward<Args>(args)...)] { std::apply(kernel, params); },
                  HT_SIMT_COUNTING);
#else
  kernel<<<cfg.grid, cfg.block, cfg.shared_bytes, stream.handle>>>(std::forward<Args>(args)...);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) ht::call_failed(name, cudaGetErrorString(e), __FILE__, __LINE__);
#endif
  if (observer) observer->after(stream);
}
#endif

// The dynamic shared memory every GPU allows a block without the opt-in below.
constexpr std::size_t kDefaultDynamicSharedBytes = 48 * 1024;
// Lets `kernel` be launched with more than 48 KiB of dynamic shared memory (the opt-in every
// GPU requires; the emulator refuses such a launch without it, as a GPU does).
template <class... Params> void allow_dynamic_shared(void (*kernel)(Params...), std::size_t bytes) {
#if defined(HT_SIMT)
  ht::emu::allow_dynamic_shared(reinterpret_cast<const void*>(kernel), bytes);
#elif defined(__CUDACC__)
  const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  if (e != cudaSuccess) ht::call_failed("cudaFuncSetAttribute(MaxDynamicSharedMemorySize)", cudaGetErrorString(e), __FILE__, __LINE__);
#endif
}
// The same, once per process, and only where kBytes is above the default.
template <auto kKernel, std::size_t kBytes> void allow_dynamic_shared_once() {
  if constexpr (kBytes > kDefaultDynamicSharedBytes) {
    static std::once_flag allowed;
    std::call_once(allowed, [] { allow_dynamic_shared(kKernel, kBytes); });
  }
}

// Blocks for a grid-stride loop over n elements: enough to fill the device, no more (8 blocks
// of 256 threads are an SM's 2048 threads).
inline unsigned grid_for(std::int64_t n, unsigned block, const Stream& s, unsigned blocks_per_sm = 8) {
  const std::int64_t needed = (n + block - 1) / block;
  const std::int64_t cap = static_cast<std::int64_t>(s.sm_count) * blocks_per_sm;
  return static_cast<unsigned>(std::max<std::int64_t>(1, std::min(needed, cap)));
}

// ---- element types -----------------------------------------------------------------------
// kPack consecutive elements loaded or stored as one access (16 bytes of fp32, 8 of fp16/bf16),
// for the element-wise kernels' main loops where every pointer is aligned to its pack.
constexpr int kPack = 4;
template <class T> struct alignas(sizeof(T) * kPack) Pack {
  T v[kPack];
};
template <class... T> bool packs_aligned(const T*... p) {
  return ((reinterpret_cast<std::uintptr_t>(p) % (sizeof(T) * kPack) == 0) && ...);
}

template <class T> __device__ __forceinline__ float to_float(T v);
template <> __device__ __forceinline__ float to_float<float>(float v) { return v; }
template <> __device__ __forceinline__ float to_float<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

// Rounds to nearest even, as the CPU reference does.
template <class T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// Calls f(std::type_identity<T>{}) with T the device type of `t`.
template <class F> void dispatch(DType t, F&& f) {
  switch (t) {
    case DType::f32: f(std::type_identity<float>{}); return;
    case DType::f16: f(std::type_identity<__half>{}); return;
    case DType::bf16: f(std::type_identity<__nv_bfloat16>{}); return;
    default: ht::call_failed("dispatch", "a float kernel given an integer dtype", __FILE__, __LINE__);
  }
}
// The same for a pair of dtypes (a cast's source and destination, an add's two operands).
template <class F> void dispatch2(DType a, DType b, F&& f) {
  dispatch(a, [&](auto ta) { dispatch(b, [&](auto tb) { f(ta, tb); }); });
}

}  // namespace ht::gpu::inline HT_GPU_NS

// A launch is named by the kernel's instantiation (`layernorm_kernel<__half>`), on both
// executors alike: the profile's rows, the counters' floors, a GPU's timed launches, errors.
namespace ht::gpu::inline HT_GPU_NS {
template <auto kKernel> const char* instantiated_kernel_name() {
  static const char* const name = ht::kernel_name_from_signature(__PRETTY_FUNCTION__);
  return name;
}
}  // namespace ht::gpu::inline HT_GPU_NS
#define HT_LAUNCH(kernel, cfg, stream, ...) \
  ::ht::gpu::launch_kernel(::ht::gpu::instantiated_kernel_name<kernel>(), kernel, cfg, stream, __VA_ARGS__)
#if defined(HT_SIMT)
// A kernel's expf, which the GPU runs on its special-function units (MUFU.EX2): the counting
// executor counts each call for the model's special-function term (bench/gpu_model.h). Kernels
// call expf unqualified, so inside this namespace they find this one.
namespace ht::gpu::inline HT_GPU_NS {
inline float expf(float x) {
  if constexpr (HT_SIMT_COUNTING) ht::emu::count_special_functions(1);
  return ::expf(x);
}
}  // namespace ht::gpu::inline HT_GPU_NS
#endif
