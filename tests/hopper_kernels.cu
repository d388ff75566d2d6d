// A small Hopper kernel - TMA into shared memory, an mbarrier, wgmma from there - for each
// swizzle mode, and the same kernel with one misuse planted at a time (HopperFault), which the
// emulator must report. Built for the emulator only (tests/test_hopper.cpp); it calls the
// emulator's instructions directly where kernels/ptx_sm90.cuh offers only the GEMM's shape.
#include "kernels/gpu.h"
#include "kernels/ptx_sm90.cuh"
#include "tests/hopper_kernels.h"

namespace ht::gpu::inline HT_GPU_NS {

int hopper_tile_k(unsigned swizzle) { return swizzle ? static_cast<int>(swizzle / 2) : 16; }

namespace {

constexpr unsigned kAOffset = 0, kBOffset = 8192, kBarOffset = 8192 + 16384, kSharedBytes = kBarOffset + 8;

// A K-major operand of `rows` rows with rows of `row_bytes` (the swizzle span), or, without a
// swizzle, core matrices of 8 rows × 16 bytes with the two K halves `k_half_bytes` apart.
std::uint64_t descriptor(std::uint32_t start, unsigned swizzle, std::uint32_t k_half_bytes) {
  std::uint64_t layout = 0, lbo = 16, sbo = 128;
  switch (swizzle) {
    case 128: layout = 1, sbo = 1024; break;
    case 64: layout = 2, sbo = 512; break;
    case 32: layout = 3, sbo = 256; break;
    default: lbo = k_half_bytes;
  }
  return (start >> 4) | (lbo >> 4) << 16 | (sbo >> 4) << 32 | layout << 62;
}

// a/b in global memory through map_a/map_b; out: (64, N) fp32, row-major.
template <int N>
__global__ void hopper_tile_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                                   HopperTileArgs args, float* out) {
  HT_DYNAMIC_SHARED(unsigned char, smem);
  auto* bar = reinterpret_cast<std::uint64_t*>(smem + kBarOffset);
  const unsigned t = threadIdx.x;
  const HopperFault fault = args.fault;
  const int kbox = hopper_tile_k(args.swizzle);
  const unsigned bytes = static_cast<unsigned>((64 + N) * kbox * 2);
  if (t == 0) {
    sm90::mbar_init(bar, 1);
    sm90::fence_mbar_init();
  }
  __syncthreads();
  if (fault == HopperFault::bad_setmaxnreg) sm90::setmaxnreg<true, 236>();
  else sm90::setmaxnreg<true, 232>();
  if (t == 0) {
    const unsigned armed = fault == HopperFault::tx_too_few ? bytes - 16 : (fault == HopperFault::tx_too_many ? bytes + 16 : bytes);
    sm90::mbar_expect_tx(bar, armed);
    const unsigned a_dst = kAOffset + (fault == HopperFault::misaligned_tma ? 128 : 0);
    if (args.swizzle) {
      sm90::tma_load_2d(smem + a_dst, &map_a, bar, 0, 0);
      sm90::tma_load_2d(smem + kBOffset, &map_b, bar, 0, 0);
    } else {  // two boxes of 8 elements: the K halves of the core matrices
      sm90::tma_load_2d(smem + a_dst, &map_a, bar, 0, 0);
      sm90::tma_load_2d(smem + a_dst + 64 * 16, &map_a, bar, 8, 0);
      sm90::tma_load_2d(smem + kBOffset, &map_b, bar, 0, 0);
      sm90::tma_load_2d(smem + kBOffset + N * 16, &map_b, bar, 8, 0);
    }
  }
  if (fault == HopperFault::write_tma_dest) {
    __syncthreads();  // after the copies were issued
    if (t == 1) smem[kAOffset + 5] = 0x7f;
  }
  sm90::mbar_wait(bar, 0);

  float d[N / 2];
  for (float& v : d) v = 0.0f;
  if (fault == HopperFault::three_warps && t >= 96) return;
  if (fault != HopperFault::no_fence) sm90::wgmma_fence();
  for (int j = 0; j < kbox / 16; ++j)
    ht::emu::wgmma_mma_async(args.bf16, N, d, descriptor(sm90::smem(smem + kAOffset) + 32 * j, args.swizzle, 64 * 16),
                             descriptor(sm90::smem(smem + kBOffset) + 32 * j, args.swizzle, N * 16), 1, 1, 1, 0, 0);
  sm90::wgmma_commit();
  if (fault == HopperFault::write_accumulator) d[3] = 1.0f;
  if (fault == HopperFault::write_operand && t == 0) smem[kAOffset] ^= 1;
  if (fault == HopperFault::tma_into_operand && t == 0) {  // A again, into the tile the wgmma reads
    sm90::mbar_expect_tx(bar, static_cast<unsigned>(64 * kbox * 2));
    sm90::tma_load_2d(smem + kAOffset, &map_a, bar, 0, 0);
  }
  if (fault != HopperFault::no_wait_group) sm90::wgmma_wait<0>();
  if (fault == HopperFault::tma_into_operand) sm90::mbar_wait(bar, 1);
  // The m64nN accumulator: warp w holds rows 16w + lane/4 (+ 8), register pair 2c (+ 1) of
  // 8-column chunk j holds columns 8j + 2(lane % 4) (+ 1).
  const unsigned warp = t / 32, lane = t % 32;
  for (int i = 0; i < N / 2; ++i) {
    const unsigned row = 16 * warp + lane / 4 + 8 * ((i % 4) / 2), col = 8 * (i / 4) + 2 * (lane % 4) + i % 2;
    out[row * N + col] = d[i];
  }
}

CUtensorMap tile_map(const std::uint16_t* base, int rows, int box_rows, const HopperTileArgs& a) {
  CUtensorMap map{};
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(a.k), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(a.k) * 2};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(a.swizzle ? hopper_tile_k(a.swizzle) : 8), static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUtensorMapSwizzle swizzle = a.swizzle == 128 ? CU_TENSOR_MAP_SWIZZLE_128B
                                     : a.swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                                     : a.swizzle == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                                                       : CU_TENSOR_MAP_SWIZZLE_NONE;
  const CUresult r = sm90::encode_tensor_map(&map, a.bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2,
                                             const_cast<std::uint16_t*>(base), dims, strides, box, element_strides,
                                             CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                             a.nan_fill ? CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
                                                        : CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) ht::call_failed("cuTensorMapEncodeTiled", "refused", __FILE__, __LINE__);
  return map;
}

}  // namespace

void run_hopper_tile(const HopperTileArgs& args, const std::uint16_t* a, const std::uint16_t* b, float* out) {
  const CUtensorMap map_a = tile_map(a, args.a_rows, 64, args), map_b = tile_map(b, args.n, args.n, args);
  const LaunchConfig cfg{1, 128, kSharedBytes};
  if (args.n == 128) HT_LAUNCH(hopper_tile_kernel<128>, cfg, Stream{}, map_a, map_b, args, out);
  else if (args.n == 64) HT_LAUNCH(hopper_tile_kernel<64>, cfg, Stream{}, map_a, map_b, args, out);
  else ht::call_failed("run_hopper_tile", "N is 64 or 128", __FILE__, __LINE__);
}

}  // namespace ht::gpu::inline HT_GPU_NS
