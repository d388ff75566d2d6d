// The pieces cli/profile.h declares: the emulated GPU, and each kernel's modelled row.
#include "cli/profile.h"

#include "ground/env.h"
#include "ground/error.h"

#include <fmt/core.h>

#include <fstream>

#include <cstdlib>
#include <iostream>

namespace ht::cli {

namespace {
void emulate(const char* variable, const std::string& value, const bench::GpuSpec& gpu, const std::string& shown) {
  if (const std::optional<std::string> set = env_value(variable)) {
    HT_CHECK(*set == value, "{}={} contradicts --gpu {} ({})", variable, *set, gpu.name, shown);
    return;
  }
  ::setenv(variable, value.c_str(), 1);
}
}  // namespace

void emulate_gpu(const bench::GpuSpec& gpu) {
  emulate("HALFTAPE_SIMT_ARCH", gpu.arch, gpu, gpu.arch);
  emulate("HALFTAPE_SIMT_SMS", std::to_string(gpu.sms), gpu, fmt::format("{} SMs", gpu.sms));
}

std::vector<ModelledKernel> model_kernels(const bench::GpuSpec& gpu, const std::vector<KernelCounters>& kernels,
                                          const bench::KernelResourceTable& resources) {
  std::vector<ModelledKernel> out;
  for (const KernelCounters& k : kernels) {
    ModelledKernel m{.counters = k, .resources = resources.find(gpu.arch, k.name), .occupancy = std::nullopt, .estimate = {}};
    if (m.resources) m.occupancy = bench::occupancy(gpu, *m.resources, k.threads_per_block, k.dynamic_shared_bytes);
    m.estimate = bench::estimate(gpu, k, m.occupancy ? m.occupancy->blocks_per_sm : 0);
    out.push_back(std::move(m));
  }
  return out;
}

void print_kernel_header() {
  std::cout << fmt::format("{:<44} {:>6} {:>9} {:>9} {:>8} {:>6} {:>8} {:>9} {:>4} {:>5} {:>8} {:>10} {:>8} {:>6}\n",
                           "kernel", "launch", "GFLOP", "DRAM MB", "sect/req", "sect%", "shm wf/r", "conflicts", "regs",
                           "occ%", "KB fly/SM", "model us", "bound", "share");
}

void print_kernel_row(const ModelledKernel& m, double per, double total_us) {
  const KernelCounters& k = m.counters;
  const bench::KernelEstimate& e = m.estimate;
  const double us = e.us * per;
  std::cout << fmt::format(
      "{:<44.44} {:>6.0f} {:>9.3f} {:>9.3f} {:>8.2f} {:>5.0f}% {:>8.2f} {:>9.0f} {:>4} {:>5} {:>8.1f} {:>10.1f} {:>8} {:>5.1f}%\n",
      k.name, static_cast<double>(k.launches) * per, static_cast<double>(k.tensor_flops) * per * 1e-9,
      static_cast<double>(k.dram_read_bytes + k.dram_write_bytes) * per * 1e-6, k.sectors_per_request(),
      100 * k.sector_efficiency(), k.shared_wavefronts_per_request(), static_cast<double>(k.shared_bank_conflicts()) * per,
      m.resources ? fmt::format("{}", m.resources->registers) : "-",
      m.occupancy ? fmt::format("{:.0f}", 100 * m.occupancy->share) : "-", e.bytes_in_flight_per_sm / 1024, us, e.bound,
      100 * us / total_us);
}

nlohmann::json kernel_json(const ModelledKernel& m, double per, double total_us) {
  const KernelCounters& k = m.counters;
  const bench::KernelEstimate& e = m.estimate;
  const std::optional<bench::KernelResources>& res = m.resources;
  const std::optional<bench::Occupancy>& occ = m.occupancy;
  const double us = e.us * per;
  nlohmann::json compiled = nullptr;  // the compiler's figures, where the build has them
  if (res)
    compiled = {{"registers", res->registers}, {"stack_bytes", res->stack_bytes}, {"local_bytes", res->local_bytes},
                {"spill_bytes", res->spill_bytes}, {"static_shared_bytes", res->static_shared_bytes},
                {"occupancy", occ->share}, {"blocks_per_sm", occ->blocks_per_sm}, {"occupancy_limited_by", occ->limited_by}};
  const auto null_or = [](bool have, auto v) { return have ? nlohmann::json(v) : nlohmann::json(nullptr); };
  return {{"name", k.name}, {"launches", static_cast<double>(k.launches) * per},
          {"flops", static_cast<double>(k.tensor_flops) * per},
          {"dram_bytes", static_cast<double>(k.dram_read_bytes + k.dram_write_bytes) * per},
          {"sectors_per_request", k.sectors_per_request()}, {"sector_efficiency", k.sector_efficiency()},
          {"shared_wavefronts_per_request", k.shared_wavefronts_per_request()},
          {"shared_bank_conflicts", static_cast<double>(k.shared_bank_conflicts()) * per},
          {"blocks_per_launch", static_cast<double>(k.blocks) / static_cast<double>(std::max<std::uint64_t>(1, k.launches))},
          {"threads_per_block", k.threads_per_block}, {"dynamic_shared_bytes", k.dynamic_shared_bytes},
          {"sampled_blocks", k.sampled_blocks},
          {"sm_fill", e.fill}, {"waves", e.waves}, {"wave_efficiency", e.wave_efficiency},
          {"resident_warps_per_sm", e.resident_warps}, {"bytes_in_flight_per_sm", e.bytes_in_flight_per_sm},
          {"wgmma_waits", static_cast<double>(k.wgmma_waits) * per}, {"wgmma_drains", static_cast<double>(k.wgmma_drains) * per},
          {"registers", null_or(res.has_value(), res ? res->registers : 0)},
          {"occupancy", null_or(occ.has_value(), occ ? occ->share : 0.0)},
          {"spill_bytes", null_or(res.has_value(), res ? res->spill_bytes : 0)}, {"compiled", compiled},
          {"modelled_us", us}, {"modelled_memory_us", e.memory_us * per}, {"modelled_l2_us", e.l2_us * per},
          {"modelled_latency_us", e.latency_us * per}, {"modelled_tensor_us", e.tensor_us * per},
          {"modelled_drain_us", e.drain_us * per}, {"modelled_sfu_us", e.sfu_us * per}, {"modelled_shared_us", e.shared_us * per},
          {"modelled_wave_latency_us", e.wave_latency_us * per}, {"modelled_launch_us", e.overhead_us * per},
          {"bound", e.bound}, {"share", us / total_us}};
}

nlohmann::json gpu_json(const bench::GpuSpec& gpu) {
  nlohmann::json constants = nlohmann::json::array();
  for (const bench::ModelConstant& c : bench::known_constants())
    constants.push_back({{"name", c.name}, {"value", bench::constant_value(gpu, c.name)}, {"unit", c.unit},
                         {"kind", c.kind}, {"source", c.source}});
  return {{"name", gpu.name}, {"sms", gpu.sms}, {"clock_ghz", gpu.clock_ghz}, {"tensor_tflops", gpu.tensor_tflops},
          {"fp8_tensor_tflops", gpu.fp8_tensor_tflops}, {"hbm_tb_s", gpu.hbm_tb_s}, {"source", gpu.source},
          {"constants", constants}};
}

nlohmann::json read_modelled_json(const std::string& path, const bench::GpuSpec& gpu) {
  std::ifstream in(path, std::ios::binary);
  HT_CHECK(in.good(), "profile --modelled {}: cannot read it", path);
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  HT_CHECK(!j.is_discarded() && j.is_object(), "profile --modelled {}: not JSON (write it with profile --json)", path);
  HT_CHECK(!j.contains("incomplete"), "profile --modelled {}: the profile that wrote it did not finish", path);
  HT_CHECK(j.value("modelled", false) && j.contains("kernels") && j["kernels"].is_array(),
           "profile --modelled {}: not a profile's JSON (no MODELLED kernels)", path);
  const std::string modelled_gpu = j.contains("gpu") && j["gpu"].is_object() ? j["gpu"].value("name", "?") : "?";
  HT_CHECK(modelled_gpu == gpu.name, "profile --modelled {}: it models the {}, not the {} (--gpu)", path, modelled_gpu, gpu.name);
  return j;
}

}  // namespace ht::cli
