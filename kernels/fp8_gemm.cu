// The FP8 GEMM (kernels/fp8_gemm.h) on CUDA cores: the arithmetic's definition as a kernel, on
// any GPU and the emulator. 32x32 output tiles, a block of 16x16 threads; each thread owns two
// rows (ty, ty + 16) and two adjacent columns (2tx, 2tx + 1) of the tile, and adds their
// products in ascending k from K-steps of 32 that the block widens into shared memory. The
// epilogue is the tensor-core GEMMs' (kernels/gemm_epilogue.cuh), in bf16.
#include "kernels/gemm_epilogue.cuh"
#include "kernels/launch.h"

namespace ht::gpu::inline HT_GPU_NS {

namespace {

constexpr int kTile = 32, kSide = 16, kThreads = kSide * kSide;

// a: (M, K) codes, b: (N, K) codes -> the epilogue's outputs (p); scale_inv: (1) fp32 each.
__global__ void __launch_bounds__(kThreads)
    fp8_gemm_kernel(const std::uint8_t* __restrict__ a, const std::uint8_t* __restrict__ b, Fp8Kind a_kind,
                    Fp8Kind b_kind, const float* __restrict__ a_scale_inv, const float* __restrict__ b_scale_inv,
                    gemm_epilogue::Params p) {
  __shared__ float as[kTile][kTile + 1], bs[kTile][kTile + 1];  // [row][k], [col][k]
  const Fp8Format fa = fp8_format(a_kind), fb = fp8_format(b_kind);
  const std::int64_t m0 = std::int64_t{blockIdx.y} * kTile, n0 = std::int64_t{blockIdx.x} * kTile;
  const int tx = threadIdx.x, ty = threadIdx.y, t = ty * kSide + tx;
  float acc[2][2] = {};
  for (std::int64_t k0 = 0; k0 < p.K; k0 += kTile) {
    for (int e = t; e < kTile * kTile; e += kThreads) {
      const int r = e / kTile, k = e % kTile;
      const bool in_k = k0 + k < p.K;
      as[r][k] = m0 + r < p.M && in_k ? fp8_bits_to_f32(a[(m0 + r) * p.K + k0 + k], fa) : 0.0f;
      bs[r][k] = n0 + r < p.N && in_k ? fp8_bits_to_f32(b[(n0 + r) * p.K + k0 + k], fb) : 0.0f;
    }
    __syncthreads();
    for (int k = 0; k < kTile; ++k)
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) acc[i][j] += as[ty + kSide * i][k] * bs[2 * tx + j][k];  // exact products
    __syncthreads();
  }
  const float alpha = *a_scale_inv * *b_scale_inv;
  for (int i = 0; i < 2; ++i)
    gemm_epilogue::store_pair<__nv_bfloat16>(p, m0 + ty + kSide * i, n0 + 2 * tx, acc[i][0] * alpha, acc[i][1] * alpha);
}

}  // namespace

void launch_fp8_gemm(const Fp8GemmArgs& a, const Stream& s) {
  if (a.M == 0 || a.N == 0) return;
  if (s.fp8_wgmma && fp8_gemm_wgmma_supports(a)) {  // Hopper: the wgmma GEMM's FP8 form
    launch_fp8_gemm_wgmma(a, s);
    return;
  }
  const gemm_epilogue::Params p = gemm_epilogue::fp8_gemm_params(a);  // (the scales: read by the kernel itself)
  const TileGrid grid = tile_grid(a.N, a.M, kTile, kTile);  // N's tiles in x, M's in y
  if (grid.y > 65535u) ht::call_failed("fp8_gemm", "more rows than the kernel's grid takes (65535 tiles of 32)", __FILE__, __LINE__);
  HT_LAUNCH(fp8_gemm_kernel, (LaunchConfig{dim3(grid.x, grid.y), dim3(kSide, kSide)}), s, a.a, a.b, a.a_kind, a.b_kind,
            a.a_scale_inv, a.b_scale_inv, p);
}

}  // namespace ht::gpu::inline HT_GPU_NS
