// Access patterns with known counts, for the emulator's counting executor (simt/counters.h):
// built only as the counting executor's code (tests/CMakeLists.txt), one warp or one block each.
#include "kernels/gpu.h"
#include "kernels/ptx.cuh"
#include "simt/runtime.h"
#include "tests/counter_kernels.h"

#include "ground/error.h"

namespace ht::gpu::inline HT_GPU_NS {

namespace {

// in, out: (32 * 32) float; one warp.
__global__ void coalesced_kernel(const float* in, float* out) { out[threadIdx.x] = 2.0f * in[threadIdx.x]; }
__global__ void coalesced4_kernel(const float4* in, float* out) {
  const float4 v = in[threadIdx.x];
  out[threadIdx.x] = v.x + v.y + v.z + v.w;
}
__global__ void strided_kernel(const float* in, float* out) { out[threadIdx.x] = in[32 * threadIdx.x]; }
__global__ void broadcast_kernel(const float* in, float* out) { out[threadIdx.x] = in[0]; }

// in, out: (32, 32) float; block (32, 32): rows stored, columns read back (a transpose).
template <int kPitch> __global__ void transpose_kernel(const float* in, float* out) {
  __shared__ float tile[32][kPitch];
  tile[threadIdx.y][threadIdx.x] = in[threadIdx.y * 32 + threadIdx.x];
  __syncthreads();
  out[threadIdx.y * 32 + threadIdx.x] = tile[threadIdx.x][threadIdx.y];
}

// out: (32) float; one warp reads 32 float2 of one shared row (256 bytes: two phases).
__global__ void float2_rows_kernel(const float* in, float* out) {
  __shared__ float2 row[32];
  row[threadIdx.x] = make_float2(in[threadIdx.x], 1.0f);
  __syncwarp();
  const float2 v = row[threadIdx.x];
  out[threadIdx.x] = v.x + v.y;
}

// out: (32 * 4) uint; 8 rows of 64 halves (128 bytes) in dynamic shared memory; lanes 8j..8j+7
// give row l % 8 of matrix j, which holds columns 8j..8j+7 - chunk j, XOR-swizzled by the row.
template <bool kSwizzle> __global__ void ldmatrix_kernel(std::uint32_t* out) {
  HT_DYNAMIC_SHARED(__half, rows);
  for (int i = threadIdx.x; i < 8 * 64; i += 32) rows[i] = __float2half(static_cast<float>(i));
  __syncwarp();
  const int lane = threadIdx.x, r = lane % 8, chunk = lane / 8;
  const int stored = kSwizzle ? (chunk ^ r) : chunk;
  std::uint32_t regs[4];
  ldmatrix<4, false>(regs, rows + r * 64 + stored * 8);
  for (int j = 0; j < 4; ++j) out[j * 32 + lane] = regs[j];
}

template <class T> T* device_buffer(std::size_t n) {
  void* p = nullptr;
  HT_CHECK(emu::cudaMalloc(&p, n * sizeof(T)) == cudaSuccess, "counter test: cudaMalloc");
  HT_CHECK(emu::cudaMemset(p, 0, n * sizeof(T)) == cudaSuccess, "counter test: cudaMemset");
  return static_cast<T*>(p);
}

}  // namespace

void run_pattern(Pattern p) {
  const Stream stream{};
  float* in = device_buffer<float>(32 * 32 * 4);
  float* out = device_buffer<float>(32 * 32 * 4);
  const LaunchConfig warp{.grid = dim3(1), .block = dim3(32)};
  const LaunchConfig tile{.grid = dim3(1), .block = dim3(32, 32)};
  switch (p) {
    case Pattern::coalesced_float: launch_kernel("coalesced_kernel", coalesced_kernel, warp, stream, in, out); break;
    case Pattern::coalesced_float4:
      launch_kernel("coalesced4_kernel", coalesced4_kernel, warp, stream, reinterpret_cast<const float4*>(in), out);
      break;
    case Pattern::strided_float: launch_kernel("strided_kernel", strided_kernel, warp, stream, in, out); break;
    case Pattern::broadcast_float: launch_kernel("broadcast_kernel", broadcast_kernel, warp, stream, in, out); break;
    case Pattern::transpose_unpadded: launch_kernel("transpose_kernel<32>", transpose_kernel<32>, tile, stream, in, out); break;
    case Pattern::transpose_padded: launch_kernel("transpose_kernel<33>", transpose_kernel<33>, tile, stream, in, out); break;
    case Pattern::shared_float2_rows: launch_kernel("float2_rows_kernel", float2_rows_kernel, warp, stream, in, out); break;
    case Pattern::ldmatrix_x4_swizzled:
    case Pattern::ldmatrix_x4_unswizzled: {
      const LaunchConfig cfg{.grid = dim3(1), .block = dim3(32), .shared_bytes = 8 * 64 * sizeof(__half)};
      auto* regs = reinterpret_cast<std::uint32_t*>(out);
      if (p == Pattern::ldmatrix_x4_swizzled) launch_kernel("ldmatrix_kernel<swizzled>", ldmatrix_kernel<true>, cfg, stream, regs);
      else launch_kernel("ldmatrix_kernel<unswizzled>", ldmatrix_kernel<false>, cfg, stream, regs);
      break;
    }
  }
  HT_CHECK(emu::cudaFree(in) == cudaSuccess && emu::cudaFree(out) == cudaSuccess, "counter test: cudaFree");
}

}  // namespace ht::gpu::inline HT_GPU_NS
