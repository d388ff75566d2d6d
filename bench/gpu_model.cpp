// The roofline of bench/gpu_model.h.
#include "bench/gpu_model.h"

#include "ground/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ht::bench {

const std::vector<GpuSpec>& known_gpus() {
  // NVIDIA's datasheets (SXM parts; tensor peaks without sparsity); shared memory an SM: the CUDA
  // programming guide's compute-capability table (8.0: 164 KB, 9.0: 228 KB).
  static const std::vector<GpuSpec> gpus = {
      {"h200", "sm_90", 132, 1.98, 989.4, 1978.9, 66.9, 4.8, 2.0, 228,
       "NVIDIA H200 datasheet (SXM): 989 TFLOP/s dense FP16/BF16, 1979 FP8, 4.8 TB/s HBM3e"},
      {"h100", "sm_90", 132, 1.98, 989.4, 1978.9, 66.9, 3.35, 2.0, 228,
       "NVIDIA H100 datasheet (SXM5): 989 TFLOP/s dense FP16/BF16, 1979 FP8, 3.35 TB/s HBM3"},
      {"a100", "sm_80", 108, 1.41, 312.0, 0.0, 19.5, 2.039, 2.0, 164,
       "NVIDIA A100 datasheet (SXM4 80GB): 312 TFLOP/s dense FP16/BF16, no FP8, 2.0 TB/s HBM2e"},
  };
  return gpus;
}

const GpuSpec& find_gpu(std::string_view name) {
  for (const GpuSpec& g : known_gpus())
    if (name == g.name) return g;
  fail(fmt::format("--gpu {}: the model knows h200, h100 and a100", name));
}

KernelEstimate estimate(const GpuSpec& gpu, const KernelCounters& k, int blocks_per_sm) {
  KernelEstimate e;
  const double launches = static_cast<double>(std::max<std::uint64_t>(1, k.launches));
  const double blocks_per_launch = std::max(1.0, static_cast<double>(k.blocks) / launches);
  e.fill = std::min(1.0, blocks_per_launch / gpu.sms);
  const double per_wave = static_cast<double>(gpu.sms) * std::max(1, blocks_per_sm);
  e.waves = std::ceil(blocks_per_launch / per_wave);
  // Less than a wave: the SMs it reaches, as if a block alone could use its SM's throughput (the
  // optimistic end); a wave or more: the last wave's empty slots idle (NVIDIA's wave quantization).
  e.wave_efficiency = e.waves <= 1 ? e.fill : blocks_per_launch / (e.waves * per_wave);
  const double dram = static_cast<double>(k.dram_read_bytes + k.dram_write_bytes);
  e.memory_us = dram / (gpu.hbm_tb_s * 1e12 * e.fill) * 1e6;
  const double fp8 = static_cast<double>(k.tensor_fp8_flops), other = static_cast<double>(k.tensor_flops) - fp8;
  HT_CHECK(fp8 == 0 || gpu.fp8_tensor_tflops > 0, "the model of the {} has no FP8 tensor cores, but the kernel {} ran FP8 wgmma",
           gpu.name, k.name);
  e.tensor_us = (other / gpu.tensor_tflops + (fp8 > 0 ? fp8 / gpu.fp8_tensor_tflops : 0.0)) / (1e12 * e.wave_efficiency) * 1e6;
  e.shared_us = static_cast<double>(k.shared_wavefronts()) / (gpu.sms * e.wave_efficiency * gpu.clock_ghz * 1e9) * 1e6;
  e.overhead_us = launches * gpu.launch_us;
  const double work = std::max({e.memory_us, e.tensor_us, e.shared_us});
  e.us = work + e.overhead_us;
  if (e.overhead_us >= work) e.bound = "latency";
  else if (work == e.memory_us) e.bound = "memory";
  else if (work == e.tensor_us) e.bound = "tensor";
  else e.bound = "shared";
  return e;
}

}  // namespace ht::bench
