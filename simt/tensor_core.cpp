// Host implementations of the warp-wide tensor-core instructions, following the fragment
// layouts of the PTX ISA ("Matrix fragments for mma.m16n8k16" and "ldmatrix"). Each runs as a
// computing warp collective: every lane hands in its registers, the last to arrive computes
// the whole warp's result.
#include "ground/error.h"
#include "simt/counters.h"
#include "simt/racecheck.h"
#include "simt/simt.h"

#include <cstring>

namespace ht::emu {

namespace {

constexpr unsigned kFullMask = 0xffffffffu;

std::uint16_t lo16(std::uint32_t r) { return static_cast<std::uint16_t>(r & 0xffffu); }
std::uint16_t hi16(std::uint32_t r) { return static_cast<std::uint16_t>(r >> 16); }

template <bool kBf16> float widen(std::uint16_t bits) {
  if constexpr (kBf16) {
    __nv_bfloat16_raw raw;
    raw.x = bits;
    return __bfloat162float(__nv_bfloat16(raw));
  } else {
    __half_raw raw;
    raw.x = bits;
    return __half2float(__half(raw));
  }
}

struct MmaLane {
  std::uint32_t a[4];
  std::uint32_t b[2];
  float c[4];
};

// mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32: D(16x8) = A(16x16)·B(16x8) + C.
// Lane l holds, with g = l / 4 and t = l % 4:
//   A: a0 = (g, 2t..2t+1), a1 = (g+8, 2t..2t+1), a2 = (g, 2t+8..2t+9), a3 = (g+8, 2t+8..2t+9)
//   B: b0 = (k 2t..2t+1, n g), b1 = (k 2t+8..2t+9, n g)
//   C, D: c0 = (g, 2t), c1 = (g, 2t+1), c2 = (g+8, 2t), c3 = (g+8, 2t+1)
// (the lower-indexed element of a pair in the low 16 bits). Products of 16-bit inputs are exact
// in FP32; the sum is formed in double and rounded once.
template <bool kBf16> void mma_compute(const LaneData* in, LaneData* out, unsigned) {
  float A[16][16], B[16][8], C[16][8];
  for (int l = 0; l < 32; ++l) {
    MmaLane v;
    std::memcpy(&v, in[l].bytes, sizeof(v));
    const int g = l / 4, t = l % 4;
    const int rows[4] = {g, g + 8, g, g + 8}, cols[4] = {2 * t, 2 * t, 2 * t + 8, 2 * t + 8};
    for (int r = 0; r < 4; ++r) {
      A[rows[r]][cols[r]] = widen<kBf16>(lo16(v.a[r]));
      A[rows[r]][cols[r] + 1] = widen<kBf16>(hi16(v.a[r]));
    }
    for (int r = 0; r < 2; ++r) {
      B[2 * t + 8 * r][g] = widen<kBf16>(lo16(v.b[r]));
      B[2 * t + 8 * r + 1][g] = widen<kBf16>(hi16(v.b[r]));
    }
    C[g][2 * t] = v.c[0];
    C[g][2 * t + 1] = v.c[1];
    C[g + 8][2 * t] = v.c[2];
    C[g + 8][2 * t + 1] = v.c[3];
  }
  for (int l = 0; l < 32; ++l) {
    const int g = l / 4, t = l % 4;
    const int rows[4] = {g, g, g + 8, g + 8}, cols[4] = {2 * t, 2 * t + 1, 2 * t, 2 * t + 1};
    float d[4];
    for (int i = 0; i < 4; ++i) {
      double acc = C[rows[i]][cols[i]];
      for (int k = 0; k < 16; ++k) acc += static_cast<double>(A[rows[i]][k]) * B[k][cols[i]];
      d[i] = static_cast<float>(acc);
    }
    std::memcpy(out[l].bytes, d, sizeof(d));
  }
}

// ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16: lanes 8j..8j+7 give the row addresses
// of matrix j (16 bytes each). Lane l receives in register j the pair at row l/4, columns
// 2(l%4) and 2(l%4)+1 of matrix j - or, transposed, rows 2(l%4) and 2(l%4)+1 of column l/4.
template <int kCount, bool kTrans> void ldmatrix_compute(const LaneData* in, LaneData* out, unsigned) {
  const std::byte* rows[32];
  for (int l = 0; l < 8 * kCount; ++l) std::memcpy(&rows[l], in[l].bytes, sizeof(rows[l]));
  auto element = [&](int matrix, int row, int col) {
    std::uint16_t v;
    std::memcpy(&v, rows[8 * matrix + row] + 2 * col, 2);
    return static_cast<std::uint32_t>(v);
  };
  for (int l = 0; l < 32; ++l) {
    std::uint32_t regs[4] = {};
    const int g = l / 4, t = l % 4;
    for (int j = 0; j < kCount; ++j)
      regs[j] = kTrans ? element(j, 2 * t, g) | element(j, 2 * t + 1, g) << 16
                       : element(j, g, 2 * t) | element(j, g, 2 * t + 1) << 16;
    std::memcpy(out[l].bytes, regs, sizeof(regs));
  }
}

void require_full_warp(unsigned mask, const char* what) {
  if (mask != kFullMask) kernel_error(what);
}

}  // namespace

void mma_m16n8k16(bool bf16, float d[4], const std::uint32_t a[4], const std::uint32_t b[2], const float c[4]) {
  MmaLane v;
  std::memcpy(v.a, a, sizeof(v.a));
  std::memcpy(v.b, b, sizeof(v.b));
  std::memcpy(v.c, c, sizeof(v.c));
  const unsigned mask = active_lanes();
  require_full_warp(mask, "mma.sync needs all 32 lanes of the warp");
  count_tensor_flops(2 * 16 * 8 * 16 / 32);  // this lane's share of the warp's m16n8k16
  const LaneData& r = bf16 ? warp_compute(Collective::mma_bf16, mask, &v, sizeof(v), &mma_compute<true>)
                           : warp_compute(Collective::mma_f16, mask, &v, sizeof(v), &mma_compute<false>);
  std::memcpy(d, r.bytes, 4 * sizeof(float));
}

void ldmatrix(int count, bool trans, std::uint32_t* regs, const void* row_address) {
  if (reinterpret_cast<std::uintptr_t>(row_address) % 16)
    kernel_error("ldmatrix: every row address must be 16-byte aligned");
  const unsigned mask = active_lanes();
  require_full_warp(mask, "ldmatrix needs all 32 lanes of the warp");
  WarpCompute f = nullptr;
  Collective kind = Collective::ldmatrix_x1;
  switch (count * 2 + (trans ? 1 : 0)) {
    case 2: f = &ldmatrix_compute<1, false>, kind = Collective::ldmatrix_x1; break;
    case 3: f = &ldmatrix_compute<1, true>, kind = Collective::ldmatrix_x1_trans; break;
    case 4: f = &ldmatrix_compute<2, false>, kind = Collective::ldmatrix_x2; break;
    case 5: f = &ldmatrix_compute<2, true>, kind = Collective::ldmatrix_x2_trans; break;
    case 8: f = &ldmatrix_compute<4, false>, kind = Collective::ldmatrix_x4; break;
    case 9: f = &ldmatrix_compute<4, true>, kind = Collective::ldmatrix_x4_trans; break;
    default: kernel_error("ldmatrix: .x1, .x2 or .x4");
  }
  if (lane_id() < 8u * static_cast<unsigned>(count)) {  // this lane's row
    race::read(row_address, 16);
    count_access(__builtin_return_address(0), row_address, 16, Access::load);
  }
  const LaneData& r = warp_compute(kind, mask, &row_address, sizeof(row_address), f);
  std::memcpy(regs, r.bytes, static_cast<std::size_t>(count) * sizeof(std::uint32_t));
}

}  // namespace ht::emu
