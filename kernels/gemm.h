// GEMM for the three products of a linear layer y = x·Wᵀ + b, all row-major, FP32 accumulation:
//   nt (forward)        C(M,N) = A(M,K) · B(N,K)ᵀ     y  = x · Wᵀ
//   nn (input grad)     C(M,N) = A(M,K) · B(K,N)      dx = dz · W
//   tn (weight grad)    C(M,N) = A(K,M)ᵀ · B(K,N)     dW += dzᵀ · x
// C is FP32 and C = A·B + beta·C with beta 0 or 1 (1 accumulates into the FP32 gradient arena).
#pragma once

#include "ground/dtype.h"

#include <cstdint>

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

// CPU backend: widens inputs to fp32 (exactly) and calls OpenBLAS sgemm.
void gemm_ref(const GemmArgs& a);

}  // namespace ht
