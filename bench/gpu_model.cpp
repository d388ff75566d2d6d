// The model of bench/gpu_model.h.
#include "bench/gpu_model.h"

#include "ground/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ht::bench {

const std::vector<GpuSpec>& known_gpus() {
  // Peaks: NVIDIA's datasheets (SXM parts; tensor peaks without sparsity); shared memory an SM:
  // the CUDA programming guide's compute-capability table (8.0: 164 KB, 9.0: 228 KB). The latency
  // constants (the last six): known_constants() says where each comes from.
  static const std::vector<GpuSpec> gpus = {
      {"h200", "sm_90", 132, 1.98, 989.4, 1978.9, 66.9, 4.8, 228,
       "NVIDIA H200 datasheet (SXM): 989 TFLOP/s dense FP16/BF16, 1979 FP8, 4.8 TB/s HBM3e",
       2.0, 400 / 1.755, 0.896, 8.986, 0.65, 128, 16},
      {"h100", "sm_90", 132, 1.98, 989.4, 1978.9, 66.9, 3.35, 228,
       "NVIDIA H100 datasheet (SXM5): 989 TFLOP/s dense FP16/BF16, 1979 FP8, 3.35 TB/s HBM3",
       2.0, 400 / 1.755, 0.896, 8.986, 0.65, 128, 16},
      {"a100", "sm_80", 108, 1.41, 312.0, 0.0, 19.5, 2.039, 164,
       "NVIDIA A100 datasheet (SXM4 80GB): 312 TFLOP/s dense FP16/BF16, no FP8, 2.0 TB/s HBM2e",
       2.0, 400 / 1.41, 0.896, 7.219, 1.0, 0, 16},
  };
  return gpus;
}

const std::vector<ModelConstant>& known_constants() {
  static const std::vector<ModelConstant> constants = {
      {"launch_us", "us", "assumed",
       "a typical gap between eager launches on one stream; no published figure is used. scripts/gpu-check.sh times "
       "back-to-back launches, which refit it"},
      {"dram_latency_ns", "ns", "published",
       "400 cycles to global memory on V100, A100 and H100 (at 1410 / 1755 MHz): Table 3 of 'Hardware features of "
       "different Nvidia GPU architectures', PMC10448217; microbenchmarks of Hopper measure the same order "
       "(arXiv 2402.13499, 2501.12084: global-memory latency in the 400-500 cycle range)"},
      {"dram_efficiency", "share of HBM peak", "fitted",
       "device-to-device copies measured at about 3.0 TB/s on an H100 (3.35 peak) and 4.3 TB/s on an H200 (4.8): "
       "0.896 of the peak (the A100 is taken alike). The copy rows of the published-figure table are held against "
       "the same figures, so they test the bytes a kernel keeps in flight, not this constant"},
      {"l2_tb_s", "TB/s", "published",
       "L2 bandwidth 8,986 GB/s (H100) and 7,219 GB/s (A100), Table 3 of PMC10448217 (the full GH100/GA100 at "
       "1755/1410 MHz; the H200 is the same die)"},
      {"mma_sync_share", "share of tensor peak", "assumed",
       "Hopper's legacy mma.sync cannot reach the wgmma peak (arXiv 2402.13499 and 2501.12084 both measure it "
       "well below wgmma); 0.65 is this project's assumption until gpu-check measures it. 1 on the A100, where "
       "mma.sync is the tensor path"},
      {"wgmma_drain_cycles", "cycles", "assumed",
       "the tensor pipe's idle time after a wgmma.wait_group 0 until the warpgroup's next batch issues: of the order "
       "of one wgmma's latency (2501.12084 measures wgmma latency by shape); assumed, refit from gpu-check"},
      {"sfu_per_sm_clock", "results a clock per SM", "published",
       "16 base-2 exponentials (MUFU.EX2) a clock per SM on compute capability 8.0 and 9.0: the CUDA C++ "
       "Programming Guide's arithmetic-instruction throughput table; FlashAttention-3 (arXiv 2407.08608) counts the "
       "H100 SXM5's 3.9 TFLOP/s of special functions against its 989 of matmul the same way"},
  };
  return constants;
}

double constant_value(const GpuSpec& gpu, std::string_view name) {
  if (name == "launch_us") return gpu.launch_us;
  if (name == "dram_latency_ns") return gpu.dram_latency_ns;
  if (name == "dram_efficiency") return gpu.dram_efficiency;
  if (name == "l2_tb_s") return gpu.l2_tb_s;
  if (name == "mma_sync_share") return gpu.mma_sync_share;
  if (name == "wgmma_drain_cycles") return gpu.wgmma_drain_cycles;
  if (name == "sfu_per_sm_clock") return gpu.sfu_per_sm_clock;
  fail(fmt::format("the model has no constant named {}", name));
}

const GpuSpec& find_gpu(std::string_view name) {
  for (const GpuSpec& g : known_gpus())
    if (name == g.name) return g;
  fail(fmt::format("--gpu {}: the model knows h200, h100 and a100", name));
}

namespace {
double ratio(std::uint64_t a, std::uint64_t b) { return b ? static_cast<double>(a) / static_cast<double>(b) : 0.0; }
}  // namespace

KernelEstimate estimate(const GpuSpec& gpu, const KernelCounters& k, int blocks_per_sm) {
  KernelEstimate e;
  const double launches = static_cast<double>(std::max<std::uint64_t>(1, k.launches));
  const double blocks_per_launch = std::max(1.0, static_cast<double>(k.blocks) / launches);
  e.fill = std::min(1.0, blocks_per_launch / gpu.sms);
  const double sms_used = gpu.sms * e.fill;
  const double per_wave = static_cast<double>(gpu.sms) * std::max(1, blocks_per_sm);
  e.waves = std::ceil(blocks_per_launch / per_wave);
  // Less than a wave: the SMs it reaches, as if a block alone could use its SM's throughput (the
  // optimistic end); a wave or more: the last wave's empty slots idle (NVIDIA's wave quantization).
  e.wave_efficiency = e.waves <= 1 ? e.fill : blocks_per_launch / (e.waves * per_wave);

  // Bytes in flight per SM: the blocks resident on it (its occupancy, or fewer where the grid is
  // small) times what each keeps in flight.
  const double resident_blocks = std::min<double>(std::max(1, blocks_per_sm), std::ceil(blocks_per_launch / gpu.sms));
  const double warps_per_block = std::ceil(static_cast<double>(std::max<std::uint64_t>(1, k.threads_per_block)) / 32.0);
  e.resident_warps = resident_blocks * warps_per_block;
  const double lane_bytes = std::max(ratio(k.load_run_bytes, k.load_runs), ratio(k.async_wait_bytes, k.async_waits));
  const double block_bytes = warps_per_block * 32.0 * lane_bytes + ratio(k.tma_wait_bytes, k.tma_waits);
  e.bytes_in_flight_per_sm = resident_blocks * block_bytes;

  const double dram = static_cast<double>(k.dram_read_bytes + k.dram_write_bytes);
  const double loaded = 32.0 * static_cast<double>(k.global_load.sectors + k.global_atomic.sectors);
  const double moved = 32.0 * static_cast<double>(k.global_sectors());
  e.memory_us = dram / (gpu.hbm_tb_s * 1e12 * gpu.dram_efficiency * e.fill) * 1e6;
  e.l2_us = moved / (gpu.l2_tb_s * 1e12 * e.fill) * 1e6;
  const double latency_s = gpu.dram_latency_ns * 1e-9;
  if (loaded > 0 && e.bytes_in_flight_per_sm > 0)  // Little's law: in flight / latency, per SM
    e.latency_us = loaded / (sms_used * e.bytes_in_flight_per_sm / latency_s) * 1e6;
  // every wave starts with a trip to DRAM that nothing overlaps
  if (loaded > 0) e.wave_latency_us = launches * e.waves * gpu.dram_latency_ns * 1e-3;

  const double fp8 = static_cast<double>(k.tensor_fp8_flops), wgmma = static_cast<double>(k.tensor_wgmma_flops);
  const double mma_sync = static_cast<double>(k.tensor_flops) - wgmma;
  HT_CHECK(fp8 == 0 || gpu.fp8_tensor_tflops > 0, "the model of the {} has no FP8 tensor cores, but the kernel {} ran FP8 wgmma",
           gpu.name, k.name);
  const double tensor_s = (wgmma - fp8) / gpu.tensor_tflops + (fp8 > 0 ? fp8 / gpu.fp8_tensor_tflops : 0.0) +
                          mma_sync / (gpu.tensor_tflops * gpu.mma_sync_share);
  e.tensor_us = tensor_s / (1e12 * e.wave_efficiency) * 1e6;
  // Drains: the warpgroups of a block wait on the same stages, so they drain together; an SM
  // runs its blocks' drains one after another, its resident blocks' side by side.
  const double warpgroups_per_block = std::max(1.0, ratio(k.wgmma_warpgroups, k.blocks));
  const double drains = static_cast<double>(k.wgmma_drains) / warpgroups_per_block;
  e.drain_us = drains * gpu.wgmma_drain_cycles / (gpu.clock_ghz * 1e3) / (sms_used * resident_blocks);
  e.sfu_us = static_cast<double>(k.special_functions) / (gpu.sms * e.wave_efficiency * gpu.sfu_per_sm_clock * gpu.clock_ghz * 1e9) * 1e6;
  e.shared_us = static_cast<double>(k.shared_wavefronts()) / (gpu.sms * e.wave_efficiency * gpu.clock_ghz * 1e9) * 1e6;
  e.overhead_us = launches * gpu.launch_us;

  const double compute = e.tensor_us + e.drain_us + e.sfu_us;
  const double steady = std::max({e.memory_us, e.l2_us, e.latency_us, compute, e.shared_us});
  const double work = steady + e.wave_latency_us;
  e.us = work + e.overhead_us;
  if (e.overhead_us >= work) e.bound = "launch";
  else if (steady == e.memory_us) e.bound = "memory";
  else if (steady == e.l2_us) e.bound = "l2";
  else if (steady == e.latency_us) e.bound = "latency";
  else if (steady == compute) e.bound = e.sfu_us > e.tensor_us + e.drain_us ? "sfu" : "tensor";
  else e.bound = "shared";
  return e;
}

}  // namespace ht::bench
