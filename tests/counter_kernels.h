// Launchers of tests/counter_kernels.cu: access patterns whose counts are known (the emulator's
// counting executor only; tests/test_counters.cpp). Each allocates its own device buffers.
#pragma once

namespace ht::gpu::simt_counted_impl {
enum class Pattern {
  coalesced_float,   // lane i reads and writes float i: 4 sectors a request
  coalesced_float4,  // lane i reads float4 i: 16 sectors a request
  strided_float,     // lane i reads float 32 i: 32 sectors a request
  broadcast_float,   // every lane reads float 0: 1 sector, 4 bytes asked
  transpose_unpadded,  // a 32 x 32 shared tile read down its columns: 32-way conflicts
  transpose_padded,    // the same tile, rows padded to 33 floats: conflict-free
  shared_float2_rows,  // lane i reads float2 i of a shared row: 2 phases, conflict-free
  ldmatrix_x4_swizzled,    // ldmatrix.x4 on 8 x 64 half rows with the GEMM's XOR swizzle: conflict-free
  ldmatrix_x4_unswizzled,  // the same rows unswizzled (128-byte stride): 8-way conflicts
};
void run_pattern(Pattern p);
}  // namespace ht::gpu::simt_counted_impl
