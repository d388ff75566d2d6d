// The memory account of train/memory_account.h: the formula and how it is shown.
#include "train/memory_account.h"

#include <fmt/format.h>

namespace ht {

StateFormula state_formula(Precision precision, const OptimizerConfig& optimizer) {
  StateFormula f;
  f.working = precision == Precision::fp32 ? 0 : 2;
  if (optimizer.kind == OptimizerKind::adamw) f.optimizer = 8;
  else if (optimizer.sgd.momentum != 0) f.optimizer = 4;
  return f;
}

namespace {
std::string mib(std::size_t bytes) { return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20)); }
}  // namespace

std::string MemoryAccount::describe() const {
  std::string line = fmt::format(
      "memory, this rank: {} peak = data {} + weights {} (master {}, working copy {}) + gradients {} + optimizer {} + allocator "
      "rounding {} + other {}",
      mib(peak()), mib(data), mib(master + working), mib(master), mib(working), mib(gradients), mib(optimizer), mib(rounding),
      mib(other));
  if (measured_step)
    line += fmt::format(" + activations kept for backward {} + workspace {} | allocator cache {}", mib(activations),
                        mib(workspace), mib(cache));
  return line + fmt::format(" | {:.1f} bytes a parameter of state ({} parameters{})",
                            parameters ? static_cast<double>(state()) / static_cast<double>(parameters) : 0.0, parameters,
                            numel && numel != parameters
                                ? fmt::format(" in the arena: the model's {} and each tensor's padding to 128 elements", numel)
                                : "");
}

nlohmann::json MemoryAccount::to_json() const {
  nlohmann::json j = {{"parameters", parameters}, {"data_bytes", data},       {"master_bytes", master},
                      {"working_bytes", working}, {"gradient_bytes", gradients}, {"optimizer_bytes", optimizer},
                      {"rounding_bytes", rounding}, {"other_bytes", other}, {"persistent_bytes", persistent()}};
  if (measured_step) {
    j["activation_bytes"] = activations;
    j["workspace_bytes"] = workspace;
    j["cache_bytes"] = cache;
    j["peak_bytes"] = peak();
  }
  return j;
}

}  // namespace ht
