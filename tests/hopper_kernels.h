// Launchers of tests/hopper_kernels.cu (SIMT emulator only, with HALFTAPE_SIMT_ARCH=sm_90).
#pragma once

#include <cstdint>

namespace ht::gpu::simt_impl {

// What a test kernel does wrong on purpose; each is one misuse the emulator must report.
enum class HopperFault {
  none,
  no_wait_group,        // reads its accumulators without wgmma.wait_group
  write_accumulator,    // writes an accumulator while its wgmma is in flight
  write_operand,        // writes shared memory an in-flight wgmma reads
  write_tma_dest,       // writes shared memory an in-flight TMA copy writes
  tma_into_operand,     // issues a TMA copy into shared memory an in-flight wgmma reads
  misaligned_tma,       // a swizzled TMA destination off the pattern's boundary
  three_warps,          // one warp of the warpgroup leaves before the wgmma
  tx_too_few,           // arrive.expect_tx arms fewer bytes than the copies carry
  tx_too_many,          // ... more: the phase never completes
  no_fence,             // wgmma without wgmma.fence
  bad_setmaxnreg,       // setmaxnreg with a count that is not a multiple of 8
};

// One warpgroup: TMA brings A (64 × K, K-major) and B (N × K) into shared memory with the
// given swizzle (0, 32, 64 or 128 bytes; K = the swizzle row, or 16 without one), an mbarrier
// says when, and wgmma m64nNk16 (N = 64 or 128) multiplies them, K / 16 steps, into
// out (64 × N, row-major, FP32). a_rows / k_cols smaller than 64 / K leave part of the box
// outside the tensor, which TMA fills with zeros (or NaN). Elements are fp16 or bf16 bits.
struct HopperTileArgs {
  bool bf16 = false;
  unsigned swizzle = 128;
  int n = 64;
  int a_rows = 64;  // rows of A that exist (<= 64)
  int k = 64;       // columns of A and B that exist (<= the box's K, a multiple of 8)
  bool nan_fill = false;  // TMA fills what lies outside the tensor with NaN instead of zeros
  HopperFault fault = HopperFault::none;
};
// The box's K for a swizzle: the elements of one swizzle row, or 16 without a swizzle.
int hopper_tile_k(unsigned swizzle);
void run_hopper_tile(const HopperTileArgs& args, const std::uint16_t* a, const std::uint16_t* b, float* out);

}  // namespace ht::gpu::simt_impl
