// A model of kernel time on a named GPU, from the emulator's exact counters (engine/
// kernel_counters.h), the GPU's published peaks and a few latency constants, each with its
// source (known_constants). Every figure it gives is MODELLED, never measured;
// docs/performance-model.md says what it ignores and where it is optimistic.
//
// A launch runs in a steady state, paced by the slowest of
//   memory:  its DRAM bytes (distinct sectors read and written) at the sustained HBM bandwidth;
//   l2:      every sector its loads, stores and TMA copies move, at the L2's bandwidth;
//   latency: the bytes it loads, at what the bytes it keeps in flight per SM deliver by Little's
//            law (in flight / DRAM latency): lanes' load runs × resident warps, cp.async groups
//            and TMA stages ahead of the consumer × resident blocks - capped above by HBM
//            through the memory term; a kernel with too little in flight is latency-bound;
//   compute: its wgmma FLOPs at the dense FP16/BF16 (or FP8) peak, mma.sync's at its share of it,
//            plus the tensor pipe's idle time at each wgmma.wait_group that leaves nothing in
//            flight (a drain), the warpgroups of a block draining together, plus its expf calls
//            at the special-function units' rate (the same warps' work, taken as not overlapped:
//            FlashAttention-2's softmax beside its products); named "tensor" or "sfu" by the larger;
//   shared:  its shared-memory wavefronts at one a clock per SM;
// each over the SMs its grid fills (a grid of fewer blocks than SMs gets that share), and
// tensor and shared also over its waves: with b blocks an SM resident (the compiler's
// occupancy), a launch of n >= SMs·b blocks runs in ceil(n / (SMs·b)) waves and the last, part
// empty, wave idles its share of the SMs (NVIDIA's "wave quantization"). Each wave also starts
// with one DRAM latency nothing overlaps (its first loads), and each launch costs a fixed launch
// overhead. The longest steady term names the bound ("launch" where the overhead is the larger
// part).
#pragma once

#include "engine/kernel_counters.h"

#include <string>
#include <string_view>
#include <vector>

namespace ht::bench {

struct GpuSpec {
  const char* name;
  const char* arch;          // the emulator's sm_80 / sm_90 for it
  int sms;
  double clock_ghz;          // boost
  double tensor_tflops;      // dense FP16/BF16 with FP32 accumulation (wgmma on Hopper)
  double fp8_tensor_tflops;  // dense FP8 (0: no FP8 tensor cores)
  double fp32_tflops;        // CUDA cores (not modelled yet: the counters count no CUDA-core FLOPs)
  double hbm_tb_s;
  int shared_per_sm_kib;     // shared memory an SM can give its blocks (the largest carve-out)
  const char* source;        // where the peaks come from
  // the latency model's constants (known_constants says where each comes from)
  double launch_us;            // a launch's fixed overhead
  double dram_latency_ns;      // a load's round trip to DRAM
  double dram_efficiency;      // the share of hbm_tb_s a streaming kernel sustains
  double l2_tb_s;              // the L2's bandwidth to the SMs
  double mma_sync_share;       // the share of tensor_tflops mma.sync reaches (1: it is the tensor path)
  double wgmma_drain_cycles;   // the tensor pipe's idle time at a wgmma.wait_group that empties it
  double sfu_per_sm_clock;     // special-function results (expf) an SM gives a clock
};
const std::vector<GpuSpec>& known_gpus();
const GpuSpec& find_gpu(std::string_view name);  // throws naming the known ones

// One constant of the model, its value on each GPU, and where it comes from: "published" (a
// datasheet or paper, cited), "fitted" (to published measurements, named) or "assumed" (why).
struct ModelConstant {
  const char* name;
  const char* unit;
  const char* kind;  // published | fitted | assumed
  const char* source;
};
const std::vector<ModelConstant>& known_constants();
double constant_value(const GpuSpec& gpu, std::string_view name);

struct KernelEstimate {
  double memory_us = 0, l2_us = 0, latency_us = 0, tensor_us = 0, drain_us = 0, sfu_us = 0, shared_us = 0;
  double wave_latency_us = 0, overhead_us = 0;
  double fill = 1;       // share of the SMs its grids fill (launch-weighted)
  double waves = 1;      // waves of a launch, at blocks_per_sm resident blocks an SM
  double wave_efficiency = 1;  // blocks / (waves · SMs · blocks_per_sm): the tensor and shared terms' share
  double resident_warps = 0;   // per SM, at the occupancy and the grid
  double bytes_in_flight_per_sm = 0;  // what its loads, cp.async and TMA keep in flight (Little's law)
  double us = 0;         // modelled time of all its launches
  std::string bound;     // memory | l2 | latency | tensor | sfu | shared | launch
};
// blocks_per_sm: the kernel's theoretical occupancy in blocks (0: unknown, taken as 1).
KernelEstimate estimate(const GpuSpec& gpu, const KernelCounters& k, int blocks_per_sm = 0);

}  // namespace ht::bench
