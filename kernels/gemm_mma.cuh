// The Ampere-style tensor-core GEMM (sm_80 and later, and the SIMT emulator), shared by the
// fp16 and bf16 instantiation files. docs/gemm.md describes the design; in short:
//
//   block tile 128×128, K step 32, 4 warps (2×2), each warp a 64×64 tile of mma.sync
//   m16n8k16 (4×8 of them per 16-wide K slice), FP32 accumulators in registers;
//   operand tiles stream global -> shared through a 3-stage cp.async pipeline, 16 bytes per
//   copy, into XOR-swizzled shared memory that ldmatrix reads without bank conflicts;
//   tails in M, N and K are zero-filled; when a contiguous dimension is not a multiple of 8
//   (or a pointer not 16-byte aligned) the tiles are loaded element by element instead;
//   the epilogue (kernels/linear_gemm.h) runs on the accumulators before anything is stored.
#pragma once

#include "kernels/gemm_epilogue.cuh"
#include "kernels/launch.h"
#include "kernels/ptx.cuh"
#include "kernels/reduce.cuh"

#include <algorithm>

namespace ht::gpu::inline HT_GPU_NS {

namespace mma_gemm {

using gemm_epilogue::Params;
using gemm_epilogue::gemm_params;
using gemm_epilogue::store_pair;

constexpr int kBM = 128, kBN = 128, kBK = 32, kStages = 3, kThreads = 128;
constexpr int kWarpM = 64, kWarpN = 64;
constexpr int kMTiles = kWarpM / 16, kNTiles = kWarpN / 8;  // mma tiles per warp
constexpr int kTileElems = kBM * kBK;                        // one operand tile (both operands are 128×32)
constexpr std::size_t kSharedBytes = std::size_t{kStages} * 2 * kTileElems * 2;  // fp16/bf16

// A tile is stored "k-major" ([128 rows of M or N][32 of K], the operand's K is contiguous in
// global memory) or "mn-major" ([32 rows of K][128 of M or N]). 16-byte chunks are XOR-swizzled
// so that the 8 rows an ldmatrix reads fall in 8 different bank groups.
__device__ __forceinline__ int kmajor_offset(int row, int k) {  // row < 128, k < 32; elements
  return row * kBK + (((k >> 3) ^ ((row >> 1) & 3)) << 3) + (k & 7);
}
__device__ __forceinline__ int mnmajor_offset(int k, int col) {  // k < 32, col < 128
  return k * kBM + (((col >> 3) ^ (k & 7)) << 3) + (col & 7);
}

// Loads one 128×32 operand tile into shared memory: 512 chunks of 8 elements, 4 per thread.
// rows/cols are the block's origin in the operand's own (stored) layout; stored is (R, C) with
// C contiguous; k_major says whether C is the K dimension.
template <class T, bool kKMajor>
__device__ __forceinline__ void load_tile(T* tile, const T* src, std::int64_t R, std::int64_t C, std::int64_t row0,
                                          std::int64_t col0, bool vector_loads) {
  constexpr int kChunksPerRow = kKMajor ? kBK / 8 : kBM / 8;  // 4 (k-major) or 16 (mn-major)
  HT_UNROLL
  for (int i = 0; i < 4; ++i) {
    const int q = threadIdx.x + i * kThreads;
    const int r = q / kChunksPerRow, c = (q % kChunksPerRow) * 8;
    T* dst = tile + (kKMajor ? kmajor_offset(r, c) : mnmajor_offset(r, c));
    const std::int64_t gr = row0 + r, gc = col0 + c;
    if (vector_loads) {
      const bool valid = gr < R && gc < C;  // C % 8 == 0 here, so a chunk is all in or all out
      cp_async_16(dst, valid ? src + gr * C + gc : src, valid ? 16 : 0);
    } else {
      for (int e = 0; e < 8; ++e)
        dst[e] = gr < R && gc + e < C ? src[gr * C + gc + e] : from_float<T>(0.0f);
    }
  }
}

// C(M,N) = op(A)·op(B) with the epilogue; see kernels/gemm.h for the three layouts.
template <class T, GemmOp kOp>
__global__ void __launch_bounds__(kThreads) gemm_mma_kernel(Params p) {
  constexpr bool kAKMajor = kOp != GemmOp::tn;  // A (M,K) row-major for nt and nn, (K,M) for tn
  constexpr bool kBKMajor = kOp == GemmOp::nt;  // B (N,K) row-major for nt, (K,N) otherwise
  HT_DYNAMIC_SHARED(T, smem);  // [stage][A tile, B tile]
  const T* a = static_cast<const T*>(p.a);
  const T* b = static_cast<const T*>(p.b);
  const std::int64_t m_block = std::int64_t{blockIdx.x} * kBM, n_block = std::int64_t{blockIdx.y} * kBN;  // tile_grid
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int warp_m = (warp / 2) * kWarpM, warp_n = (warp % 2) * kWarpN;
  const bool vec = p.vector_loads != 0;

  auto load_stage = [&](int stage, std::int64_t k0) {
    T* a_tile = smem + stage * 2 * kTileElems;
    T* b_tile = a_tile + kTileElems;
    if constexpr (kAKMajor) load_tile<T, true>(a_tile, a, p.M, p.K, m_block, k0, vec);
    else load_tile<T, false>(a_tile, a, p.K, p.M, k0, m_block, vec);
    if constexpr (kBKMajor) load_tile<T, true>(b_tile, b, p.N, p.K, n_block, k0, vec);
    else load_tile<T, false>(b_tile, b, p.K, p.N, k0, n_block, vec);
  };

  float acc[kMTiles][kNTiles][4];
  HT_UNROLL
  for (int i = 0; i < kMTiles; ++i)
    HT_UNROLL
    for (int j = 0; j < kNTiles; ++j)
      HT_UNROLL
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

  // This block's slice of K (all of it unless split: launch's split_k), whole K-tiles.
  const std::int64_t k_begin = std::int64_t{blockIdx.z} * p.k_split;
  const std::int64_t k_tiles = ((p.K < k_begin + p.k_split ? p.K : k_begin + p.k_split) - k_begin + kBK - 1) / kBK;
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < k_tiles) load_stage(s, k_begin + s * kBK);
    cp_async_commit();
  }

  const int ld_row = lane % 8, ld_matrix = lane / 8;  // ldmatrix: this lane's row and matrix
  for (std::int64_t kt = 0; kt < k_tiles; ++kt) {
    cp_async_wait<kStages - 2>();  // tile kt has landed (for this thread) ...
    __syncthreads();               // ... for every thread; and stage (kt - 1) % kStages is free
    const std::int64_t next = kt + kStages - 1;
    if (next < k_tiles) load_stage(static_cast<int>(next % kStages), k_begin + next * kBK);
    cp_async_commit();

    const T* a_tile = smem + (kt % kStages) * 2 * kTileElems;
    const T* b_tile = a_tile + kTileElems;
    HT_UNROLL
    for (int kk = 0; kk < kBK; kk += 16) {
      std::uint32_t af[kMTiles][4], bf[kNTiles][2];
      HT_UNROLL
      for (int i = 0; i < kMTiles; ++i) {
        const int m0 = warp_m + 16 * i;
        if constexpr (kAKMajor) {  // matrices (m0, kk), (m0+8, kk), (m0, kk+8), (m0+8, kk+8)
          ldmatrix<4, false>(af[i], a_tile + kmajor_offset(m0 + ld_row + 8 * (ld_matrix & 1), kk + 8 * (ld_matrix >> 1)));
        } else {  // stored [k][m]: the same four matrices, read transposed
          ldmatrix<4, true>(af[i], a_tile + mnmajor_offset(kk + ld_row + 8 * (ld_matrix >> 1), m0 + 8 * (ld_matrix & 1)));
        }
      }
      HT_UNROLL
      for (int j = 0; j < kNTiles; j += 2) {
        const int n0 = warp_n + 8 * j;
        std::uint32_t r[4];
        if constexpr (kBKMajor) {  // stored [n][k]: matrices (n0, kk), (n0, kk+8), (n0+8, kk), (n0+8, kk+8)
          ldmatrix<4, false>(r, b_tile + kmajor_offset(n0 + ld_row + 8 * (ld_matrix >> 1), kk + 8 * (ld_matrix & 1)));
        } else {  // stored [k][n], read transposed
          ldmatrix<4, true>(r, b_tile + mnmajor_offset(kk + ld_row + 8 * (ld_matrix & 1), n0 + 8 * (ld_matrix >> 1)));
        }
        bf[j][0] = r[0];
        bf[j][1] = r[1];
        bf[j + 1][0] = r[2];
        bf[j + 1][1] = r[3];
      }
      HT_UNROLL
      for (int i = 0; i < kMTiles; ++i)
        HT_UNROLL
        for (int j = 0; j < kNTiles; ++j) mma_m16n8k16<T>(acc[i][j], af[i], bf[j], acc[i][j]);
    }
  }
  cp_async_wait<0>();

  const int g = lane / 4, t = lane % 4;
  HT_UNROLL
  for (int i = 0; i < kMTiles; ++i)
    HT_UNROLL
    for (int j = 0; j < kNTiles; ++j) {
      const std::int64_t m = m_block + warp_m + 16 * i + g, n = n_block + warp_n + 8 * j + 2 * t;
      store_pair<T>(p, m, n, acc[i][j][0], acc[i][j][1]);
      store_pair<T>(p, m + 8, n, acc[i][j][2], acc[i][j][3]);
    }
}

// Can the 16-byte cp.async path load these operands? (The contiguous dimension of each stored
// operand a multiple of 8 elements, and both base pointers 16-byte aligned.)
inline bool vector_loads_ok(const GemmArgs& g) {
  const std::int64_t a_contiguous = g.op == GemmOp::tn ? g.M : g.K;
  const std::int64_t b_contiguous = g.op == GemmOp::nt ? g.K : g.N;
  return a_contiguous % 8 == 0 && b_contiguous % 8 == 0 && reinterpret_cast<std::uintptr_t>(g.a) % 16 == 0 &&
         reinterpret_cast<std::uintptr_t>(g.b) % 16 == 0;
}

// Split-K, for the weight-gradient product (tn, FP32 accumulated into the arena): where its tiles
// would leave most SMs idle (a layer's dW is a few 128×128 tiles over K = the step's rows), K is
// cut into up to 16 slices of at least 4 K-tiles, each block's FP32 partial goes to a workspace,
// and sum_slices (kernels/reduce.cuh) adds them in slice order - deterministic, as everything in the step.
// The split depends on the shape alone, sized for kSplitBlocks blocks (about one an SM on the GPUs
// halftape targets: 108 on an A100, 114-132 on an H100/H200), never on the SM count of the GPU at
// hand: an H100 PCIe, an SXM and the emulator give the same bits.
constexpr std::int64_t kSplitBlocks = 128;
struct SplitK {
  int slices = 1;            // 1: no split
  std::int64_t k_split = 0;  // K elements a slice (whole K-tiles; the last slice may be shorter)
};
inline SplitK split_k(const LinearGemmArgs& args) {
  const GemmArgs& g = args.gemm;
  if (g.op != GemmOp::tn || args.epilogue != Epilogue::store_f32) return {};
  const std::int64_t tiles = (g.M + kBM - 1) / kBM * ((g.N + kBN - 1) / kBN), k_tiles = (g.K + kBK - 1) / kBK;
  if (2 * tiles > kSplitBlocks) return {};
  const std::int64_t slices = std::min<std::int64_t>({kSplitBlocks / tiles, k_tiles / 4, 16});
  if (slices < 2) return {};
  const std::int64_t per = (k_tiles + slices - 1) / slices;  // K-tiles a slice
  return {static_cast<int>((k_tiles + per - 1) / per), per * kBK};
}

template <class T> void launch(const LinearGemmArgs& args, const Stream& s) {
  const GemmArgs& g = args.gemm;
  Params p = gemm_params(args);
  p.vector_loads = vector_loads_ok(g) ? 1 : 0;
  const TileGrid tiles = tile_grid(g.M, g.N, kBM, kBN);
  const SplitK split = split_k(args);
  const int slices = split.slices;
  const ScratchFloats partials(s, slices > 1 ? slices * g.M * g.N : 0);  // (slices, M, N)
  if (slices > 1) {
    p.k_split = split.k_split;
    p.c = partials.data();
    p.beta = 0;
    p.c_split_stride = g.M * g.N;
  }
  const LaunchConfig cfg{dim3(tiles.x, tiles.y, static_cast<unsigned>(slices)), kThreads, kSharedBytes};
  switch (g.op) {
    case GemmOp::nt: HT_LAUNCH((gemm_mma_kernel<T, GemmOp::nt>), cfg, s, p); break;
    case GemmOp::nn: HT_LAUNCH((gemm_mma_kernel<T, GemmOp::nn>), cfg, s, p); break;
    case GemmOp::tn: HT_LAUNCH((gemm_mma_kernel<T, GemmOp::tn>), cfg, s, p); break;
  }
  if (slices > 1) launch_sum_slices<1>(partials.data(), slices, g.M * g.N, {{g.c}}, g.beta, s);
}

}  // namespace mma_gemm

}  // namespace ht::gpu::inline HT_GPU_NS
