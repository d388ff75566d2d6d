// Small kernels that exercise the SIMT emulator's features one at a time, and kernels with
// deliberate bugs the emulator must catch. Built for the emulator only (tests/test_emulator.cpp).
#include "kernels/gpu.h"
#include "kernels/reduce.cuh"
#include "tests/emulator_kernels.h"

namespace ht::gpu::inline HT_GPU_NS {

namespace {

// out: (32 * 6) per warp lane: shfl broadcast, shfl width 8, up, down, xor, ballot of odd lanes.
__global__ void warp_ops_kernel(int* out) {
  const int lane = threadIdx.x % 32;
  int* o = out + (threadIdx.x / 32) * 32 * 6;
  o[0 * 32 + lane] = __shfl_sync(0xffffffffu, lane * 10, 3);
  o[1 * 32 + lane] = __shfl_sync(0xffffffffu, lane * 10, 5, 8);
  o[2 * 32 + lane] = __shfl_up_sync(0xffffffffu, lane, 2, 16);
  o[3 * 32 + lane] = __shfl_down_sync(0xffffffffu, lane, 3);
  o[4 * 32 + lane] = __shfl_xor_sync(0xffffffffu, lane, 5);
  o[5 * 32 + lane] = static_cast<int>(__ballot_sync(0xffffffffu, lane & 1));
}

// out: (4) count, and, or of (tid % 3 == 0), and the block sum of tid.
__global__ void block_ops_kernel(int* out) {
  const int p = threadIdx.x % 3 == 0;
  const int count = __syncthreads_count(p), all = __syncthreads_and(p), any = __syncthreads_or(p);
  const float sum = block_sum<128>(static_cast<float>(threadIdx.x));
  if (threadIdx.x == 0) {
    out[0] = count;
    out[1] = all;
    out[2] = any;
    out[3] = static_cast<int>(sum);
  }
}

// Reverses each block's slice through static and dynamic shared memory; 2-D blocks (16 × 4).
__global__ void reverse_kernel(const float* in, float* out) {
  __shared__ float staged[64];
  HT_DYNAMIC_SHARED(float, dynamic);
  const int t = threadIdx.y * blockDim.x + threadIdx.x;
  const int base = blockIdx.x * 64;
  staged[t] = in[base + t];
  __syncthreads();
  dynamic[t] = staged[63 - t];
  __syncthreads();
  out[base + t] = dynamic[t];
}

// Bug: threads past n return before the barrier the others wait at.
__global__ void early_return_kernel(float* data, int n) {
  if (static_cast<int>(threadIdx.x) >= n) return;
  data[threadIdx.x] += 1.0f;
  __syncthreads();
  data[threadIdx.x] *= 2.0f;
}

// Bug: half the warp shuffles with a full mask, the other half has exited.
__global__ void shuffle_exited_lane_kernel(int* out) {
  if (threadIdx.x >= 16) return;
  out[threadIdx.x] = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x), 0);
}

// Bug: lanes wait in a shuffle while the rest of the block waits at __syncthreads.
__global__ void deadlock_kernel(int* out) {
  if (threadIdx.x % 32 < 16) out[threadIdx.x] = __shfl_sync(0xffffffffu, 1, 0);
  __syncthreads();
}

// Bug: a shared-memory reduction without the barrier between the stores and the loads.
__global__ void missing_barrier_sum_kernel(const float* in, float* out) {
  __shared__ float values[64];
  values[threadIdx.x] = in[threadIdx.x];
  // (the __syncthreads() that belongs here is missing)
  if (threadIdx.x == 0) {
    float s = 0;
    for (int i = 0; i < 64; ++i) s += values[i];
    *out = s;
  }
}

// out: (1): the last float of `bytes` of dynamic shared memory, written and read back (by the
// first block only: the others writing it too would race, as the racecheck says).
__global__ void dynamic_shared_kernel(float* out, unsigned bytes) {
  HT_DYNAMIC_SHARED(float, smem);
  const unsigned last = bytes / sizeof(float) - 1;
  if (threadIdx.x == 0) smem[last] = 42.0f;
  __syncthreads();
  if (threadIdx.x == 0 && blockIdx.x + blockIdx.y + blockIdx.z == 0) *out = smem[last];
}

}  // namespace

void run_dynamic_shared(float* out, std::size_t bytes, bool opt_in) {
  if (opt_in) allow_dynamic_shared(dynamic_shared_kernel, bytes);
  HT_LAUNCH(dynamic_shared_kernel, (LaunchConfig{1, 32, bytes}), Stream{}, out, static_cast<unsigned>(bytes));
}
void run_shaped(float* out, dim3 grid, dim3 block) { HT_LAUNCH(dynamic_shared_kernel, (LaunchConfig{grid, block, 64}), Stream{}, out, 64u); }

void run_warp_ops(int* out, int warps) { HT_LAUNCH(warp_ops_kernel, (LaunchConfig{1, static_cast<unsigned>(32 * warps)}), Stream{}, out); }
void run_block_ops(int* out) { HT_LAUNCH(block_ops_kernel, (LaunchConfig{1, 128}), Stream{}, out); }
void run_reverse(const float* in, float* out, int blocks) {
  HT_LAUNCH(reverse_kernel, (LaunchConfig{static_cast<unsigned>(blocks), dim3(16, 4), 64 * sizeof(float)}), Stream{}, in, out);
}
void run_early_return(float* data, int n) { HT_LAUNCH(early_return_kernel, (LaunchConfig{1, 64}), Stream{}, data, n); }
void run_shuffle_exited_lane(int* out) { HT_LAUNCH(shuffle_exited_lane_kernel, (LaunchConfig{1, 32}), Stream{}, out); }
void run_deadlock(int* out) { HT_LAUNCH(deadlock_kernel, (LaunchConfig{1, 64}), Stream{}, out); }
void run_missing_barrier_sum(const float* in, float* out) {
  HT_LAUNCH(missing_barrier_sum_kernel, (LaunchConfig{1, 64}), Stream{}, in, out);
}

}  // namespace ht::gpu::inline HT_GPU_NS
