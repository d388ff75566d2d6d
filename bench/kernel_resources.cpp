// The build's kernel resource table and the CUDA occupancy rules (bench/kernel_resources.h).
#include "bench/kernel_resources.h"

#include "ground/error.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>

namespace ht::bench {

namespace {

// The same on sm_80 and sm_90 (the CUDA programming guide's compute-capability table).
constexpr int kRegistersPerSm = 65536;
constexpr int kRegisterUnit = 256;  // registers are allocated per warp in units of 256
constexpr int kMaxWarpsPerSm = 64;
constexpr int kMaxBlocksPerSm = 32;
constexpr int kReservedSharedPerBlock = 1024;  // the system's share of every block

}  // namespace

KernelResourceTable KernelResourceTable::load(const std::string& path) {
  KernelResourceTable table;
  if (path.empty()) return table;
  std::ifstream in(path);
  if (!in) return table;
  try {
    const nlohmann::json doc = nlohmann::json::parse(in);
    for (const nlohmann::json& k : doc.at("kernels")) {
      const KernelResources r{.registers = k.at("registers").get<int>(),
                              .stack_bytes = k.at("stack").get<int>(),
                              .local_bytes = k.at("local").get<int>(),
                              .spill_bytes = k.at("spill_bytes").get<int>(),
                              .static_shared_bytes = k.at("static_shared").get<int>(),
                              .launch_bound_threads = k.at("threads").is_null() ? 0 : k.at("threads").get<int>()};
      table.kernels_[{k.at("arch").get<std::string>(), k.at("kernel").get<std::string>()}] = r;
    }
  } catch (const nlohmann::json::exception& e) {
    fail(fmt::format("{}: not the build's kernel resource table ({})", path, e.what()));
  }
  return table;
}

std::optional<KernelResources> KernelResourceTable::find(const std::string& arch, const std::string& name) const {
  if (auto it = kernels_.find({arch, name}); it != kernels_.end()) return it->second;
  if (auto it = kernels_.find({arch + "a", name}); it != kernels_.end()) return it->second;  // sm_90 -> sm_90a
  return std::nullopt;
}

Occupancy occupancy(const GpuSpec& gpu, const KernelResources& k, std::uint64_t threads, std::uint64_t dynamic_shared) {
  const int warps = static_cast<int>(std::max<std::uint64_t>(1, (threads + 31) / 32));
  const int per_warp = (std::max(1, k.registers) * 32 + kRegisterUnit - 1) / kRegisterUnit * kRegisterUnit;
  const std::uint64_t shared = static_cast<std::uint64_t>(k.static_shared_bytes) + dynamic_shared + kReservedSharedPerBlock;
  const std::pair<int, const char*> limits[] = {
      {kRegistersPerSm / per_warp / warps, "registers"},
      {static_cast<int>(static_cast<std::uint64_t>(gpu.shared_per_sm_kib) * 1024 / shared), "shared"},
      {kMaxWarpsPerSm / warps, "warps"},
      {kMaxBlocksPerSm, "blocks"}};
  const auto* least = std::min_element(std::begin(limits), std::end(limits),
                                       [](const auto& a, const auto& b) { return a.first < b.first; });
  return {.blocks_per_sm = least->first,
          .share = static_cast<double>(least->first * warps) / kMaxWarpsPerSm,
          .limited_by = least->second};
}

}  // namespace ht::bench
