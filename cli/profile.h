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
  std::string json;
};
int run_kernel_profile(const KernelProfileFlags& f, const bench::GpuSpec& gpu);

}  // namespace ht::cli
