// `halftape profile --gpu h200|h100|a100 [--json FILE] [train flags]`: a few training steps of
// the given model on the emulator's counting executor (simt/counters.h), one row per kernel of
// its exact counters and its MODELLED time on the named GPU (bench/gpu_model.h), then the step.
// Nothing is measured on a GPU unless --measure asks (profile_measure.cpp: the same step on this
// machine's GPU, every launch timed); docs/performance-model.md says what the model ignores.
#include "cli/commands.h"
#include "cli/profile.h"
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
#include <set>

namespace ht::cli {

namespace {

struct ProfileFlags {
  TrainFlags train;
  std::string gpu = "h200", json;
  KernelProfileFlags kernel;  // --kernel: one kernel, not a training step
  std::set<std::string> given_kernel_flags;  // --kernel's own flags on the command line
};

constexpr std::int64_t kDefaultSteps = 2;   // counted steps, after one that is not
constexpr std::int64_t kWarmupSteps = 1;    // first-step work (weight casts, allocations) left out

// The measured step beside the model: a row a kernel, in the model's order, then any kernel the
// GPU ran that the emulator did not count. `profile` is the modelled profile's JSON.
void print_measured(const nlohmann::json& profile, const MeasuredStep& m) {
  std::cout << fmt::format("MEASURED on this GPU ({}), CUDA events around each launch of an eager step, beside MODELLED:\n",
                           m.device);
  std::cout << fmt::format("{:<44} {:>8} {:>12} {:>12} {:>10}\n", "kernel", "launches", "MODELLED us", "MEASURED us",
                           "meas/model");
  std::set<std::string> shown;
  for (const nlohmann::json& row : profile.at("kernels")) {
    const std::string name = row.value("name", "?");
    const double model_us = row.value("modelled_us", 0.0);
    const MeasuredKernel* g = nullptr;
    for (const MeasuredKernel& x : m.kernels) g = x.name == name ? &x : g;
    std::cout << fmt::format("{:<44.44} {:>8.0f} {:>12.1f} {:>12} {:>10}\n", name, row.value("launches", 0.0), model_us,
                             g ? fmt::format("{:.1f}", g->us) : "-", g ? fmt::format("{:.2f}", g->us / model_us) : "-");
    shown.insert(name);
  }
  for (const MeasuredKernel& g : m.kernels)
    if (!shown.count(g.name))
      std::cout << fmt::format("{:<44.44} {:>8.0f} {:>12} {:>12.1f} {:>10}\n", g.name, g.launches, "-", g.us, "-");
  const double step_us = 1e3 * profile.value("modelled_step_ms", 0.0);
  std::cout << fmt::format("step: kernels MEASURED {:.3f} ms (whole step {:.3f} ms) | MODELLED {:.3f} ms | measured / "
                           "modelled = {:.2f}\n", m.kernels_us * 1e-3, m.wall_us * 1e-3, step_us * 1e-3, m.kernels_us / step_us);
}

void add_measured_json(nlohmann::json& out, const MeasuredStep& m) {
  for (nlohmann::json& row : out["kernels"]) {
    row["measured_us"] = nullptr;
    for (const MeasuredKernel& g : m.kernels)
      if (g.name == row["name"]) row["measured_us"] = g.us, row["measured_launches"] = g.launches;
  }
  nlohmann::json unmodelled = nlohmann::json::array();
  for (const MeasuredKernel& g : m.kernels) {
    bool modelled = false;
    for (const nlohmann::json& row : out["kernels"]) modelled = modelled || row["name"] == g.name;
    if (!modelled) unmodelled.push_back({{"name", g.name}, {"launches", g.launches}, {"measured_us", g.us}});
  }
  out["measured"] = {{"on", m.device}, {"sms", m.sms},
                     {"how", "CUDA events around each launch of an eager step (engine/gpu/launch_timer.h), per step; "
                             "the whole step again without them"},
                     {"kernels_ms", m.kernels_us * 1e-3}, {"step_ms", m.wall_us * 1e-3}, {"kernels_not_modelled", unmodelled}};
}

// The step counted on the emulator and MODELLED: the table printed, its JSON returned.
nlohmann::json count_and_model_step(TrainConfig config, const DataSplit& data, std::int64_t steps, const bench::GpuSpec& gpu) {
  emulate_gpu(gpu);

  config.device = DeviceChoice::simt_counted;
  std::unique_ptr<Backend> backend = make_backend(config.device, 0);
  std::unique_ptr<Communicator> comm = make_communicator(CommChoice::auto_, nullptr, *backend, 300);
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
  // registers and occupancy, which set a launch's waves and resident warps.
  const bench::KernelResourceTable resources = bench::KernelResourceTable::load(HALFTAPE_KERNEL_RESOURCES);
  const std::vector<ModelledKernel> modelled = model_kernels(gpu, kernels, resources);
  // Per step: every figure divided by the counted steps.
  const double per = 1.0 / static_cast<double>(steps);
  double step_us = 0;
  for (const ModelledKernel& m : modelled) step_us += m.estimate.us * per;
  const double rows_per_s = static_cast<double>(trainer.rows_per_step()) / (step_us * 1e-6);
  const double model_flops = trainer.model().flops_per_row() * static_cast<double>(trainer.rows_per_step());
  const double mfu = model_flops / (step_us * 1e-6) / (gpu.tensor_tflops * 1e12);
  const std::string unit = config.model.kind == "gpt" ? "tokens" : "samples";

  if (resources.empty())
    std::cout << "(no kernel resource table in this build - it needs nvcc and cuobjdump: registers and occupancy show as -)\n";

  print_kernel_header();
  nlohmann::json rows = nlohmann::json::array();
  for (const ModelledKernel& m : modelled) {
    print_kernel_row(m, per, step_us);
    rows.push_back(kernel_json(m, per, step_us));
  }
  std::cout << fmt::format("step: {:.3f} ms MODELLED on {} | {:.0f} {}/s | MFU {:.1f}% (of {:.0f} TFLOP/s dense) | {} kernels\n",
                           step_us * 1e-3, gpu.name, rows_per_s, unit, 100 * mfu, gpu.tensor_tflops, kernels.size());
  return {
      {"modelled", true},
      {"model", "throughput and latency over the emulator's counters (bench/gpu_model.h, docs/performance-model.md)"},
      {"gpu", gpu_json(gpu)},
      {"emulated_arch", gpu.arch}, {"precision", precision_name(config.precision)},
      {"model_description", trainer.model().describe()}, {"counted_steps", steps},
      {"kernel_resources", resources.empty() ? "none in this build (it needs nvcc and cuobjdump)"
                                             : "the compiler's, read from the built libraries (scripts/kernel_resources.py); "
                                               "occupancy theoretical, by the CUDA occupancy rules"},
      {"modelled_step_ms", step_us * 1e-3}, {unit + "_per_s", rows_per_s}, {"mfu", mfu}, {"kernels", rows}};
}

int run_profile(ProfileFlags& f, const MpiWorld* world) {
  HT_CHECK(!world || world->size() == 1, "profile runs on one rank (the model is of one GPU); run it without mpirun");
  if (!f.kernel.kernel.empty()) {
    const std::set<std::string> own = {"--gpu", "--json", "--kernel", "--shape", "--gemm-design", "--unaligned",
                                       "--sample-blocks", "--precision", "--measure", "--modelled"};
    for (const std::string& flag : f.train.given)  // a training step's flags mean nothing to one kernel: refused
      HT_CHECK(own.count(flag) > 0, "profile --kernel: {} is a flag of a training step's profile (--kernel takes "
               "--shape, --precision, --gemm-design, --unaligned, --sample-blocks, --measure, --modelled, --json)", flag);
    f.kernel.precision = f.train.given.count("--precision") ? f.train.precision : "";
    f.kernel.json = f.json;
    return run_kernel_profile(f.kernel, bench::find_gpu(f.gpu));
  }
  for (const char* flag : {"--shape", "--gemm-design", "--unaligned", "--sample-blocks"})
    HT_CHECK(f.given_kernel_flags.count(flag) == 0, "profile {}: only with --kernel", flag);
  const bool measure = f.kernel.measure;
  HT_CHECK(!measure || !f.train.config.cuda_graph, "profile --measure --cuda-graph: the launches are timed one by one, eagerly; "
           "leave out --cuda-graph");
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
  HT_CHECK(f.kernel.modelled.empty() || measure, "profile --modelled: it is --measure's (the MODELLED profile to "
           "measure beside); add --measure, or leave out --modelled");
  const bench::GpuSpec& gpu = bench::find_gpu(f.gpu);
  // --modelled: the MODELLED figures of an earlier `profile --json` of this step, not counted here
  std::optional<nlohmann::json> earlier;
  if (!f.kernel.modelled.empty()) earlier = read_modelled_json(f.kernel.modelled, gpu);
  if (!f.json.empty()) write_json_file(f.json, "{\"incomplete\": \"halftape profile is still running or did not finish\"}\n");
  HT_CHECK(!measure || cuda_available(), "profile --measure: no GPU here (or a build without CUDA): the measured times "
           "need one; leave out --measure for the MODELLED figures alone");
  HT_CHECK(earlier || have_kernel_counters(), "profile: this build has no counting emulator (it needs the SIMT emulator and "
           "no sanitizer); --measure --modelled FILE measures beside a profile modelled elsewhere");

  // --steps as given; not the model's recipe's (2000 for the GPT: a training run, not a profile)
  const std::int64_t steps = f.train.given.count("--steps") && f.train.steps > 0 ? f.train.steps : kDefaultSteps;
  f.train.steps = steps + kWarmupSteps;
  f.train.device = "simt";
  const TrainConfig config = to_config(f.train);
  const DataSplit data = load_data(config.data, config.synthetic, config.vocab_size);
  nlohmann::json out;
  if (earlier) {
    out = *earlier;
    std::cout << fmt::format("halftape profile | MODELLED on {} by an earlier profile ({}): {} | {} | {} ms a step\n",
                             gpu.name, f.kernel.modelled, out.value("precision", "?"), out.value("model_description", "?"),
                             out.value("modelled_step_ms", 0.0));
  } else {
    out = count_and_model_step(config, data, steps, gpu);
  }
  // --measure: the same step on this machine's GPU, each launch timed, beside the model
  if (measure) {
    const MeasuredStep measured = measure_step(config, data, kWarmupSteps, steps, gpu, out);
    print_measured(out, measured);
    add_measured_json(out, measured);
  }
  if (!f.json.empty()) write_json_file(f.json, out.dump(2) + "\n");
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
  p->add_option("--kernel", flags->kernel.kernel, "model one kernel instead of a training step: gemm | attention | copy")
      ->check(CLI::IsMember({"gemm", "attention", "copy"}));
  p->add_option("--shape", flags->kernel.shape, "--kernel's shape: gemm M,N,K; attention batch,seq,heads,head_dim; copy elements");
  p->add_option("--gemm-design", flags->kernel.gemm_design,
                "--kernel gemm: pipelined (today's wgmma GEMM) | first (its first design, for comparison; Hopper only)")
      ->check(CLI::IsMember({"pipelined", "first"}));
  p->add_flag("--unaligned", flags->kernel.unaligned, "--kernel copy: tensors one element off their 16-byte packs (scalar accesses)");
  p->add_flag("--measure", flags->kernel.measure,
              "also run the step (or --kernel's kernel) on this machine's GPU and print each kernel's measured time "
              "(CUDA events) beside the model");
  p->add_option("--modelled", flags->kernel.modelled,
                "with --measure: measure beside this earlier profile's JSON (same flags) instead of counting here - "
                "for a GPU build without the emulator");
  p->add_option("--sample-blocks", flags->kernel.sample_blocks,
                "--kernel: blocks counted a launch, the figures scaled to the grid (default: gemm 2, others 8)");
  return {[p] { return option_settings(*p, {}); }, [p, flags](const MpiWorld* world) {
            for (const char* flag : {"--shape", "--gemm-design", "--unaligned", "--sample-blocks", "--measure"})
              if (p->count(flag) > 0) flags->given_kernel_flags.insert(flag);
            return run_profile(*flags, world);
          }};
}

}  // namespace ht::cli
