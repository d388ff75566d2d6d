// What `halftape profile`'s two forms share - a training step's kernels (profile_command.cpp)
// and one kernel at a time (profile_kernel.cpp): the emulator set up as the GPU, each counted
// kernel joined with the compiler's figures and modelled, and its table row and JSON.
#pragma once

#include "bench/gpu_model.h"
#include "bench/kernel_resources.h"
#include "engine/kernel_counters.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace ht::cli {

struct ModelledKernel {
  KernelCounters counters;
  std::optional<bench::KernelResources> resources;  // the build's table (nvcc and cuobjdump), if it has it
  std::optional<bench::Occupancy> occupancy;
  bench::KernelEstimate estimate;
};

// The emulator stands in for the GPU: its architecture (HALFTAPE_SIMT_ARCH) and its SM count
// (HALFTAPE_SIMT_SMS), set before the emulator first reads them, or checked against the GPU.
void emulate_gpu(const bench::GpuSpec& gpu);

// Each kernel's counters, compiler figures and MODELLED estimate; `resources` is empty when the
// build has no table.
std::vector<ModelledKernel> model_kernels(const bench::GpuSpec& gpu, const std::vector<KernelCounters>& kernels,
                                          const bench::KernelResourceTable& resources);

// The table: a header and a row a kernel (its figures times `per`, its share of `total_us`).
void print_kernel_header();
void print_kernel_row(const ModelledKernel& m, double per, double total_us);
nlohmann::json kernel_json(const ModelledKernel& m, double per, double total_us);
nlohmann::json gpu_json(const bench::GpuSpec& gpu);  // the peaks and the latency constants, with sources
// An earlier profile's JSON (`--modelled FILE`: measured here beside figures modelled where the
// emulator ran), checked to be a finished, MODELLED profile of `gpu`.
nlohmann::json read_modelled_json(const std::string& path, const bench::GpuSpec& gpu);

}  // namespace ht::cli

namespace ht::cli {

// `halftape profile --kernel gemm|attention|copy --shape ...`: one kernel on the counting
// emulator, modelled (profile_kernel.cpp).
struct KernelProfileFlags {
  std::string kernel;          // gemm | attention | copy
  std::string shape;           // gemm: M,N,K; attention: batch,seq,heads,head_dim; copy: elements
  std::string precision;       // fp16 | bf16 (copy: fp32 too)
  std::string gemm_design = "pipelined";  // pipelined | first (the first wgmma design, for comparison)
  bool unaligned = false;      // copy: pointers one element off their 16-byte packs (the scalar path)
  std::int64_t sample_blocks = 0;  // blocks counted a launch (0: the kernel's default)
  bool measure = false;        // also time it on this machine's GPU (CUDA events)
  std::string modelled;        // --measure beside this earlier profile's JSON instead of counting here
  std::string json;
};
int run_kernel_profile(const KernelProfileFlags& f, const bench::GpuSpec& gpu);

}  // namespace ht::cli

namespace ht {
struct TrainConfig;
struct DataSplit;
class Backend;
}  // namespace ht

namespace ht::cli {

// `profile --measure`: the GPU's own times beside the model's (profile_measure.cpp). Per step,
// each kernel under the name the emulator counts it by, in order of first launch.
struct MeasuredKernel {
  std::string name;
  double launches = 0, us = 0;
};
struct MeasuredStep {
  std::string device;  // the GPU, as its backend describes it
  int sms = 0;
  std::vector<MeasuredKernel> kernels;
  double kernels_us = 0;  // the launches' times summed
  double wall_us = 0;     // a whole step: CUDA events around the steps, none between their launches
};
// The GPU measured must be of the architecture modelled (its kernels are the emulator's then);
// another SM count is printed, not refused (an H100 PCIe has 114 SMs, the model's H100 132).
void check_measured_gpu(const Backend& backend, const bench::GpuSpec& gpu);
// The profiled step eagerly on this machine's GPU: `warmup` steps, then `steps` with every
// launch bracketed by CUDA events (engine/gpu/launch_timer.h), then `steps` timed whole. The
// model and precision must be those of `modelled` (the profile's JSON) - a profile made
// elsewhere with other flags is refused.
MeasuredStep measure_step(TrainConfig config, const DataSplit& data, std::int64_t warmup, std::int64_t steps,
                          const bench::GpuSpec& gpu, const nlohmann::json& modelled);

}  // namespace ht::cli
