// GEMM for the three products of a linear layer y = x·Wᵀ + b, all row-major, FP32 accumulation:
//   nt (forward)        C(M,N) = A(M,K) · B(N,K)ᵀ     y  = x · Wᵀ
//   nn (input grad)     C(M,N) = A(M,K) · B(K,N)      dx = dz · W
//   tn (weight grad)    C(M,N) = A(K,M)ᵀ · B(K,N)     dW += dzᵀ · x
// C is FP32 and C = A·B + beta·C with beta 0 or 1 (1 accumulates into the FP32 gradient arena).
#pragma once

#include "ground/dtype.h"

#include <cstdint>
#include <vector>

namespace ht {

enum class GemmOp : std::int32_t { nt, nn, tn };

struct GemmArgs {
  GemmOp op = GemmOp::nt;
  std::int64_t M = 0, N = 0, K = 0;
  const void* a = nullptr;  // dtype, shape as above
  const void* b = nullptr;  // dtype, shape as above
  DType dtype = DType::f32;
  float* c = nullptr;       // (M, N) fp32
  float beta = 0;           // 0 or 1
};

// The grid of a tiled GEMM kernel: M's tiles in grid.x (up to 2^31 - 1, so any batch fits) and
// N's in grid.y (at most 65535 on every GPU). Throws when the product has more tiles than that.
struct TileGrid {
  std::uint32_t x, y;
};
TileGrid tile_grid(std::int64_t M, std::int64_t N, int tile_m, int tile_n);

// The products Y = X·Wᵀ (M rows, N outputs, K inputs) that reach every path of the Hopper GEMM
// (kernels/gemm_wgmma.cu) on a GPU of `sms` SMs: 128-wide tiles, one a block; 256-wide tiles,
// about two a block (M = 128·(SMs + 3), N = 512); 128-wide tiles, more than the grid
// (M = 128·(SMs + 1), N = 384). K = 136 is three K-tiles, the last partial, so the stage ring's
// phase carries across tiles at both widths (4 and 6 stages). The backend's start-up self-check
// runs them against mma.sync (engine/gpu/wgmma_self_check.cpp), the emulator's test against FP64.
struct GemmShape {
  std::int64_t M, N, K;
};
inline std::vector<GemmShape> wgmma_check_shapes(int sms) {
  return {{200, 136, 264}, {128 * std::int64_t{sms + 3}, 512, 136}, {128 * std::int64_t{sms + 1}, 384, 136}};
}

// CPU backend: widens inputs to fp32 (exactly) and calls OpenBLAS sgemm.
void gemm_ref(const GemmArgs& a);

}  // namespace ht
