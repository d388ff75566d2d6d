// Causal self-attention in fp16/bf16 on tensor cores, FlashAttention-2 style (kernels/attention.h
// for the math and rounding; kernels/attention.cu for the public launchers).
//
// fp16/bf16, tensor cores: a block of 4 warps takes queries (forward, dQ) or keys (dK/dV) of one
// (batch, head). Each warp owns two m16 row tiles (32 rows, 128 a block) at head sizes up to 64,
// so each fragment of the tile it streams through (K and V; or Q and dO) read from shared memory
// feeds two products (at T = 1024 every attention kernel is bound by shared memory in the model,
// docs/performance-model.md), and one (16 rows) at 128. Tiles of 64 rows × D stream through shared
// memory by cp.async (rows padded by 8 elements, so ldmatrix's eight rows fall in different
// banks); the products are mma.sync m16n8k16 with FP32 accumulators, and the probabilities go
// from accumulator registers straight into the next product's A fragments (the accumulator
// layout of an m16n8 pair is the A layout of an m16n8k16). Head sizes up to 128 run in the
// kernel for the next of 32, 64, 128 (columns past D are zero). No variant spills: the dK/dV
// kernel works through a query tile 16 queries at a time (only those columns of Sᵀ and dPᵀ are
// live beside the dK and dV accumulators), and at head size 128 (and K at 64, with two tiles a
// warp) reads its K and V operands from shared memory at each use instead of holding them in
// registers; dQ takes a key tile in two halves of 32 keys; with two row tiles a warp the forward
// and dQ read their Q and dO operands from shared memory, and every kernel draws a tile's dropout
// bits before its scores are live (tests/resource_floors.txt).
//   forward   per key tile up to the diagonal: S = Q·Kᵀ; online softmax; O += P·V
//   dK, dV    per query tile from the diagonal on: Sᵀ = K·Qᵀ, Pᵀ; dV += Pᵀ·dO; dPᵀ = V·dOᵀ;
//             dSᵀ = Pᵀ(dPᵀ − Δ); dK += dSᵀ·Q
//   dQ        per key tile up to the diagonal: S, P; dP = dO·Vᵀ; dS; dQ += dS·K
// One file for the three kernels: they share the fragment helpers (WarpA, the mma and tile
// helpers, next_key_tile) and the tile geometry, which are the larger part of it.
#include "kernels/attention_paths.cuh"
#include "kernels/ptx.cuh"

#include <cstring>

namespace ht::gpu::inline HT_GPU_NS::attention {

namespace {

constexpr int kRows = 64, kWarps = 4, kThreads = 32 * kWarps;
// m16 row tiles a warp of the query-row kernels (forward, dQ) owns: two at head sizes up to 64,
// so each K and V fragment a warp reads from shared memory feeds two products (both kernels are
// bound by shared memory at T = 1024, docs/performance-model.md); one at 128, where two would
// not fit the registers.
constexpr int attention_warp_tiles(int d_pad) { return d_pad <= 64 ? 2 : 1; }
constexpr int attention_queries(int d_pad) { return 16 * attention_warp_tiles(d_pad) * kWarps; }  // a block's
// With one tile a warp keeps its Q (and dO) fragments in registers and their tiles borrow the K
// and V tiles' room; with two, the fragments would not fit beside the accumulators: they stay in
// tiles of their own and are read at each use (still fewer shared reads a query than one tile a
// warp makes).
constexpr bool attention_rows_in_registers(int d_pad) { return attention_warp_tiles(d_pad) == 1; }
// Bytes of a query-row kernel's dynamic shared memory: `row_tiles` tiles of its queries' rows
// (forward: Q; dQ: Q, dO) unless they borrow room, the K and V tiles, then each thread's dropout
// bits of its M tiles (written before the tile barrier, read after it: the generator then runs
// while the scores are not yet live, and its registers never compete with theirs).
template <int D_PAD> constexpr std::size_t attention_query_shared_bytes(int row_tiles) {
  const std::size_t tile = std::size_t{kRows} * (D_PAD + 8) * 2;  // 16-bit elements
  const std::size_t rows = attention_rows_in_registers(D_PAD) ? 0 : row_tiles * attention_queries(D_PAD) / kRows * tile;
  return rows + 2 * tile + sizeof(std::uint32_t) * kThreads * attention_warp_tiles(D_PAD);
}
// m16 key tiles a warp of the dK/dV kernel owns.
constexpr int attention_dkv_warp_tiles(int d_pad) { return d_pad <= 64 ? 2 : 1; }
// Does the dK/dV kernel keep its K and V fragments in registers (or read them from shared memory)?
constexpr bool attention_dkv_kv_in_registers(int d_pad) { return d_pad <= 64; }

template <class T> __device__ __forceinline__ std::uint32_t pack2(float lo, float hi) {
  const T a = from_float<T>(lo), b = from_float<T>(hi);
  std::uint16_t x, y;
  std::memcpy(&x, &a, 2);
  std::memcpy(&y, &b, 2);
  return static_cast<std::uint32_t>(x) | (static_cast<std::uint32_t>(y) << 16);
}

// Rows [row0, row0 + R) × columns [0, D_PAD) of a (T, width) matrix (rows past T and columns
// past D are zero) into a shared tile with row stride D_PAD + 8, by 16-byte cp.async copies
// when every row's slice is 16-byte aligned, else element by element.
template <class T, int D_PAD, int R = kRows>
__device__ __forceinline__ void load_tile(T* tile, const T* src, std::int64_t row0, std::int64_t rows, std::int64_t width,
                                          std::int64_t d, bool vector_loads) {
  constexpr int kStride = D_PAD + 8, kChunks = D_PAD / 8;
  for (int q = threadIdx.x; q < R * kChunks; q += kThreads) {
    const int i = q / kChunks, c = (q % kChunks) * 8;
    T* dst = tile + i * kStride + c;
    const std::int64_t row = row0 + i;
    if (vector_loads) {
      const bool valid = row < rows && c < d;  // d % 8 == 0 here: a chunk is all in or all out
      cp_async_16(dst, valid ? src + row * width + c : src, valid ? 16 : 0);
    } else {
      for (int e = 0; e < 8; ++e) dst[e] = row < rows && c + e < d ? src[row * width + c + e] : from_float<T>(0.0f);
    }
  }
}
__device__ __forceinline__ void tiles_landed() {
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();
}

// The A fragment of k16 step ks (16 rows × 16, row-major) of rows [r0, r0 + 16) of a tile.
template <int D_PAD, class T> __device__ __forceinline__ void load_a_step(std::uint32_t (&frag)[4], const T* tile, int r0, int ks) {
  constexpr int kStride = D_PAD + 8;
  const int lane = threadIdx.x % 32, row = lane % 8 + 8 * ((lane / 8) & 1), col = 8 * (lane / 16);
  ldmatrix<4, false>(frag, tile + (r0 + row) * kStride + ks * 16 + col);
}

// A warp's A operand (its M·16 rows × D_PAD of a shared tile: M m16 tiles), handed to the
// products one k16 step at a time: loaded into registers once (kInRegisters), or read from the
// tile at each use, which costs an ldmatrix a step but frees D_PAD / 4 registers a tile (the
// dK/dV kernel at head size 128 would otherwise need two such operands, 64 registers, on top of
// 192 for its accumulators, and spill).
template <class T, int D_PAD, bool kInRegisters, int M = 1> struct WarpA;
template <class T, int D_PAD, int M> struct WarpA<T, D_PAD, true, M> {
  std::uint32_t frag[M][D_PAD / 16][4];
  __device__ __forceinline__ WarpA(const T* tile, int r0) {
    HT_UNROLL
    for (int i = 0; i < M; ++i)
      HT_UNROLL
      for (int ks = 0; ks < D_PAD / 16; ++ks) load_a_step<D_PAD>(frag[i][ks], tile, r0 + 16 * i, ks);
  }
  __device__ __forceinline__ void step(std::uint32_t (&a)[4], int ks, int i = 0) const {
    HT_UNROLL
    for (int j = 0; j < 4; ++j) a[j] = frag[i][ks][j];
  }
};
template <class T, int D_PAD, int M> struct WarpA<T, D_PAD, false, M> {
  const T* tile;
  int r0;
  __device__ __forceinline__ WarpA(const T* t, int r) : tile(t), r0(r) {}
  __device__ __forceinline__ void step(std::uint32_t (&a)[4], int ks, int i = 0) const { load_a_step<D_PAD>(a, tile, r0 + 16 * i, ks); }
};
// B fragments of two n8 tiles [n0, n0 + 16) × one k16 step [k0, k0 + 16), from a tile stored
// [n][k] (b[0]: tile n0, b[1]: tile n0 + 8).
template <int kStride, class T> __device__ __forceinline__ void load_b_nk(std::uint32_t (&b)[2][2], const T* tile, int n0, int k0) {
  const int lane = threadIdx.x % 32, m = lane / 8;
  std::uint32_t r[4];
  ldmatrix<4, false>(r, tile + (n0 + lane % 8 + 8 * (m >> 1)) * kStride + k0 + 8 * (m & 1));
  b[0][0] = r[0], b[0][1] = r[1], b[1][0] = r[2], b[1][1] = r[3];
}
// ... from a tile stored [k][n].
template <int kStride, class T> __device__ __forceinline__ void load_b_kn(std::uint32_t (&b)[2][2], const T* tile, int k0, int n0) {
  const int lane = threadIdx.x % 32, m = lane / 8;
  std::uint32_t r[4];
  ldmatrix<4, true>(r, tile + (k0 + lane % 8 + 8 * (m & 1)) * kStride + n0 + 8 * (m >> 1));
  b[0][0] = r[0], b[0][1] = r[1], b[1][0] = r[2], b[1][1] = r[3];
}

// acc[i] (16 × 8·N) += A[i] (16 × D_PAD: m16 tile i of a WarpA) · B for each of its M tiles,
// B from a [n][k] tile: n = 8·N columns from n0. Each B fragment is read once for the M tiles.
template <class T, int D_PAD, int M, int N, bool kInRegisters>
__device__ __forceinline__ void mma_a_bnk(float (&acc)[M][N][4], const WarpA<T, D_PAD, kInRegisters, M>& a, const T* tile,
                                          int n0 = 0) {
  HT_UNROLL
  for (int ks = 0; ks < D_PAD / 16; ++ks) {
    std::uint32_t af[M][4];
    HT_UNROLL
    for (int i = 0; i < M; ++i) a.step(af[i], ks, i);
    HT_UNROLL
    for (int np = 0; np < N / 2; ++np) {
      std::uint32_t b[2][2];
      load_b_nk<D_PAD + 8>(b, tile, n0 + np * 16, ks * 16);
      HT_UNROLL
      for (int i = 0; i < M; ++i) {
        mma_m16n8k16<T>(acc[i][2 * np], af[i], b[0], acc[i][2 * np]);
        mma_m16n8k16<T>(acc[i][2 * np + 1], af[i], b[1], acc[i][2 * np + 1]);
      }
    }
  }
}
// The A fragment of P (16 × 16: two n8 accumulator tiles, p0 its columns 0-7, p1 8-15), rounded to T.
template <class T> __device__ __forceinline__ void pack_a(std::uint32_t (&a)[4], const float (&p0)[4], const float (&p1)[4]) {
  a[0] = pack2<T>(p0[0], p0[1]), a[1] = pack2<T>(p0[2], p0[3]), a[2] = pack2<T>(p1[0], p1[1]), a[3] = pack2<T>(p1[2], p1[3]);
}
// acc[i] (16 × D_PAD) += A[i] (a k16 fragment) · rows [k0, k0 + 16) of a [k][n] tile, for M m16
// tiles; each B fragment is read once for them.
template <class T, int D_PAD, int M>
__device__ __forceinline__ void mma_a16_bkn(float (&acc)[M][D_PAD / 8][4], const std::uint32_t (&a)[M][4], const T* tile, int k0) {
  HT_UNROLL
  for (int np = 0; np < D_PAD / 16; ++np) {
    std::uint32_t b[2][2];
    load_b_kn<D_PAD + 8>(b, tile, k0, np * 16);
    HT_UNROLL
    for (int i = 0; i < M; ++i) {
      mma_m16n8k16<T>(acc[i][2 * np], a[i], b[0], acc[i][2 * np]);
      mma_m16n8k16<T>(acc[i][2 * np + 1], a[i], b[1], acc[i][2 * np + 1]);
    }
  }
}
// acc[i] (16 × D_PAD) += P[i] (16 × 16·J, packed: its J k16 fragments) · rows [k0, k0 + 16·J)
// of a [k][n] tile B, for M m16 tiles. P is packed as soon as it is final, so the products keep
// half the registers its FP32 values took.
template <class T, int D_PAD, int M, int J>
__device__ __forceinline__ void mma_pa_bkn(float (&acc)[M][D_PAD / 8][4], const std::uint32_t (&pa)[M][J][4], const T* tile,
                                           int k0 = 0) {
  HT_UNROLL
  for (int j = 0; j < J; ++j) {
    std::uint32_t a[M][4];
    HT_UNROLL
    for (int i = 0; i < M; ++i)
      HT_UNROLL
      for (int e = 0; e < 4; ++e) a[i][e] = pa[i][j][e];
    mma_a16_bkn<T, D_PAD>(acc, a, tile, k0 + 16 * j);
  }
}

template <class T> __device__ __forceinline__ T zero_of() { return from_float<T>(0.0f); }

// Writes a warp's 16 × D_PAD accumulator tile × factor to rows [r0, r0 + 16) (of T) of a
// (T, width) matrix, columns < d.
template <class T, int D_PAD>
__device__ __forceinline__ void store_rows(const float (&acc)[D_PAD / 8][4], float factor_row0, float factor_row1, T* dst,
                                           std::int64_t r0, std::int64_t rows, std::int64_t width, std::int64_t d) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  HT_UNROLL
  for (int nt = 0; nt < D_PAD / 8; ++nt)
    HT_UNROLL
    for (int e = 0; e < 4; ++e) {
      const std::int64_t row = r0 + g + 8 * (e >> 1), col = nt * 8 + 2 * t + (e & 1);
      if (row < rows && col < d) dst[row * width + col] = from_float<T>(acc[nt][e] * (e >> 1 ? factor_row1 : factor_row0));
    }
}

// Where a query-row block (forward, dQ) of kQueries queries, M m16 tiles a warp, works: T, D, C;
// its (batch, head); its first query and its warp's (w0); the batch's rows of qkv; this thread's
// warp, lane, and the lane's row group g and column pair t in the mma.sync fragments.
template <class T> struct QueryBlock {
  std::int64_t S, D, C, b, h, q0, w0;
  const T* base;
  int warp, lane, g, t;
};
template <class T, int M, int kQueries>
__device__ __forceinline__ QueryBlock<T> query_block(const T* qkv, const Geometry& geo) {
  const std::int64_t S = geo.seq, C = geo.channels, b = blockIdx.x / geo.heads, q0 = std::int64_t{blockIdx.y} * kQueries;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  return {S, geo.head_dim, C, b, blockIdx.x % geo.heads, q0, q0 + 16 * M * warp, qkv + b * S * 3 * C, warp, lane, lane / 4, lane % 4};
}

// The forward's and dQ's step to key tile kt, after the block is done with the previous one:
// the K and V tiles loaded, and the bits of the warp's M row tiles' dropout mask drawn before the
// barrier and passed through shared memory (sbits: this thread's slot), so the generator runs
// while no scores are live. False when every key of the tile follows the warp's queries (w0 on).
template <class T, int D_PAD, int M>
__device__ __forceinline__ bool next_key_tile(std::uint32_t (&kept)[M], T* sk, T* sv, std::uint32_t* sbits, const T* base,
                                              std::int64_t kt, std::int64_t w0, const Geometry& geo, std::int64_t h, bool vec,
                                              const DropoutMask& mask) {
  const std::int64_t S = geo.seq, D = geo.head_dim, C = geo.channels;
  const int g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
  __syncthreads();  // every warp is done with the previous tile (and with any borrowed room)
  load_tile<T, D_PAD>(sk, base + C + h * D, kt * kRows, S, 3 * C, D, vec);
  load_tile<T, D_PAD>(sv, base + 2 * C + h * D, kt * kRows, S, 3 * C, D, vec);
  const bool needed = kt * kRows < w0 + 16 * M;  // not every key of the tile follows the warp's queries
  if (needed)
    HT_UNROLL
    for (int i = 0; i < M; ++i) sbits[i * kThreads] = mask.tile_bits<8, false>(blockIdx.x, S, w0 + 16 * i, kt * kRows, g, t);
  tiles_landed();
  if (!needed) return false;
  HT_UNROLL
  for (int i = 0; i < M; ++i) kept[i] = sbits[i * kThreads];
  return true;
}

// qkv: (B, T, 3C) T -> out: (B, T, C) T, lse: (B, H, T) fp32. Block (b·H + h, query tile of
// 16·M·4 queries, M = attention_warp_tiles): b·H in grid.x, which has no 65535 limit.
// Warp w owns queries [q0 + 16·M·w, + 16·M): M m16 tiles, each K and V fragment feeding all M.
template <class T, int D_PAD>
__global__ void __launch_bounds__(kThreads) attention_forward_kernel(const T* __restrict__ qkv, T* __restrict__ out,
                                                                     float* __restrict__ lse, Geometry geo, float scale,
                                                                     int vector_loads, AttentionDropout dropout) {
  constexpr int M = attention_warp_tiles(D_PAD), kQueries = attention_queries(D_PAD);
  constexpr bool kQInRegisters = attention_rows_in_registers(D_PAD);
  static_assert(!kQInRegisters || kQueries <= 2 * kRows, "the Q tile borrows the K and V tiles' room");
  constexpr int kStride = D_PAD + 8;
  HT_DYNAMIC_SHARED(T, smem);  // [Q tile, unless it borrows the room of] K tile | V tile, dropout bits
  T* sq = smem;
  T* sk = kQInRegisters ? smem : smem + kQueries * kStride;
  T* sv = sk + kRows * kStride;
  std::uint32_t* sbits = reinterpret_cast<std::uint32_t*>(sv + kRows * kStride) + threadIdx.x;  // [i·kThreads]: tile i's
  const auto [S, D, C, b, h, q0, w0, base, warp, lane, g, t] = query_block<T, M, kQueries>(qkv, geo);
  const bool vec = vector_loads != 0;
  const DropoutMask mask(dropout);

  load_tile<T, D_PAD, kQueries>(sq, base + h * D, q0, S, 3 * C, D, vec);
  tiles_landed();
  const WarpA<T, D_PAD, kQInRegisters, M> qf(sq, 16 * M * warp);

  float o[M][D_PAD / 8][4] = {}, m[M][2], l[M][2];
  HT_UNROLL
  for (int i = 0; i < M; ++i) m[i][0] = m[i][1] = -INFINITY, l[i][0] = l[i][1] = 0.0f;
  const std::int64_t last_tile = (std::min(q0 + kQueries, S) - 1) / kRows;  // of the block's last query
  for (std::int64_t kt = 0; kt <= last_tile; ++kt) {  // key tiles up to the diagonal
    std::uint32_t kept[M];
    if (!next_key_tile<T, D_PAD>(kept, sk, sv, sbits, base, kt, w0, geo, h, vec, mask)) continue;
    float s[M][8][4] = {};
    mma_a_bnk<T, D_PAD>(s, qf, sk);
    // Scale, mask (causal, and keys past T), and the online softmax of each of a tile's two rows;
    // then P rounded to T, as the A fragments of O += P·V (half the registers of its FP32 values).
    std::uint32_t pa[M][4][4];
    HT_UNROLL
    for (int i = 0; i < M; ++i) {
      HT_UNROLL
      for (int r = 0; r < 2; ++r) {
        const std::int64_t query = w0 + 16 * i + g + 8 * r;
        float tile_max = -INFINITY;
        HT_UNROLL
        for (int nt = 0; nt < 8; ++nt)
          HT_UNROLL
          for (int e = 0; e < 2; ++e) {
            const std::int64_t key = kt * kRows + nt * 8 + 2 * t + e;
            float& v = s[i][nt][2 * r + e];
            v = key <= query && key < S ? v * scale : -INFINITY;
            tile_max = fmaxf(tile_max, v);
          }
        tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
        tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
        const float m_new = fmaxf(m[i][r], tile_max);
        const float alpha = expf(m[i][r] - m_new);
        float row_sum = 0;
        HT_UNROLL
        for (int nt = 0; nt < 8; ++nt)
          HT_UNROLL
          for (int e = 0; e < 2; ++e) {
            float& v = s[i][nt][2 * r + e];
            v = expf(v - m_new);
            row_sum += v;
          }
        row_sum += __shfl_xor_sync(0xffffffffu, row_sum, 1);
        row_sum += __shfl_xor_sync(0xffffffffu, row_sum, 2);
        l[i][r] = l[i][r] * alpha + row_sum;
        m[i][r] = m_new;
        HT_UNROLL
        for (int nt = 0; nt < D_PAD / 8; ++nt) o[i][nt][2 * r] *= alpha, o[i][nt][2 * r + 1] *= alpha;
        HT_UNROLL  // after the row sum: the softmax is normalised before the mask
        for (int nt = 0; nt < 8; ++nt)
          HT_UNROLL
          for (int e = 0; e < 2; ++e)
            if (!(kept[i] >> (4 * nt + 2 * r + e) & 1u)) s[i][nt][2 * r + e] = 0.0f;
      }
      HT_UNROLL
      for (int j = 0; j < 4; ++j) pack_a<T>(pa[i][j], s[i][2 * j], s[i][2 * j + 1]);
    }
    mma_pa_bkn<T, D_PAD>(o, pa, sv);
  }
  HT_UNROLL
  for (int i = 0; i < M; ++i) {
    const std::int64_t r0 = w0 + 16 * i;
    store_rows<T, D_PAD>(o[i], mask.keep_scale / l[i][0], mask.keep_scale / l[i][1], out + b * S * C + h * D, r0, S, C, D);
    if (t == 0)
      for (int r = 0; r < 2; ++r)
        if (r0 + g + 8 * r < S) lse[blockIdx.x * S + r0 + g + 8 * r] = m[i][r] + logf(l[i][r]);
  }
}

// dK and dV of a block of 16·M·4 keys (M = attention_dkv_warp_tiles), each warp M m16 tiles of
// them. qkv, out-independent: reads Q, dO tiles; lse, delta: (B, H, T).
template <class T, int D_PAD>
__global__ void __launch_bounds__(kThreads) attention_dkv_kernel(const T* __restrict__ qkv, const T* __restrict__ dout,
                                                                 const float* __restrict__ lse, const float* __restrict__ delta,
                                                                 T* __restrict__ dqkv, Geometry geo, float scale, int vector_loads,
                                                                 AttentionDropout dropout) {
  constexpr int M = attention_dkv_warp_tiles(D_PAD), kKeys = 16 * M * kWarps;
  constexpr int kStride = D_PAD + 8;
  // K's and V's fragments in registers, or read from their tiles at each use (at head size 128
  // both, and K's with two tiles a warp: they would not fit beside the dK and dV accumulators)
  constexpr bool kVInRegisters = attention_dkv_kv_in_registers(D_PAD), kKInRegisters = kVInRegisters && M == 1;
  // K tile | V tile, Q tile | dO tile (borrowing the room of the tiles whose fragments are in
  // registers), then lse, delta, dropout bits
  HT_DYNAMIC_SHARED(T, smem);
  T* sk = smem;
  T* sv = smem + kKeys * kStride;
  T* sa = kKInRegisters ? sk : kVInRegisters ? sv : sv + kKeys * kStride;
  T* sb = sa + kRows * kStride;
  float* slse = reinterpret_cast<float*>(sb + kRows * kStride);
  float* sdelta = slse + kRows;
  std::uint32_t* sbits = reinterpret_cast<std::uint32_t*>(sdelta + kRows) + threadIdx.x;  // [i·kThreads]: tile i's
  const std::int64_t S = geo.seq, D = geo.head_dim, C = geo.channels;
  const std::int64_t b = blockIdx.x / geo.heads, h = blockIdx.x % geo.heads;
  const std::int64_t k0 = std::int64_t{blockIdx.y} * kKeys;
  const T* base = qkv + b * S * 3 * C;
  const T* dbase = dout + b * S * C;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const std::int64_t w0 = k0 + 16 * M * warp;  // the warp's first key
  const bool vec = vector_loads != 0;
  const DropoutMask mask(dropout);

  load_tile<T, D_PAD, kKeys>(sk, base + C + h * D, k0, S, 3 * C, D, vec);
  load_tile<T, D_PAD, kKeys>(sv, base + 2 * C + h * D, k0, S, 3 * C, D, vec);
  tiles_landed();
  const WarpA<T, D_PAD, kKInRegisters, M> kf(sk, 16 * M * warp);
  const WarpA<T, D_PAD, kVInRegisters, M> vf(sv, 16 * M * warp);

  float dk[M][D_PAD / 8][4] = {}, dv[M][D_PAD / 8][4] = {};
  const std::int64_t tiles = (S + kRows - 1) / kRows;
  for (std::int64_t qt = k0 / kRows; qt < tiles; ++qt) {  // query tiles from the diagonal on
    __syncthreads();
    load_tile<T, D_PAD>(sa, base + h * D, qt * kRows, S, 3 * C, D, vec);
    load_tile<T, D_PAD>(sb, dbase + h * D, qt * kRows, S, C, D, vec);
    for (int i = threadIdx.x; i < kRows; i += kThreads) {
      const std::int64_t q = qt * kRows + i;
      slse[i] = q < S ? lse[blockIdx.x * S + q] : 0.0f;
      sdelta[i] = q < S ? delta[blockIdx.x * S + q] : 0.0f;
    }
    const bool needed = qt * kRows + kRows > w0;  // not every query of the tile precedes the warp's keys
    if (needed)  // the tile's dropout bits, 8 a 16-query chunk, drawn before the scores are live
      HT_UNROLL
      for (int i = 0; i < M; ++i) {
        std::uint32_t bits = 0;
        HT_NO_UNROLL
        for (int j = 0; j < kRows / 16; ++j)
          bits |= (mask.tile_bits<2, true>(blockIdx.x, S, w0 + 16 * i, qt * kRows + 16 * j, g, t) & 0xffu) << (8 * j);
        sbits[i * kThreads] = bits;
      }
    tiles_landed();
    if (!needed) continue;
    std::uint32_t tile_kept[M];
    HT_UNROLL
    for (int i = 0; i < M; ++i) tile_kept[i] = sbits[i * kThreads];
    // 16 queries at a time, so only their columns of Sᵀ and dPᵀ are live beside dK and dV (each
    // sum runs in the same order as over the whole tile).
    HT_NO_UNROLL  // one chunk's registers at a time
    for (int j = 0; j < kRows / 16; ++j) {
      float p[M][2][4] = {}, dp[M][2][4] = {};
      mma_a_bnk<T, D_PAD>(p, kf, sa, 16 * j);   // Sᵀ = K·Qᵀ: rows keys, columns queries
      mma_a_bnk<T, D_PAD>(dp, vf, sb, 16 * j);  // dPᵀ = V·dOᵀ
      std::uint32_t pa[M][4], dsa[M][4];        // P∘z and dSᵀ rounded to T: A fragments
      HT_UNROLL
      for (int i = 0; i < M; ++i) {
        HT_UNROLL
        for (int nt = 0; nt < 2; ++nt)
          HT_UNROLL
          for (int e = 0; e < 4; ++e) {
            const std::int64_t key = w0 + 16 * i + g + 8 * (e >> 1);
            const int qi = 16 * j + nt * 8 + 2 * t + (e & 1);
            const std::int64_t query = qt * kRows + qi;
            const float P = query >= key && query < S ? expf(p[i][nt][e] * scale - slse[qi]) : 0.0f;
            const bool keep = tile_kept[i] >> (8 * j + 4 * nt + e) & 1u;
            p[i][nt][e] = keep ? P : 0.0f;                                                      // P∘z
            dp[i][nt][e] = P * ((keep ? mask.keep_scale * dp[i][nt][e] : 0.0f) - sdelta[qi]);  // dSᵀ
          }
        pack_a<T>(pa[i], p[i][0], p[i][1]);
        pack_a<T>(dsa[i], dp[i][0], dp[i][1]);
      }
      mma_a16_bkn<T, D_PAD>(dv, pa, sb, 16 * j);   // dV += Pᵀ·dO
      mma_a16_bkn<T, D_PAD>(dk, dsa, sa, 16 * j);  // dK += dSᵀ·Q
    }
  }
  T* out = dqkv + b * S * 3 * C;
  HT_UNROLL
  for (int i = 0; i < M; ++i) {
    store_rows<T, D_PAD>(dk[i], scale, scale, out + C + h * D, w0 + 16 * i, S, 3 * C, D);
    store_rows<T, D_PAD>(dv[i], mask.keep_scale, mask.keep_scale, out + 2 * C + h * D, w0 + 16 * i, S, 3 * C, D);
  }
}

// dQ of a block of 16·M·4 queries (M = attention_warp_tiles), a warp's M m16 row tiles as in the
// forward. Each key tile is taken in two halves of 32 keys: only a half's S and dP (M·2 n8
// tiles each) are live beside the dQ accumulators, and dQ still adds the keys' k16 steps in
// order (the same bits as whole tiles).
template <class T, int D_PAD>
__global__ void __launch_bounds__(kThreads, 1) attention_dq_kernel(const T* __restrict__ qkv, const T* __restrict__ dout,
                                                                const float* __restrict__ lse, const float* __restrict__ delta,
                                                                T* __restrict__ dqkv, Geometry geo, float scale, int vector_loads,
                                                                AttentionDropout dropout) {
  constexpr int M = attention_warp_tiles(D_PAD), kQueries = attention_queries(D_PAD);
  constexpr bool kInRegisters = attention_rows_in_registers(D_PAD);
  static_assert(!kInRegisters || kQueries == kRows, "the Q and dO tiles borrow the K and V tiles' room");
  constexpr int kStride = D_PAD + 8;
  HT_DYNAMIC_SHARED(T, smem);  // [Q tile | dO tile, unless they borrow the room of] K tile | V tile, dropout bits
  T* sq = smem;
  T* sdo = smem + kQueries * kStride;
  T* sk = kInRegisters ? smem : sdo + kQueries * kStride;
  T* sv = sk + kRows * kStride;
  std::uint32_t* sbits = reinterpret_cast<std::uint32_t*>(sv + kRows * kStride) + threadIdx.x;  // [i·kThreads]: tile i's
  const auto [S, D, C, b, h, q0, w0, base, warp, lane, g, t] = query_block<T, M, kQueries>(qkv, geo);
  const bool vec = vector_loads != 0;
  const DropoutMask mask(dropout);

  load_tile<T, D_PAD, kQueries>(sq, base + h * D, q0, S, 3 * C, D, vec);
  load_tile<T, D_PAD, kQueries>(sdo, dout + b * S * C + h * D, q0, S, C, D, vec);
  tiles_landed();
  const WarpA<T, D_PAD, kInRegisters, M> qf(sq, 16 * M * warp), dof(sdo, 16 * M * warp);
  float row_lse[M][2], row_delta[M][2];
  HT_UNROLL
  for (int i = 0; i < M; ++i)
    HT_UNROLL
    for (int r = 0; r < 2; ++r) {
      const std::int64_t q = w0 + 16 * i + g + 8 * r;
      row_lse[i][r] = q < S ? lse[blockIdx.x * S + q] : 0.0f;
      row_delta[i][r] = q < S ? delta[blockIdx.x * S + q] : 0.0f;
    }

  float dq[M][D_PAD / 8][4] = {};
  const std::int64_t last_tile = (std::min(q0 + kQueries, S) - 1) / kRows;  // of the block's last query
  for (std::int64_t kt = 0; kt <= last_tile; ++kt) {  // key tiles up to the diagonal
    std::uint32_t kept[M];
    if (!next_key_tile<T, D_PAD>(kept, sk, sv, sbits, base, kt, w0, geo, h, vec, mask)) continue;
    HT_NO_UNROLL  // one half's S and dP live at a time
    for (int half = 0; half < 2; ++half) {  // keys [32·half, 32·half + 32) of the tile
      float p[M][4][4] = {}, dp[M][4][4] = {};
      mma_a_bnk<T, D_PAD>(p, qf, sk, 32 * half);    // S = Q·Kᵀ
      mma_a_bnk<T, D_PAD>(dp, dof, sv, 32 * half);  // dP = dO·Vᵀ
      std::uint32_t ds[M][2][4];                    // dS rounded to T, the A fragments of dQ += dS·K
      HT_UNROLL
      for (int i = 0; i < M; ++i) {
        HT_UNROLL
        for (int nt = 0; nt < 4; ++nt)
          HT_UNROLL
          for (int e = 0; e < 4; ++e) {
            const std::int64_t query = w0 + 16 * i + g + 8 * (e >> 1);
            const std::int64_t key = kt * kRows + 32 * half + nt * 8 + 2 * t + (e & 1);
            const float P = key <= query && query < S ? expf(p[i][nt][e] * scale - row_lse[i][e >> 1]) : 0.0f;
            const bool keep = kept[i] >> (4 * (4 * half + nt) + e) & 1u;
            dp[i][nt][e] = P * ((keep ? mask.keep_scale * dp[i][nt][e] : 0.0f) - row_delta[i][e >> 1]);  // dS
          }
        HT_UNROLL
        for (int j = 0; j < 2; ++j) pack_a<T>(ds[i][j], dp[i][2 * j], dp[i][2 * j + 1]);
      }
      mma_pa_bkn<T, D_PAD>(dq, ds, sk, 32 * half);  // dQ += dS·K
    }
  }
  HT_UNROLL
  for (int i = 0; i < M; ++i)
    store_rows<T, D_PAD>(dq[i], scale, scale, dqkv + b * S * 3 * C + h * D, w0 + 16 * i, S, 3 * C, D);
}

// cp.async needs every row slice 16-byte aligned: D and C multiples of 8, the base aligned.
bool attention_vector_loads(const void* p, std::int64_t head_dim) {
  return head_dim % 8 == 0 && reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
}

template <int D_PAD> constexpr std::size_t tile_bytes(std::size_t element) { return std::size_t{kRows} * (D_PAD + 8) * element; }

}  // namespace

void forward_tc(const AttentionArgs& a, const Geometry& geo, const Stream& s) {
  with_head_pad(a.head_dim, [&](auto pad) {
    constexpr int P = decltype(pad)::value;
    constexpr std::int64_t queries = attention_queries(P);
    const LaunchConfig cfg{dim3(static_cast<unsigned>(a.batch * a.heads), static_cast<unsigned>((a.seq + queries - 1) / queries)),
                           kThreads, attention_query_shared_bytes<P>(1)};
    const int vec = attention_vector_loads(a.qkv, a.head_dim) ? 1 : 0;
    dispatch(a.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!std::is_same_v<T, float>)
        HT_LAUNCH((attention_forward_kernel<T, P>), cfg, s, static_cast<const T*>(a.qkv), static_cast<T*>(a.out), a.lse, geo,
                  a.scale, vec, a.dropout);
    });
  });
}

void backward_tc(const AttentionBackwardArgs& a, const Geometry& geo, const Stream& s) {
  with_head_pad(a.head_dim, [&](auto pad) {
    constexpr int P = decltype(pad)::value;
    const dim3 grid(static_cast<unsigned>(a.batch * a.heads), static_cast<unsigned>((a.seq + kRows - 1) / kRows));
    constexpr std::int64_t queries = attention_queries(P);
    const dim3 dq_grid(static_cast<unsigned>(a.batch * a.heads), static_cast<unsigned>((a.seq + queries - 1) / queries));
    const int vec = attention_vector_loads(a.qkv, a.head_dim) && attention_vector_loads(a.dout, a.head_dim) ? 1 : 0;
    dispatch(a.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!std::is_same_v<T, float>) {
        const auto* qkv = static_cast<const T*>(a.qkv);
        const auto* dout = static_cast<const T*>(a.dout);
        auto* dqkv = static_cast<T*>(a.dqkv);
        constexpr int keys = 16 * attention_dkv_warp_tiles(P) * kWarps;
        constexpr std::size_t dkv_shared =
            (attention_dkv_kv_in_registers(P) ? 2 * keys / kRows : 2 * keys / kRows + 2) * tile_bytes<P>(2) + 2 * kRows * sizeof(float) +
            sizeof(std::uint32_t) * kThreads * attention_dkv_warp_tiles(P);
        allow_dynamic_shared_once<attention_dkv_kernel<T, P>, dkv_shared>();
        const dim3 dkv_grid(grid.x, static_cast<unsigned>((a.seq + keys - 1) / keys));
        HT_LAUNCH((attention_dkv_kernel<T, P>), (LaunchConfig{dkv_grid, kThreads, dkv_shared}), s, qkv, dout,
                  static_cast<const float*>(a.lse), static_cast<const float*>(a.delta), dqkv, geo, a.scale, vec, a.dropout);
        constexpr std::size_t dq_shared = attention_query_shared_bytes<P>(2);
        allow_dynamic_shared_once<attention_dq_kernel<T, P>, dq_shared>();
        HT_LAUNCH((attention_dq_kernel<T, P>), (LaunchConfig{dq_grid, kThreads, dq_shared}), s, qkv, dout,
                  static_cast<const float*>(a.lse), static_cast<const float*>(a.delta), dqkv, geo, a.scale, vec, a.dropout);
      }
    });
  });
}

}  // namespace ht::gpu::inline HT_GPU_NS::attention
