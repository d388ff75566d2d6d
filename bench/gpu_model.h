// A roofline model of kernel time on a named GPU, from the emulator's exact counters
// (engine/kernel_counters.h) and the GPU's published peaks. Every figure it gives is MODELLED,
// never measured; docs/performance-model.md says what it ignores and where it is optimistic.
//
// A kernel's launch takes the longest of
//   memory: its DRAM bytes (distinct sectors read and written) at the HBM bandwidth;
//   tensor: its mma/wgmma FLOPs at the dense FP16/BF16 tensor peak (FP8 ones at the FP8 peak);
//   shared: its shared-memory wavefronts at one a clock per SM;
// each over the SMs its grid fills (a grid of fewer blocks than SMs gets that share of the
// machine), and tensor and shared also over its waves: with b blocks an SM resident (the
// compiler's occupancy), a launch of n >= SMs·b blocks runs in ceil(n / (SMs·b)) waves and the
// last, part empty, wave idles its share of the SMs (NVIDIA's "wave quantization": efficiency
// n / (waves·SMs·b)); plus a fixed launch overhead. The longest term names the bound ("latency"
// when the overhead is the larger part).
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
  double tensor_tflops;      // dense FP16/BF16 with FP32 accumulation
  double fp8_tensor_tflops;  // dense FP8 (0: no FP8 tensor cores)
  double fp32_tflops;        // CUDA cores (not modelled yet: the counters count no CUDA-core FLOPs)
  double hbm_tb_s;
  double launch_us;          // assumed per launch (a typical eager-launch gap), not a datasheet figure
  int shared_per_sm_kib;     // shared memory an SM can give its blocks (the largest carve-out)
  const char* source;        // where the peaks come from
};
const std::vector<GpuSpec>& known_gpus();
const GpuSpec& find_gpu(std::string_view name);  // throws naming the known ones

struct KernelEstimate {
  double memory_us = 0, tensor_us = 0, shared_us = 0, overhead_us = 0;
  double fill = 1;       // share of the SMs its grids fill (launch-weighted)
  double waves = 1;      // waves of a launch, at blocks_per_sm resident blocks an SM
  double wave_efficiency = 1;  // blocks / (waves · SMs · blocks_per_sm): the tensor and shared terms' share
  double us = 0;         // modelled time of all its launches
  std::string bound;     // memory | tensor | shared | latency
};
// blocks_per_sm: the kernel's theoretical occupancy in blocks (0: unknown, taken as 1).
KernelEstimate estimate(const GpuSpec& gpu, const KernelCounters& k, int blocks_per_sm = 0);

}  // namespace ht::bench
