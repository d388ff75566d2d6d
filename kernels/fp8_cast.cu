// FP8's cast (kernels/fp8_cast.h): 32x32 tiles, a block of 32x8 threads a tile. Each thread
// converts four elements of the tile's rows, writes their codes row-major (a warp a 32-byte row
// segment) and into a shared tile, from which the transpose is written row-major too; the
// magnitudes' largest bit pattern is reduced over the warp and folded into *amax with one
// atomicMax a warp; the saturated elements are counted with one atomicAdd a warp. Without out,
// only the amax is taken.
#include "kernels/launch.h"

namespace ht::gpu::inline HT_GPU_NS {

namespace {

constexpr int kTile = 32;
constexpr int kRowsPerPass = 8;                 // blockDim.y
constexpr int kBlock = kTile * kRowsPerPass;
constexpr int kPitch = kTile + 4;               // bytes a shared row: the transposed reads spread over the banks

// x: (rows, cols) bf16 -> out: (rows, cols) u8 codes, out_t: (cols, rows) u8 codes or null,
// amax: (1) fp32 (as its bits) or null; scale: (1) fp32.
__global__ void __launch_bounds__(kBlock) fp8_cast_kernel(const __nv_bfloat16* __restrict__ x, std::int64_t rows,
                                                          std::int64_t cols, const float* __restrict__ scale, Fp8Kind kind,
                                                          std::uint8_t* __restrict__ out, std::uint8_t* __restrict__ out_t,
                                                          float* __restrict__ amax,
                                                          std::uint32_t* __restrict__ saturated) {
  __shared__ std::uint8_t tile[kTile][kPitch];
  const std::int64_t r0 = std::int64_t{blockIdx.y} * kTile, c0 = std::int64_t{blockIdx.x} * kTile;
  const float s = out ? *scale : 1.0f;
  const Fp8Format f = fp8_format(kind);
  std::uint32_t largest = 0, clipped = 0;
  for (int i = threadIdx.y; i < kTile; i += kRowsPerPass) {
    const std::int64_t r = r0 + i, c = c0 + threadIdx.x;
    if (r < rows && c < cols) {
      const float v = __bfloat162float(x[r * cols + c]);
      largest = largest > magnitude_bits(v) ? largest : magnitude_bits(v);
      if (!out) continue;
      clipped += fp8_saturates(v * s, kind) ? 1u : 0u;
      const std::uint8_t code = f32_to_fp8_bits(v * s, f);
      out[r * cols + c] = code;
      tile[i][threadIdx.x] = code;
    }
  }
  if (out && out_t) {
    __syncthreads();
    for (int j = threadIdx.y; j < kTile; j += kRowsPerPass) {
      const std::int64_t c = c0 + j, r = r0 + threadIdx.x;
      if (r < rows && c < cols) out_t[c * rows + r] = tile[threadIdx.x][j];
    }
  }
  if (amax) {
    for (int offset = 16; offset > 0; offset >>= 1) {
      const std::uint32_t other = __shfl_xor_sync(0xffffffffu, largest, offset);
      largest = largest > other ? largest : other;
    }
    if (threadIdx.x == 0) atomicMax(reinterpret_cast<unsigned int*>(amax), static_cast<unsigned int>(largest));
  }
  if (out && saturated) {
    for (int offset = 16; offset > 0; offset >>= 1) clipped += __shfl_xor_sync(0xffffffffu, clipped, offset);
    if (threadIdx.x == 0 && clipped) atomicAdd(saturated, clipped);
  }
}

}  // namespace

void launch_fp8_cast(const Fp8CastArgs& a, const Stream& s) {
  if (a.rows == 0 || a.cols == 0) return;
  const dim3 grid(static_cast<unsigned>((a.cols + kTile - 1) / kTile), static_cast<unsigned>((a.rows + kTile - 1) / kTile));
  if (grid.y > 65535u) ht::call_failed("fp8_cast", "more rows than the kernel's grid takes (65535 tiles of 32)", __FILE__, __LINE__);
  HT_LAUNCH(fp8_cast_kernel, (LaunchConfig{grid, dim3(kTile, kRowsPerPass)}), s, static_cast<const __nv_bfloat16*>(a.x),
            a.rows, a.cols, a.scale, a.kind, a.out, a.out_t, a.amax, a.saturated);
}

}  // namespace ht::gpu::inline HT_GPU_NS
