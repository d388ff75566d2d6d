// The plain tiled GEMM (CUDA cores, FP32 accumulation) for the three layouts of a linear layer.
// It is the simple, obviously-correct baseline the tensor-core kernels (kernels/gemm_mma.cu)
// are measured against, and what trains end to end before they run.
//
// A 64×64 tile of C per block of 256 threads; each thread owns a 4×4 set of outputs strided
// by 16 (rows ty + 16i, cols tx + 16j), so shared-memory reads are conflict-free and the
// stores coalesce. K advances 16 at a time through shared memory; loads are predicated, so
// any M, N, K works.
#include "kernels/launch.h"

namespace ht::gpu::inline HT_GPU_NS {

namespace {

constexpr int kTile = 64, kStep = 16, kThreads = 256;

// Element (m, k) of op(A) and (k, n) of op(B), per layout (see kernels/gemm.h).
template <GemmOp kOp, class T>
__device__ __forceinline__ float load_a(const T* a, std::int64_t m, std::int64_t k, std::int64_t M, std::int64_t K) {
  return to_float(kOp == GemmOp::tn ? a[k * M + m] : a[m * K + k]);
}
template <GemmOp kOp, class T>
__device__ __forceinline__ float load_b(const T* b, std::int64_t k, std::int64_t n, std::int64_t N, std::int64_t K) {
  return to_float(kOp == GemmOp::nt ? b[n * K + k] : b[k * N + n]);
}

// a: (M, K) or (K, M) for tn; b: (N, K) for nt or (K, N); c: (M, N) fp32, c = a·b + beta·c.
template <class T, GemmOp kOp>
__global__ void __launch_bounds__(kThreads) gemm_tiled_kernel(const T* __restrict__ a, const T* __restrict__ b,
                                                              float* __restrict__ c, std::int64_t M, std::int64_t N,
                                                              std::int64_t K, float beta) {
  __shared__ float a_tile[kStep][kTile];  // [k][m]
  __shared__ float b_tile[kStep][kTile];  // [k][n]
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const std::int64_t m0 = std::int64_t{blockIdx.x} * kTile, n0 = std::int64_t{blockIdx.y} * kTile;  // tile_grid
  float acc[4][4] = {};

  for (std::int64_t k0 = 0; k0 < K; k0 += kStep) {
    // Each thread loads 4 elements of each tile. The fast-moving index follows the operand's
    // contiguous dimension so that global loads coalesce.
    for (int e = threadIdx.x; e < kTile * kStep; e += kThreads) {
      const bool a_k_fast = kOp != GemmOp::tn;
      const int mm = a_k_fast ? e / kStep : e % kTile, ak = a_k_fast ? e % kStep : e / kTile;
      const std::int64_t m = m0 + mm, k = k0 + ak;
      a_tile[ak][mm] = m < M && k < K ? load_a<kOp>(a, m, k, M, K) : 0.0f;
      const bool b_k_fast = kOp == GemmOp::nt;
      const int nn = b_k_fast ? e / kStep : e % kTile, bk = b_k_fast ? e % kStep : e / kTile;
      const std::int64_t n = n0 + nn, kb = k0 + bk;
      b_tile[bk][nn] = n < N && kb < K ? load_b<kOp>(b, kb, n, N, K) : 0.0f;
    }
    __syncthreads();
    for (int k = 0; k < kStep; ++k) {
      float av[4], bv[4];
      for (int i = 0; i < 4; ++i) av[i] = a_tile[k][ty + 16 * i];
      for (int j = 0; j < 4; ++j) bv[j] = b_tile[k][tx + 16 * j];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] += av[i] * bv[j];
    }
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i) {
    const std::int64_t m = m0 + ty + 16 * i;
    if (m >= M) continue;
    for (int j = 0; j < 4; ++j) {
      const std::int64_t n = n0 + tx + 16 * j;
      if (n >= N) continue;
      float* out = c + m * N + n;
      *out = beta == 0.0f ? acc[i][j] : acc[i][j] + beta * *out;
    }
  }
}

}  // namespace

void launch_gemm_tiled(const GemmArgs& g, const Stream& s) {
  if (g.M == 0 || g.N == 0) return;
  const TileGrid tiles = tile_grid(g.M, g.N, kTile, kTile);
  const LaunchConfig cfg{dim3(tiles.x, tiles.y), kThreads};
  dispatch(g.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* a = static_cast<const T*>(g.a);
    const T* b = static_cast<const T*>(g.b);
    switch (g.op) {
      case GemmOp::nt: HT_LAUNCH((gemm_tiled_kernel<T, GemmOp::nt>), cfg, s, a, b, g.c, g.M, g.N, g.K, g.beta); break;
      case GemmOp::nn: HT_LAUNCH((gemm_tiled_kernel<T, GemmOp::nn>), cfg, s, a, b, g.c, g.M, g.N, g.K, g.beta); break;
      case GemmOp::tn: HT_LAUNCH((gemm_tiled_kernel<T, GemmOp::tn>), cfg, s, a, b, g.c, g.M, g.N, g.K, g.beta); break;
    }
  });
}

}  // namespace ht::gpu::inline HT_GPU_NS
