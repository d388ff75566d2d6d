// The Hopper GEMM (sm_90a): wgmma from shared memory fed by the tensor memory accelerator (TMA),
// warp-specialised and persistent - one warpgroup loads, two multiply - through an mbarrier
// pipeline. For the forward product (nt: both operands K-major) in fp16 and bf16, chosen at run
// time on sm_90 when K is a multiple of 8 and the operands are 16-byte aligned (TMA's
// requirements); every other case runs the mma.sync kernel. Its FP8 form (Operands<Fp8Pair>:
// wgmma k32 from E4M3/E5M2 codes, the sums scaled by the operands' inverse scales, bf16 out)
// is every product of an FP8 linear layer (kernels/fp8_gemm.h), whose operands the casts made
// K-major; K a multiple of 16. One source for nvcc and the emulator
// (the Hopper instructions are kernels/ptx_sm90.cuh): on HALFTAPE_SIMT_ARCH=sm_90 the emulator
// runs it in CI (tests/test_gemm.cpp, "[hopper]"); on a GPU a self-check against the mma.sync
// kernel comes first (engine/gpu/wgmma_self_check.cpp).
//
//   block tile 128 × kBN (256, or 128 where wide tiles would not fill the SMs or would waste N),
//   K step 128 bytes (64 16-bit or 128 FP8 elements); a stage is an A tile [128] + a B tile [kBN]
//   of 128-byte rows that TMA
//   writes with the 128B swizzle and wgmma reads through matrix descriptors; 192 KiB of stages
//   (4 of 48 KiB at kBN 256, 6 of 32 KiB at 128);
//   persistent: one block an SM walks the output tiles (blockIdx.x, + gridDim.x, ...) in groups
//   of kGroupM tile rows, so the blocks running together share A and B tiles in L2; the stage
//   ring runs on across tiles, so the producer loads the next tile while the consumers store;
//   the producer warpgroup gives registers back (setmaxnreg.dec to 40) and its one thread waits
//   for a stage to be empty, arms its "full" barrier with the expected bytes and issues the two
//   TMA copies; the consumer warpgroups take them (setmaxnreg.inc to 232): consumer c computes
//   rows [64c, 64c + 64) with wgmma.m64n{kBN}k16 (k32 for FP8; kBN/2 FP32 accumulators a thread), keeping one
//   batch of wgmma in flight while it waits for the next stage.
#include "kernels/gemm_epilogue.cuh"
#include "kernels/launch.h"
#include "kernels/ptx_sm90.cuh"

namespace ht::gpu::inline HT_GPU_NS {

namespace wgmma_gemm {

using gemm_epilogue::Params;

constexpr int kBM = 128, kRowBytes = 128, kConsumers = 2;  // a stage row: 128 bytes of K (64 16-bit or 128 FP8 elements)
constexpr int kThreads = 128 * (kConsumers + 1);
constexpr int kGroupM = 8;  // tile rows walked together (the L2-friendly order)
// 384 threads share the SM's 64K registers: 168 each at launch, then the producer's 128 drop to
// 40 and the consumers' 256 rise to 232 (128·40 + 256·232 = 64512 <= 65536), as CUTLASS does.
constexpr unsigned kProducerRegisters = 40, kConsumerRegisters = 232;
constexpr int kPipelineBytes = 192 * 1024;
// TMA's coordinates and the tile walk (tile_at) are 32-bit: every row index of A and B, and K,
// rounded up to its tile, must fit an int (gemm_wgmma_supports).
constexpr std::int64_t kMaxRows = (std::int64_t{1} << 31) - 256;

// What the kernel multiplies: 16-bit operands T (__half, __nv_bfloat16), which it also writes -
// wgmma k16; or FP8 codes (Fp8Pair: A's and B's kinds), its sums scaled by the operands' inverse
// scales and written in bf16 - wgmma k32. A K step of a stage is 128 bytes either way, four
// instructions of 32 bytes.
template <class T> struct Operands {
  using Out = T;
  static constexpr int kBytes = 2;
  template <int kBN> static __device__ __forceinline__ void mma(float (&d)[kBN / 2], std::uint64_t a, std::uint64_t b) {
    sm90::wgmma_m64nNk16<T, kBN>(d, a, b);
  }
};
template <Fp8Kind A, Fp8Kind B> struct Fp8Pair {};
template <Fp8Kind A, Fp8Kind B> struct Operands<Fp8Pair<A, B>> {
  using Out = __nv_bfloat16;
  static constexpr int kBytes = 1;
  template <int kBN> static __device__ __forceinline__ void mma(float (&d)[kBN / 2], std::uint64_t a, std::uint64_t b) {
    sm90::wgmma_m64nNk32<A, B, kBN>(d, a, b);
  }
};

template <int kBN> struct Tile {
  static constexpr int kABytes = kBM * kRowBytes;
  static constexpr int kStageBytes = (kBM + kBN) * kRowBytes;
  static constexpr int kStages = kPipelineBytes / kStageBytes;
  static constexpr std::size_t kSharedBytes = std::size_t{kStages} * kStageBytes + 1024 + 2 * kStages * sizeof(std::uint64_t);
};

// A K-major operand in the 128B-swizzled canonical layout: 8-row atoms of 128-byte rows (the
// stride between atoms, SBO, is 1024 bytes; the leading byte offset is unused there and 1 by
// convention); the K offset inside a row moves the start address.
__device__ __forceinline__ std::uint64_t smem_desc(const void* p) {
  const std::uint64_t address = sm90::smem(p);
  return ((address & 0x3ffff) >> 4) | (std::uint64_t{16 >> 4} << 16) | (std::uint64_t{1024 >> 4} << 32) |
         (std::uint64_t{1} << 62);
}

// The output tile of the persistent walk's step `linear`: column-major inside groups of kGroupM
// tile rows, so consecutive steps (the blocks that run at once) cover a few rows of tiles fully.
struct TileAt {
  int m0, n0;
};
__device__ __forceinline__ TileAt tile_at(int linear, int tiles_m, int tiles_n, int bn) {
  const int per_group = kGroupM * tiles_n, first = linear / per_group * kGroupM;
  const int rows = tiles_m - first < kGroupM ? tiles_m - first : kGroupM, in_group = linear % per_group;
  return {(first + in_group % rows) * kBM, in_group / rows * bn};
}

// kKeep: wgmma batches a consumer keeps in flight while it waits for the next stage - 1, or 0
// for the first design's wait_group 0 after every K-tile (kept, on the emulator only, for the
// performance model's tests: launch_gemm_wgmma_first_design).
template <class T, int kBN, int kKeep = 1>
__global__ void __launch_bounds__(kThreads, 1)
    gemm_wgmma_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b, Params p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || defined(HT_SIMT)
  using L = Tile<kBN>;
  using Op = Operands<T>;
  constexpr int kBK = kRowBytes / Op::kBytes;  // K elements a stage
  HT_DYNAMIC_SHARED(unsigned char, shared_raw);
  // 128B-swizzled TMA destinations must be 1024-byte aligned.
  unsigned char* base =
      reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(shared_raw) + 1023) & ~std::uintptr_t{1023});
  unsigned char* stages = base;
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(base + L::kStages * L::kStageBytes);
  std::uint64_t* empty = full + L::kStages;
  const int warpgroup = threadIdx.x / 128, t = threadIdx.x % 128;
  if (threadIdx.x == 0) {
    for (int s = 0; s < L::kStages; ++s) {
      sm90::mbar_init(&full[s], 1);
      sm90::mbar_init(&empty[s], kConsumers);
    }
    sm90::fence_mbar_init();
  }
  __syncthreads();
  const int k_tiles = static_cast<int>((p.K + kBK - 1) / kBK);
  const int tiles_m = static_cast<int>((p.M + kBM - 1) / kBM), tiles_n = static_cast<int>((p.N + kBN - 1) / kBN);
  const int tiles = tiles_m * tiles_n;  // gemm_wgmma_supports keeps it an int

  if (warpgroup == 0) {  // the producer
    sm90::setmaxnreg<false, kProducerRegisters>();
    if (t == 0) {
      int it = 0;  // stages filled so far, over every tile: the ring's position and phase
      for (int linear = static_cast<int>(blockIdx.x); linear < tiles; linear += static_cast<int>(gridDim.x)) {
        const TileAt at = tile_at(linear, tiles_m, tiles_n, kBN);
        for (int kt = 0; kt < k_tiles; ++kt, ++it) {
          const int s = it % L::kStages;
          sm90::mbar_wait(&empty[s], ((it / L::kStages) & 1) ^ 1);
          sm90::mbar_expect_tx(&full[s], L::kStageBytes);
          unsigned char* a_tile = stages + s * L::kStageBytes;
          sm90::tma_load_2d(a_tile, &map_a, &full[s], kt * kBK, at.m0);
          sm90::tma_load_2d(a_tile + L::kABytes, &map_b, &full[s], kt * kBK, at.n0);
        }
      }
    }
    return;
  }
  sm90::setmaxnreg<true, kConsumerRegisters>();
  const int c = warpgroup - 1;  // a consumer: rows [64c, 64c + 64) of the block tile
  const int warp = t / 32, lane = t % 32;
  // FP8: the products' scale, 1 / (scale_a · scale_b) (kernels/fp8_gemm.h); 1 (exact) for 16-bit
  const float alpha = p.scale_inv_a ? *p.scale_inv_a * *p.scale_inv_b : 1.0f;
  int it = 0;                   // stages taken so far, as the producer counts them
  for (int linear = static_cast<int>(blockIdx.x); linear < tiles; linear += static_cast<int>(gridDim.x)) {
    const TileAt at = tile_at(linear, tiles_m, tiles_n, kBN);
    float d[kBN / 2];
    HT_UNROLL
    for (int i = 0; i < kBN / 2; ++i) d[i] = 0.0f;
    // One batch of wgmma stays in flight: after issuing K-tile kt's batch the warpgroup waits
    // only until kt - 1's has retired (wait_group 1), releases that one's stage to the producer,
    // and goes on to wait for the next stage while the tensor cores still work on kt.
    for (int kt = 0; kt < k_tiles; ++kt, ++it) {
      const int s = it % L::kStages;
      sm90::mbar_wait(&full[s], (it / L::kStages) & 1);
      __syncwarp();  // the spin may leave the warp diverged; the .sync.aligned wgmma below needs it whole
      const unsigned char* a_tile = stages + s * L::kStageBytes + c * 64 * kRowBytes;
      const unsigned char* b_tile = stages + s * L::kStageBytes + L::kABytes;
      sm90::fence_operands(d);  // d[] stays in its registers, written, before the batch starts...
      sm90::wgmma_fence();
      HT_UNROLL
      for (int k = 0; k < kRowBytes / 32; ++k)  // ascending k: 32 bytes an instruction
        Op::template mma<kBN>(d, smem_desc(a_tile + 32 * k), smem_desc(b_tile + 32 * k));
      sm90::wgmma_commit();
      sm90::wgmma_wait<kKeep>();  // K-tile kt - 1's batch has retired; kt's may still run
      sm90::fence_operands(d);    // ...and is touched only after a wait that covers it
      if constexpr (kKeep == 0) {
        if (t == 0) sm90::mbar_arrive(&empty[it % L::kStages]);  // done reading stage of kt
      } else if (kt > 0 && t == 0) {
        sm90::mbar_arrive(&empty[(it - 1) % L::kStages]);  // done reading stage of kt - 1
      }
    }
    if constexpr (kKeep != 0) {
      sm90::wgmma_wait<0>();  // the tile's last batch
      sm90::fence_operands(d);
      if (t == 0) sm90::mbar_arrive(&empty[(it - 1) % L::kStages]);  // its stage, for the next tile's loads
    }
    // Accumulator layout of m64nN: warp w of the warpgroup holds rows 16w + lane/4 (+ 8); each
    // 8-column chunk j holds columns 8j + 2(lane % 4) (+ 1), in d[4j .. 4j + 3].
    const std::int64_t row = at.m0 + 64 * c + 16 * warp + lane / 4;
    HT_UNROLL
    for (int j = 0; j < kBN / 8; ++j) {
      const std::int64_t col = at.n0 + 8 * j + 2 * (lane % 4);
      gemm_epilogue::store_pair<typename Op::Out>(p, row, col, d[4 * j] * alpha, d[4 * j + 1] * alpha);
      gemm_epilogue::store_pair<typename Op::Out>(p, row + 8, col, d[4 * j + 2] * alpha, d[4 * j + 3] * alpha);
    }
  }
#else
  __trap();  // built for another architecture: the launcher never gets here
#endif
}

// A (rows × K) row-major operand, read in boxes of 128 bytes of K × box_rows with the 128B
// swizzle; outside the matrix TMA fills zeros. dtype: f16, bf16, or u8 (FP8 codes).
CUtensorMap tensor_map(const void* base, std::int64_t rows, std::int64_t k, DType dtype, int box_rows) {
  CUtensorMap map{};
  const auto bytes = static_cast<cuuint64_t>(dtype_size(dtype));
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(k), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(k) * bytes};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(kRowBytes / bytes), static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUtensorMapDataType type = dtype == DType::bf16  ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                   : dtype == DType::f16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                                         : CU_TENSOR_MAP_DATA_TYPE_UINT8;
  const CUresult r = sm90::encode_tensor_map(&map, type, 2,
                               const_cast<void*>(base), dims, strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                               CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) ht::call_failed("cuTensorMapEncodeTiled", "cannot describe the operand", __FILE__, __LINE__);
  return map;
}

// The tile width: 256 where the wide tiles still give every SM one (fewer, larger tiles only pay
// once the grid is full) and the last, partly empty column of tiles wastes at most 1/32 of N more
// than 128-wide ones would (N = 384: 128; 1536, 768 and GPT-2's 50304: 256 on a large enough M);
// else 128.
int tile_width(std::int64_t m, std::int64_t n, int sms) {
  const auto padded = [n](std::int64_t w) { return (n + w - 1) / w * w; };
  const std::int64_t wide_tiles = (m + kBM - 1) / kBM * (padded(256) / 256);
  return wide_tiles >= sms && padded(256) - padded(128) <= n / 32 ? 256 : 128;
}

template <class T, int kBN> void launch(const LinearGemmArgs& args, const Stream& s) {
  const GemmArgs& g = args.gemm;
  allow_dynamic_shared_once<gemm_wgmma_kernel<T, kBN, 1>, Tile<kBN>::kSharedBytes>();
  const CUtensorMap map_a = tensor_map(g.a, g.M, g.K, g.dtype, kBM), map_b = tensor_map(g.b, g.N, g.K, g.dtype, kBN);
  const std::int64_t tiles = (g.M + kBM - 1) / kBM * ((g.N + kBN - 1) / kBN);
  const LaunchConfig cfg{dim3(static_cast<unsigned>(std::min<std::int64_t>(tiles, s.sm_count))), kThreads, Tile<kBN>::kSharedBytes};
  HT_LAUNCH((gemm_wgmma_kernel<T, kBN, 1>), cfg, s, map_a, map_b, gemm_epilogue::gemm_params(args));
}

#if defined(HT_SIMT)
// The first design (before the wait_group 1 pipeline, the 256-wide tiles and the persistent
// walk): 128 × 128 tiles, a block a tile, wait_group 0 after every K-tile. Only the emulator
// builds it: the performance model's tests rank it against today's (tests/test_gpu_model.cpp).
template <class T> void launch_first_design(const LinearGemmArgs& args, const Stream& s) {
  const GemmArgs& g = args.gemm;
  constexpr int kBN = 128;
  allow_dynamic_shared_once<gemm_wgmma_kernel<T, kBN, 0>, Tile<kBN>::kSharedBytes>();
  const CUtensorMap map_a = tensor_map(g.a, g.M, g.K, g.dtype, kBM), map_b = tensor_map(g.b, g.N, g.K, g.dtype, kBN);
  const std::int64_t tiles = (g.M + kBM - 1) / kBM * ((g.N + kBN - 1) / kBN);
  const LaunchConfig cfg{dim3(static_cast<unsigned>(tiles)), kThreads, Tile<kBN>::kSharedBytes};
  HT_LAUNCH((gemm_wgmma_kernel<T, kBN, 0>), cfg, s, map_a, map_b, gemm_epilogue::gemm_params(args));
}
#endif

template <class T> void launch(const LinearGemmArgs& args, const Stream& s) {
  if (tile_width(args.gemm.M, args.gemm.N, s.sm_count) == 256) launch<T, 256>(args, s);
  else launch<T, 128>(args, s);
}

// FP8: 128-wide tiles only (the one width its wgmma is instantiated for).
template <Fp8Kind A> void launch_fp8(const Fp8GemmArgs& a, const Stream& s) {
  using T = Fp8Pair<A, Fp8Kind::e4m3>;
  constexpr int kBN = 128;
  allow_dynamic_shared_once<gemm_wgmma_kernel<T, kBN, 1>, Tile<kBN>::kSharedBytes>();
  const CUtensorMap map_a = tensor_map(a.a, a.M, a.K, DType::u8, kBM), map_b = tensor_map(a.b, a.N, a.K, DType::u8, kBN);
  const std::int64_t tiles = (a.M + kBM - 1) / kBM * ((a.N + kBN - 1) / kBN);
  const LaunchConfig cfg{dim3(static_cast<unsigned>(std::min<std::int64_t>(tiles, s.sm_count))), kThreads, Tile<kBN>::kSharedBytes};
  HT_LAUNCH((gemm_wgmma_kernel<T, kBN, 1>), cfg, s, map_a, map_b, gemm_epilogue::fp8_gemm_params(a));
}

}  // namespace wgmma_gemm

bool gemm_wgmma_supports(const GemmArgs& g) {
  return g.op == GemmOp::nt && (g.dtype == DType::f16 || g.dtype == DType::bf16) && g.K > 0 && g.K % 8 == 0 &&
         g.K <= wgmma_gemm::kMaxRows && g.M > 0 && g.N > 0 && g.M <= wgmma_gemm::kMaxRows && g.N <= wgmma_gemm::kMaxRows &&
         (g.M + 127) / 128 * ((g.N + 127) / 128) < (std::int64_t{1} << 31) &&
         reinterpret_cast<std::uintptr_t>(g.a) % 16 == 0 && reinterpret_cast<std::uintptr_t>(g.b) % 16 == 0;
}

bool fp8_gemm_wgmma_supports(const Fp8GemmArgs& a) {
  return a.b_kind == Fp8Kind::e4m3 && a.K > 0 && a.K % 16 == 0 && a.K <= wgmma_gemm::kMaxRows && a.M > 0 && a.N > 0 &&
         a.M <= wgmma_gemm::kMaxRows && a.N <= wgmma_gemm::kMaxRows && (a.M + 127) / 128 * ((a.N + 127) / 128) < (std::int64_t{1} << 31) &&
         reinterpret_cast<std::uintptr_t>(a.a) % 16 == 0 && reinterpret_cast<std::uintptr_t>(a.b) % 16 == 0;
}

void launch_fp8_gemm_wgmma(const Fp8GemmArgs& a, const Stream& s) {
  if (a.a_kind == Fp8Kind::e5m2) wgmma_gemm::launch_fp8<Fp8Kind::e5m2>(a, s);
  else wgmma_gemm::launch_fp8<Fp8Kind::e4m3>(a, s);
}

void launch_gemm_wgmma(const LinearGemmArgs& a, const Stream& s) {
  if (a.gemm.dtype == DType::bf16) wgmma_gemm::launch<__nv_bfloat16>(a, s);
  else wgmma_gemm::launch<__half>(a, s);
}

#if defined(HT_SIMT)
void launch_gemm_wgmma_first_design(const LinearGemmArgs& a, const Stream& s) {
  if (a.gemm.dtype == DType::bf16) wgmma_gemm::launch_first_design<__nv_bfloat16>(a, s);
  else wgmma_gemm::launch_first_design<__half>(a, s);
}
#endif

}  // namespace ht::gpu::inline HT_GPU_NS
