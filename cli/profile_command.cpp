// `halftape profile --gpu h200|h100|a100 [--json FILE] [train flags]`: a few training steps of
// the given model on the emulator's counting executor (simt/counters.h), one row per kernel of
// its exact counters and its MODELLED time on the named GPU (bench/gpu_model.h), then the step.
// Nothing here is measured on a GPU; docs/performance-model.md says what the model ignores.
#include "bench/gpu_model.h"
#include "bench/kernel_resources.h"
#include "cli/commands.h"
#include "cli/train_flags.h"
#include "comm/communicator.h"
#include "comm/mpi_world.h"
#include "data/dataset.h"
#include "engine/kernel_counters.h"
#include "ground/env.h"
#include "ground/error.h"
#include "train/trainer.h"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>

namespace ht::cli {

namespace {

struct ProfileFlags {
  TrainFlags train;
  std::string gpu = "h200", json;
};

constexpr std::int64_t kDefaultSteps = 2;   // counted steps, after one that is not
constexpr std::int64_t kWarmupSteps = 1;    // first-step work (weight casts, allocations) left out

// The emulator stands in for the GPU: its architecture (HALFTAPE_SIMT_ARCH) and its SM count
// (HALFTAPE_SIMT_SMS, which launchers size grid-stride and persistent grids by, so that the
// model's fill - blocks a launch / SMs - is the GPU's, not the emulator's worker threads'). Each
// is set here before the emulator first reads it, or checked against the GPU when the user set it.
void emulate(const char* variable, const std::string& value, const bench::GpuSpec& gpu, const std::string& shown) {
  if (const std::optional<std::string> set = env_value(variable)) {
    HT_CHECK(*set == value, "{}={} contradicts --gpu {} ({})", variable, *set, gpu.name, shown);
    return;
  }
  ::setenv(variable, value.c_str(), 1);
}

int run_profile(ProfileFlags& f, const MpiWorld* world) {
  HT_CHECK(!world || world->size() == 1, "profile runs on one rank (the model is of one GPU); run it without mpirun");
  HT_CHECK(f.train.device == "auto" || f.train.device == "simt",
           "--device {}: profile runs on the emulator's counting executor (leave --device out)", f.train.device);
  // train's flags that mean nothing to a profile of fresh steps: refused, not ignored
  HT_CHECK(!f.train.given.count("--resume"), "profile --resume: a profile counts the kernels of a few fresh steps from "
           "initialised weights (the counts do not depend on the weights); leave out --resume");
  HT_CHECK(!f.train.given.count("--save"), "profile --save: a profile saves no checkpoint; leave out --save");
  HT_CHECK(!f.train.given.count("--dry-run"), "profile --dry-run: a profile is one already (no checkpoint, no evaluation); "
           "leave out --dry-run");
  HT_CHECK(!f.train.given.count("--steps") || f.train.steps > 0, "profile --steps {}: at least 1 counted step", f.train.steps);
  HT_CHECK(!f.train.given.count("--json") || !f.json.empty(), "profile --json: give a file name");
  const bench::GpuSpec& gpu = bench::find_gpu(f.gpu);
  if (!f.json.empty()) write_json_file(f.json, "{\"incomplete\": \"halftape profile is still running or did not finish\"}\n");
  HT_CHECK(have_kernel_counters(), "profile: this build has no counting emulator (it needs the SIMT emulator and no sanitizer)");
  emulate("HALFTAPE_SIMT_ARCH", gpu.arch, gpu, gpu.arch);
  emulate("HALFTAPE_SIMT_SMS", std::to_string(gpu.sms), gpu, fmt::format("{} SMs", gpu.sms));

  // --steps as given; not the model's recipe's (2000 for the GPT: a training run, not a profile)
  const std::int64_t steps = f.train.given.count("--steps") && f.train.steps > 0 ? f.train.steps : kDefaultSteps;
  f.train.steps = steps + kWarmupSteps;
  f.train.device = "simt";
  TrainConfig config = to_config(f.train);
  config.device = DeviceChoice::simt_counted;
  std::unique_ptr<Backend> backend = make_backend(config.device, 0);
  std::unique_ptr<Communicator> comm = make_communicator(CommChoice::auto_, nullptr, *backend, 300);
  const DataSplit data = load_data(config.data, config.synthetic, config.vocab_size);
  Trainer trainer(config, *backend, *comm, data, nullptr);
  std::cout << fmt::format("halftape profile | MODELLED on {} from the emulator's counters | {} | {} | {} | {} counted steps\n",
                           gpu.name, backend->description(), precision_name(config.precision), trainer.model().describe(),
                           steps);

  for (std::int64_t s = 1; s <= kWarmupSteps; ++s) trainer.train_step(s);
  backend->synchronize();
  take_kernel_counters();
  for (std::int64_t s = kWarmupSteps + 1; s <= kWarmupSteps + steps; ++s) trainer.train_step(s);
  backend->synchronize();
  const std::vector<KernelCounters> kernels = take_kernel_counters();
  HT_CHECK(!kernels.empty(), "profile: no kernel was counted (internal error)");

  // The compiler's figures for each kernel's code on this GPU's architecture (the build's table):
  // registers and occupancy, which set a launch's waves.
  const bench::KernelResourceTable resources = bench::KernelResourceTable::load(HALFTAPE_KERNEL_RESOURCES);
  std::vector<std::optional<bench::KernelResources>> res_of;
  std::vector<std::optional<bench::Occupancy>> occ_of;
  for (const KernelCounters& k : kernels) {
    res_of.push_back(resources.find(gpu.arch, k.name));
    occ_of.push_back(res_of.back() ? std::optional(bench::occupancy(gpu, *res_of.back(), k.threads_per_block, k.dynamic_shared_bytes))
                                   : std::nullopt);
  }

  // Per step: every figure divided by the counted steps.
  const double per = 1.0 / static_cast<double>(steps);
  std::vector<bench::KernelEstimate> est;
  double step_us = 0;
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    est.push_back(bench::estimate(gpu, kernels[i], occ_of[i] ? occ_of[i]->blocks_per_sm : 0));
    step_us += est.back().us * per;
  }
  const double rows_per_s = static_cast<double>(trainer.rows_per_step()) / (step_us * 1e-6);
  const double model_flops = trainer.model().flops_per_row() * static_cast<double>(trainer.rows_per_step());
  const double mfu = model_flops / (step_us * 1e-6) / (gpu.tensor_tflops * 1e12);
  const std::string unit = config.model.kind == "gpt" ? "tokens" : "samples";

  if (resources.empty())
    std::cout << "(no kernel resource table in this build - it needs nvcc and cuobjdump: registers and occupancy show as -)\n";

  std::cout << fmt::format("{:<44} {:>6} {:>9} {:>9} {:>8} {:>6} {:>8} {:>9} {:>4} {:>5} {:>10} {:>8} {:>6}\n",
                           "kernel (per step)", "launch", "GFLOP", "DRAM MB", "sect/req", "sect%", "shm wf/r", "conflicts",
                           "regs", "occ%", "model us", "bound", "share");
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    const KernelCounters& k = kernels[i];
    const bench::KernelEstimate& e = est[i];
    const double launches = static_cast<double>(k.launches) * per, us = e.us * per;
    const double dram = static_cast<double>(k.dram_read_bytes + k.dram_write_bytes) * per;
    const double flops = static_cast<double>(k.tensor_flops) * per;
    const double conflicts = static_cast<double>(k.shared_bank_conflicts()) * per;
    const std::optional<bench::KernelResources>& res = res_of[i];
    const std::optional<bench::Occupancy>& occ = occ_of[i];
    std::cout << fmt::format("{:<44.44} {:>6.0f} {:>9.3f} {:>9.3f} {:>8.2f} {:>5.0f}% {:>8.2f} {:>9.0f} {:>4} {:>5} {:>10.1f} {:>8} {:>5.1f}%\n",
                             k.name, launches, flops * 1e-9, dram * 1e-6, k.sectors_per_request(),
                             100 * k.sector_efficiency(), k.shared_wavefronts_per_request(), conflicts,
                             res ? fmt::format("{}", res->registers) : "-", occ ? fmt::format("{:.0f}", 100 * occ->share) : "-",
                             us, e.bound, 100 * us / step_us);
    nlohmann::json compiled = nullptr;  // the compiler's figures, where the build has them
    if (res)
      compiled = {{"registers", res->registers}, {"stack_bytes", res->stack_bytes}, {"local_bytes", res->local_bytes},
                  {"spill_bytes", res->spill_bytes},
                  {"static_shared_bytes", res->static_shared_bytes}, {"occupancy", occ->share},
                  {"blocks_per_sm", occ->blocks_per_sm}, {"occupancy_limited_by", occ->limited_by}};
    rows.push_back({{"name", k.name}, {"launches", launches}, {"flops", flops}, {"dram_bytes", dram},
                    {"sectors_per_request", k.sectors_per_request()}, {"sector_efficiency", k.sector_efficiency()},
                    {"shared_wavefronts_per_request", k.shared_wavefronts_per_request()},
                    {"shared_bank_conflicts", conflicts}, {"blocks_per_launch", static_cast<double>(k.blocks) / static_cast<double>(k.launches)},
                    {"threads_per_block", k.threads_per_block}, {"dynamic_shared_bytes", k.dynamic_shared_bytes},
                    {"sm_fill", e.fill}, {"waves", e.waves}, {"wave_efficiency", e.wave_efficiency}, {"registers", res ? nlohmann::json(res->registers) : nlohmann::json(nullptr)},
                    {"occupancy", occ ? nlohmann::json(occ->share) : nlohmann::json(nullptr)},
                    {"spill_bytes", res ? nlohmann::json(res->spill_bytes) : nlohmann::json(nullptr)}, {"compiled", compiled},
                    {"modelled_us", us}, {"modelled_memory_us", e.memory_us * per}, {"modelled_tensor_us", e.tensor_us * per},
                    {"modelled_shared_us", e.shared_us * per}, {"modelled_launch_us", e.overhead_us * per},
                    {"bound", e.bound}, {"share", us / step_us}});
  }
  std::cout << fmt::format("step: {:.3f} ms MODELLED on {} | {:.0f} {}/s | MFU {:.1f}% (of {:.0f} TFLOP/s dense) | {} kernels\n",
                           step_us * 1e-3, gpu.name, rows_per_s, unit, 100 * mfu, gpu.tensor_tflops, kernels.size());
  if (!f.json.empty()) {
    const nlohmann::json out = {
        {"modelled", true},
        {"model", "roofline over the emulator's counters (bench/gpu_model.h, docs/performance-model.md)"},
        {"gpu", {{"name", gpu.name}, {"sms", gpu.sms}, {"clock_ghz", gpu.clock_ghz}, {"tensor_tflops", gpu.tensor_tflops},
                 {"hbm_tb_s", gpu.hbm_tb_s}, {"launch_us_assumed", gpu.launch_us}, {"source", gpu.source}}},
        {"emulated_arch", gpu.arch}, {"precision", precision_name(config.precision)},
        {"model_description", trainer.model().describe()}, {"counted_steps", steps},
        {"kernel_resources", resources.empty() ? "none in this build (it needs nvcc and cuobjdump)"
                                               : "the compiler's, read from the built libraries (scripts/kernel_resources.py); "
                                                 "occupancy theoretical, by the CUDA occupancy rules"},
        {"modelled_step_ms", step_us * 1e-3}, {unit + "_per_s", rows_per_s}, {"mfu", mfu}, {"kernels", rows}};
    write_json_file(f.json, out.dump(2) + "\n");
  }
  HT_CHECK(std::cout.flush().good(), "writing the table to standard output failed");
  return 0;
}

}  // namespace

Command add_profile_command(CLI::App& app) {
  auto flags = std::make_shared<ProfileFlags>();
  CLI::App* p = app.add_subcommand(
      "profile", "Count every kernel's memory traffic on the emulator and MODEL its time on a GPU (no GPU needed)");
  add_train_flags(p, flags->train);
  p->add_option("--gpu", flags->gpu, "the GPU to model: h200 | h100 | a100")->check(CLI::IsMember({"h200", "h100", "a100"}));
  p->add_option("--json", flags->json, "write the table as JSON to FILE");
  return {[p] { return option_settings(*p, {}); }, [flags](const MpiWorld* world) { return run_profile(*flags, world); }};
}

}  // namespace ht::cli
