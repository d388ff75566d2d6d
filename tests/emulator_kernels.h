// Launchers of tests/emulator_kernels.cu (SIMT emulator only).
#pragma once

#include <vector_types.h>

#include <cstddef>

namespace ht::gpu::simt_impl {
void run_warp_ops(int* out, int warps);        // out: (warps * 6 * 32)
void run_block_ops(int* out);                  // out: (4)
void run_reverse(const float* in, float* out, int blocks);  // (blocks * 64)
void run_early_return(float* data, int n);     // data: (64)
void run_shuffle_exited_lane(int* out);        // out: (32)
void run_deadlock(int* out);                   // out: (64)
void run_missing_barrier_sum(const float* in, float* out);  // in: (64), out: (1)
// `bytes` of dynamic shared memory, after cudaFuncSetAttribute's opt-in when `opt_in`; out: (1).
void run_dynamic_shared(float* out, std::size_t bytes, bool opt_in);
void run_shaped(float* out, dim3 grid, dim3 block);  // any grid and block; out: (1)
}  // namespace ht::gpu::simt_impl
